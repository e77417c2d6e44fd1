/*
 * The checks of `agmm model`'s machine options (options.h): --hosts and
 * --ranks-per-host against --ranks, the transport's default and what each
 * transport needs, and the GEMM rates (--gemm-rates' syntax, or
 * --gemm-gflops). Each refusal is one line, "agmm: --option: ...".
 */
#include "options.h"

#include <inttypes.h>
#include <string.h>

/* ------------------------------------------------------------ rates */

static int rates_refused(FILE *err, const char *why, const char *arg)
{
    fprintf(err,
            "agmm: --gemm-rates: ROWS:GFLOPS[,ROWS:GFLOPS...], rows >= 1 "
            "increasing, GFLOPS > 0, at most %d pairs; %s (got '%s')\n",
            AGMM_MODEL_MAX_RATES, why, arg);
    return -1;
}

int opt_parse_rates(FILE *err, const char *arg, agmm_model_rate_t *out,
                    int *n_out)
{
    int n = 0;
    const char *p = arg;
    if (!*arg) return rates_refused(err, "empty", arg);
    for (;;) {
        size_t len = strcspn(p, ",");
        char pair[64];
        if (len == 0) return rates_refused(err, "an empty pair", arg);
        if (len >= sizeof pair)
            return rates_refused(err, "a pair too long", arg);
        if (n >= AGMM_MODEL_MAX_RATES)
            return rates_refused(err, "too many pairs", arg);
        memcpy(pair, p, len);
        pair[len] = '\0';
        char *colon = strchr(pair, ':');
        if (!colon) return rates_refused(err, "a pair without ':'", arg);
        *colon = '\0';
        int64_t rows = 0;
        double gf = 0;
        if (opt_parse_i64(pair, 1, INT64_MAX, &rows) != NUM_OK)
            return rates_refused(err, "rows must be an integer >= 1", arg);
        if (opt_parse_double(colon + 1, 0, 1e9, &gf) != NUM_OK)
            return rates_refused(err, "GFLOPS must be a number > 0 and <= 1e9",
                                 arg);
        if (n > 0 && rows <= out[n - 1].rows)
            return rates_refused(err, "rows not increasing", arg);
        out[n].rows = rows;
        out[n].gflops = gf;
        n++;
        if (!p[len]) break;
        p += len + 1;
    }
    *n_out = n;
    return 0;
}

/* ------------------------------------------------------------ machine */

/* --ranks from --hosts x --ranks-per-host, or the one not given from
 * --ranks: 0 or 2 after one error line. */
static int resolve_hosts(agmm_cli_t *cli, FILE *err)
{
    int ranks_given = cli->ranks_set || cli->m_local_count > 1;
    int H = cli->hosts_set ? cli->hosts : 0;
    int R = cli->ranks_per_host_set ? cli->ranks_per_host : 0;
    if (!ranks_given && (H || R)) { /* the machine names the ranks */
        if (!H) H = 1;
        if (!R) R = 1;
        int64_t hr = (int64_t)H * R;
        if (hr > AGMM_CLI_MAX_RANKS) {
            fprintf(err,
                    "agmm: --hosts/--ranks-per-host: %d x %d = %" PRId64
                    " ranks; at most %d\n",
                    H, R, hr, AGMM_CLI_MAX_RANKS);
            return 2;
        }
        cli->ranks = (int)hr;
    } else if (H && R) {
        if ((int64_t)H * R != cli->ranks) {
            fprintf(err,
                    "agmm: --hosts/--ranks-per-host: %d x %d = %" PRId64
                    " ranks but --ranks is %d (H x R must equal --ranks)\n",
                    H, R, (int64_t)H * R, cli->ranks);
            return 2;
        }
    } else if (H) {
        if (cli->ranks % H) {
            fprintf(err,
                    "agmm: --hosts: %d does not divide --ranks %d (give "
                    "--ranks-per-host, or --ranks a multiple of %d)\n",
                    H, cli->ranks, H);
            return 2;
        }
        R = cli->ranks / H;
    } else if (R) {
        if (cli->ranks % R) {
            fprintf(err,
                    "agmm: --ranks-per-host: %d does not divide --ranks %d "
                    "(give --hosts, or --ranks a multiple of %d)\n",
                    R, cli->ranks, R);
            return 2;
        }
        H = cli->ranks / R;
    } else {
        H = 1;
        R = cli->ranks;
    }
    cli->hosts = H;
    cli->ranks_per_host = R;
    /* The default core split counts the ranks sharing one host. */
    cli->ranks_here = R;
    return 0;
}

/* The transport's default and what it needs: 0 or 2 after one line. */
static int check_transport(agmm_cli_t *cli, FILE *err)
{
    int link = cli->link_gbps > 0;
    if (!cli->model_transport_set)
        cli->model_transport = cli->hosts > 1 ? AGMM_MODEL_MPI
                               : link         ? AGMM_MODEL_LINK
                                              : AGMM_MODEL_SHM;
    int t = cli->model_transport;
    if (cli->hosts > 1 && t != AGMM_MODEL_MPI) {
        fprintf(err,
                "agmm: --transport: %s is one host; with --hosts %d give mpi\n",
                t == AGMM_MODEL_LINK ? "link" : "shm", cli->hosts);
        return 2;
    }
    if (t == AGMM_MODEL_SHM && link) {
        fprintf(err, "agmm: --link-gbps: --transport shm has no link (give "
                     "--transport link for the emulator, or mpi with --hosts "
                     "> 1)\n");
        return 2;
    }
    if (t == AGMM_MODEL_LINK && !link) {
        fprintf(err, "agmm: --transport: link needs --link-gbps (each "
                     "emulated wire's Gbit/s)\n");
        return 2;
    }
    if (t == AGMM_MODEL_MPI && cli->hosts > 1 && !link) {
        fprintf(err,
                "agmm: --link-gbps: needed with --transport mpi and --hosts %d "
                "(the link between hosts, Gbit/s)\n",
                cli->hosts);
        return 2;
    }
    if (t == AGMM_MODEL_MPI && cli->hosts == 1 && link) {
        fprintf(err, "agmm: --link-gbps: mpi on one host has no link between "
                     "hosts (give --hosts > 1, or --transport link)\n");
        return 2;
    }
    return 0;
}

int opt_check_model(agmm_cli_t *cli, FILE *err)
{
    if (resolve_hosts(cli, err) || check_transport(cli, err)) return 2;
    if (cli->gemm_gflops_set && cli->gemm_rates_arg) {
        fprintf(err, "agmm: --gemm-rates: give --gemm-gflops or --gemm-rates, "
                     "not both\n");
        return 2;
    }
    cli->n_gemm_rates = 0;
    if (cli->gemm_rates_arg &&
        opt_parse_rates(err, cli->gemm_rates_arg, cli->gemm_rates,
                        &cli->n_gemm_rates))
        return 2;
    if (cli->gemm_gflops_set) {
        cli->gemm_rates[0].rows = 1;
        cli->gemm_rates[0].gflops = cli->gemm_gflops;
        cli->n_gemm_rates = 1;
    }
    if (cli->convert_gbs_set &&
        (cli->dtype == AGMM_DTYPE_FP32 || cli->dtype == AGMM_DTYPE_INT8 ||
         cli->gemm_path == AGMM_GEMM_PATH_NATIVE)) {
        fprintf(err,
                "agmm: --convert-gbs: nothing is converted with --dtype %s "
                "and --gemm-path %s (only bf16/fp16 on the f32 path)\n",
                agmm_dtype_name(cli->dtype),
                agmm_gemm_path_name(cli->gemm_path));
        return 2;
    }
    return 0;
}
