/*
 * The checks of the `agmm` command line that one option-table row cannot
 * state (options.h): the --m-local list syntax, --schedule against --mode,
 * the output paths, --m-local against --ranks, M and the byte counts, the
 * link emulator and MPI, the GEMM path against the engine, the core budget
 * with its host-dependent defaults and the idle-core warnings (the memory
 * check is memory_check.c). Each refusal is one line, "agmm: --option:
 * ...".
 */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "placement.h"
#include "tool.h"

/* ------------------------------------------------------------ --m-local */

/* ROWS[,ROWS...]: the list syntax; against --ranks in opt_validate.
 * --m-local and --k-local share it (`name` says which). */
int opt_get_rows(FILE *err, const char *name, const char *arg, int64_t *dst,
                 int *count_out)
{
    const char *p = arg;
    int count = 0;
    if (!*arg) {
        fprintf(err,
                "agmm: --%s: give N or a comma-separated list N,N,... (got "
                "'')\n",
                name);
        return -1;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            fprintf(err,
                    "agmm: --%s: empty value in the list; give N or N,N,... "
                    "without empty elements (got '%s')\n",
                    name, arg);
            return -1;
        }
        if (count >= AGMM_CLI_MAX_RANKS) {
            fprintf(err,
                    "agmm: --%s: at most %d values (one per rank) (got "
                    "'%.40s...')\n",
                    name, AGMM_CLI_MAX_RANKS, arg);
            return -1;
        }
        char buf[64];
        int64_t v = 0;
        num_result_t r;
        if (len >= sizeof buf) {
            r = NUM_JUNK;
            /* A very long run of digits is out of range, anything else junk. */
            size_t i = (p[0] == '+') ? 1 : 0;
            while (i < len && isdigit((unsigned char)p[i]))
                i++;
            if (i == len) r = NUM_RANGE;
        } else {
            memcpy(buf, p, len);
            buf[len] = '\0';
            r = opt_parse_i64(buf, 0, INT64_MAX, &v);
        }
        if (r != NUM_OK) {
            fprintf(err,
                    "agmm: --%s: %seach value an integer from 0 to %" PRId64
                    " (got '%.*s' in '%s')\n",
                    name, opt_range_prefix(r), (int64_t)INT64_MAX,
                    (int)(len > 40 ? 40 : len), p, arg);
            return -1;
        }
        dst[count++] = v;
        if (!comma) break;
        p = comma + 1;
    }
    *count_out = count;
    return 0;
}

/* ------------------------------------------------------------ schedule */

int opt_check_schedule_mode(agmm_cli_t *cli, FILE *err, int mode_given)
{
    if (!cli->schedule_set) return 0;
    unsigned want = cli->schedule == AGMM_SCHEDULE_FUSED ? AGMM_BENCH_FUSED
                    : cli->schedule == AGMM_SCHEDULE_BASELINE
                        ? AGMM_BENCH_BASELINE
                        : AGMM_BENCH_AUTO;
    if (mode_given && cli->bench_modes != want) {
        fprintf(err,
                "agmm: --schedule: conflicts with --mode (bench times --mode; "
                "--schedule S alone means --mode S)\n");
        return 2;
    }
    cli->bench_modes = want;
    return 0;
}

/* ------------------------------------------------------------ cores */

void agmm_cli_resolve_cores(agmm_cli_t *cli)
{
    /* The ranks that share the usable cores: all of this host's (all of
     * them on shm), or this rank alone when MPI bound it to its own. */
    int here = cli->cores_own        ? 1
               : cli->ranks_here > 0 ? cli->ranks_here
                                     : cli->ranks;
    /* The library's rule (agmm_default_workers), given a valid count of
     * each (a parse error may leave --ranks at 0). */
    int comm, gemm;
    agmm_default_workers(
        cli->usable_cores > 0 ? cli->usable_cores : 1, here > 0 ? here : 1,
        cli->comm_cores_set ? cli->comm_cores : -1, &comm, &gemm);
    if (!cli->comm_cores_set) cli->comm_cores = comm;
    if (!cli->gemm_cores_set) cli->gemm_cores = gemm;
}

/* ------------------------------------------------------------ validation */

static int mul_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return -1;
    if (a != 0 && b > INT64_MAX / a) return -1;
    *out = a * b;
    return 0;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* An output file must be creatable: its directory exists and is writable,
 * and the path is not a directory. Nothing is created here. */
static int check_out_path(FILE *err, const char *name, const char *path)
{
    if (!*path) {
        fprintf(err, "agmm: --%s: give a file name (got '')\n", name);
        return -1;
    }
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(err, "agmm: --%s: '%s' is a directory; give a file name\n",
                name, path);
        return -1;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (strlen(path) >= sizeof dir - 16) {
        fprintf(err, "agmm: --%s: path longer than %zu characters\n", name,
                sizeof dir - 16);
        return -1;
    }
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(err, "agmm: --%s: cannot write '%s' (directory '%s': %s)\n",
                name, path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* --n N[,N...] (several weights) and --m-local-per-round: 0 or 2 after
 * one error line. Sets n, n_count, n_sum. */
static int check_weights_and_rows(agmm_cli_t *cli, FILE *err)
{
    if (cli->n_count < 1) cli->n_count = 1;
    if (cli->n_count > AGMM_MAX_WEIGHTS) {
        fprintf(err, "agmm: --n: at most %d weights (got %d values)\n",
                AGMM_MAX_WEIGHTS, cli->n_count);
        return 2;
    }
    cli->n_sum = 0;
    for (int i = 0; i < cli->n_count; i++) {
        if (cli->n_list[i] < 1 || cli->n_list[i] > INT_MAX) {
            fprintf(
                err,
                "agmm: --n: %seach value an integer from 1 to %d (got %" PRId64
                ")\n",
                cli->n_list[i] > INT_MAX ? "out of range; " : "", INT_MAX,
                cli->n_list[i]);
            return 2;
        }
        cli->n_sum += cli->n_list[i];
    }
    cli->n = cli->n_list[0];
    if (cli->weight_sets > 1 &&
        (cli->n_count > 1 || cli->rows_per_round_count > 0 || cli->trace_json ||
         cli->trace_svg)) {
        fprintf(err, "agmm: --weight-sets: more than 1 only with one weight "
                     "(--n N), fixed rows (no --m-local-per-round) and no "
                     "--trace/--trace-svg\n");
        return 2;
    }
    if (cli->n_count > 1 && cli->op != AGMM_OP_AG_GEMM) {
        fprintf(err,
                "agmm: --n: several weights (a list) only with --op "
                "ag-gemm; %s takes one N\n",
                agmm_op_name(cli->op));
        return 2;
    }
    return 0;
}

int opt_validate(agmm_cli_t *cli, FILE *err, int world_size, int ranks_here)
{
    if (cli->trace_json && check_out_path(err, "trace", cli->trace_json))
        return 2;
    if (cli->trace_svg && check_out_path(err, "trace-svg", cli->trace_svg))
        return 2;
    if (cli->trace_json && cli->trace_svg &&
        !strcmp(cli->trace_json, cli->trace_svg)) {
        fprintf(err,
                "agmm: --trace/--trace-svg: give two different files (both are "
                "'%s')\n",
                cli->trace_json);
        return 2;
    }
    /* A list of shards names the ranks: --m-local 1000,777,1 is 3 ranks
     * unless --ranks says otherwise (then the lengths must agree, below). */
    if (cli->m_local_count > 1 && !cli->ranks_set && world_size <= 0)
        cli->ranks = cli->m_local_count;
    /* Under MPI the launcher decides the ranks. */
    if (world_size > 0) {
        if (cli->ranks_set && cli->ranks != world_size) {
            fprintf(err,
                    "agmm: --ranks: %d given but the MPI launcher started %d "
                    "rank%s (omit --ranks or make it match)\n",
                    cli->ranks, world_size, world_size == 1 ? "" : "s");
            return 2;
        }
        cli->ranks = world_size;
        cli->ranks_here = ranks_here > 0 && ranks_here <= world_size
                              ? ranks_here
                              : world_size;
        /* A rank bound to fewer cores than the host has (OpenMPI binds one
         * core per rank by default for np <= 2) owns them: count it alone. */
        cli->cores_own = cli->usable_cores < cli->online_cores;
    } else {
        cli->ranks_here = cli->ranks;
    }
    /* agmm model: --ranks may come from --hosts x --ranks-per-host, and the
     * cores are split among a host's ranks (ranks_here). */
    if (cli->cmd == AGMM_CMD_MODEL && opt_check_model(cli, err)) return 2;

    if (cli->link_latency_us > 0 && !(cli->link_gbps > 0)) {
        fprintf(err, "agmm: --link-latency-us: needs --link-gbps (the link "
                     "emulator is off without a link speed)\n");
        return 2;
    }
    if (cli->cmd == AGMM_CMD_BENCH &&
        (cli->bench_modes & AGMM_BENCH_GEMM_ONLY) && cli->transport_mpi) {
        /* `all` means every mode that applies here; gemm-only named
         * alone is refused (a round without puts would leave MPI's posted
         * receives unmatched). */
        if (cli->bench_modes & AGMM_BENCH_ALL_WORD) {
            cli->bench_modes &= ~(unsigned)AGMM_BENCH_GEMM_ONLY;
        } else {
            fprintf(
                err,
                "agmm: --mode: gemm-only needs the shared-memory transport; "
                "under MPI use --mode all (fused,baseline,auto,comm-only)\n");
            return 2;
        }
    }
    if (cli->link_gbps > 0 && cli->transport_mpi) {
        fprintf(
            err,
            "agmm: --link-gbps: the link emulator is part of the shared-memory "
            "transport (not with MPI)\n");
        return 2;
    }
    if (opt_check_wq(cli, err) || opt_check_dtype(cli, err)) return 2;
    if (!agmm_gemm_path_available(cli->weight_dtype != AGMM_WDTYPE_SAME
                                      ? AGMM_GEMM_ENGINE_WQ
                                      : cli->gemm_engine,
                                  cli->dtype, cli->gemm_path)) {
        fprintf(err,
                "agmm: --gemm-path %s: the %s engine has no native %s kernel "
                "on this CPU (allowed here: auto, f32)\n",
                agmm_gemm_path_name(cli->gemm_path),
                agmm_gemm_engine_name(
                    cli->gemm_engine != AGMM_GEMM_ENGINE_AUTO ? cli->gemm_engine
                    : agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN)
                        ? AGMM_GEMM_ENGINE_ONEDNN
                        : AGMM_GEMM_ENGINE_OPENBLAS),
                agmm_dtype_name(cli->dtype));
        return 2;
    }
    if (check_weights_and_rows(cli, err) || opt_check_gated(cli, err)) return 2;
    /* --m-local against --ranks */
    if (cli->m_local_count > 1 && cli->m_local_count != cli->ranks) {
        fprintf(err,
                "agmm: --m-local: %d values given but --ranks is %d (give 1 "
                "value or %d)\n",
                cli->m_local_count, cli->ranks, cli->ranks);
        return 2;
    }
    if (cli->m_local_count <= 1) {
        int64_t v = cli->m_local[0];
        for (int r = 0; r < cli->ranks; r++)
            cli->m_local[r] = v;
    }
    for (int r = cli->ranks; r < AGMM_CLI_MAX_RANKS; r++)
        cli->m_local[r] = 0;

    /* M and byte counts */
    int64_t m = 0;
    int overflow = 0;
    for (int r = 0; r < cli->ranks; r++) {
        if (cli->m_local[r] > INT64_MAX - m) {
            overflow = 1;
            break;
        }
        m += cli->m_local[r];
    }
    if (!overflow && m < 1) {
        fprintf(err, "agmm: --m-local: all shards are empty; at least one row "
                     "is needed\n");
        return 2;
    }
    if (!overflow && m > INT_MAX) { /* CBLAS dimensions are int */
        fprintf(err,
                "agmm: --m-local: the shards add up to %" PRId64
                " rows; at most %d (M is a CBLAS int dimension)\n",
                m, INT_MAX);
        return 2;
    }
    if (!overflow) {
        int64_t t;
        if (mul_i64(m, cli->k, &t) || mul_i64(t, 4, &t) ||
            mul_i64(cli->k, cli->n_sum, &t) || mul_i64(t, 4, &t) ||
            mul_i64(m, cli->n_sum, &t) || mul_i64(t, 4, &t))
            overflow = 1;
    }
    if (overflow) {
        fprintf(err,
                "agmm: --m-local/--k/--n: sizes overflow 64-bit byte counts (M "
                "= sum of --m-local, K = %" PRId64 ", N = %" PRId64 ")\n",
                cli->k, cli->n);
        return 2;
    }
    cli->m_total = m;
    /* Round rows above every rank's --m-local would never be used. */
    int64_t mmax = 0;
    for (int r = 0; r < cli->ranks; r++)
        if (cli->m_local[r] > mmax) mmax = cli->m_local[r];
    for (int i = 0; i < cli->rows_per_round_count; i++)
        if (cli->rows_per_round[i] > mmax) {
            fprintf(err,
                    "agmm: --m-local-per-round: value %d is %" PRId64
                    ", more than the largest --m-local %" PRId64
                    " (each 0..--m-local: the plan is made for --m-local "
                    "rows)\n",
                    i, cli->rows_per_round[i], mmax);
            return 2;
        }

    /* --op gemm-rs / gemm-ar and --k-local */
    if (cli->k_local_count > 0 && cli->op == AGMM_OP_AG_GEMM) {
        fprintf(err, "agmm: --k-local: only with --op gemm-rs or gemm-ar (the "
                     "all-gather + GEMM does not split --k)\n");
        return 2;
    }
    if (cli->k_local_count > 0) {
        if (cli->k_local_count != cli->ranks) {
            fprintf(
                err,
                "agmm: --k-local: %d value%s given but --ranks is %d (give one "
                "value per rank, summing to --k)\n",
                cli->k_local_count, cli->k_local_count == 1 ? "" : "s",
                cli->ranks);
            return 2;
        }
        int64_t sum = 0;
        for (int r = 0; r < cli->ranks; r++) {
            if (cli->k_local[r] > cli->k) {
                fprintf(err,
                        "agmm: --k-local: value %d is %" PRId64
                        ", more than --k %" PRId64
                        " (each 0..--k, summing to --k)\n",
                        r, cli->k_local[r], cli->k);
                return 2;
            }
            sum += cli->k_local[r];
        }
        if (sum != cli->k) {
            fprintf(err,
                    "agmm: --k-local: the values add up to %" PRId64
                    " but --k is %" PRId64 " (they must sum to --k)\n",
                    sum, cli->k);
            return 2;
        }
    }

    /* Core budget: a bench refuses (its timings would lie) unless
     * --oversubscribe; a run (a correctness check) warns and goes on. */
    agmm_cli_resolve_cores(cli);
    if (cli->cmd != AGMM_CMD_MODEL && agmm_cli_check_bind(cli, err, world_size))
        return 2;
    /* The library's own check of the plan, quietly (it would print its
     * own line), once the cores are known and before any warning: what it
     * still refuses here is the size of the whole booking (over 2^62
     * bytes per rank, engine included). */
    agmm_plan_desc_t d;
    agmm_tool_desc(cli, &d);
    agmm_log_mute(1);
    agmm_status_t st = agmm_plan_desc_check(&d);
    agmm_log_mute(0);
    if (st != AGMM_OK) {
        fprintf(err,
                st == AGMM_ERR_TOO_LARGE
                    ? "agmm: --m-local/--k/--n: the plan would book more than "
                      "2^62 bytes per rank (M = %" PRId64 ", K = %" PRId64
                      ", N = %" PRId64 ")\n"
                    : "agmm: --m-local/--k/--n: the library refuses the plan "
                      "(M = %" PRId64 ", K = %" PRId64 ", N = %" PRId64 ")\n",
                cli->m_total, cli->k, cli->n_sum);
        return 2;
    }

    /* agmm model runs nothing here: no core budget, no idle cores. */
    if (cli->cmd == AGMM_CMD_MODEL) return 0;
    int sharing = cli->cores_own ? 1 : cli->ranks_here;
    int64_t threads =
        (int64_t)sharing * ((int64_t)cli->comm_cores + cli->gemm_cores);
    if (threads > cli->usable_cores && !cli->oversubscribe) {
        int refuse = cli->cmd == AGMM_CMD_BENCH;
        const char *rs = sharing == 1 ? "rank" : "ranks";
        const char *cs = cli->usable_cores == 1 ? "core" : "cores";
        fprintf(err,
                "agmm: %s--comm-cores/--gemm-cores: %d %s x (%d comm + %d "
                "GEMM) = %" PRId64
                " threads exceed the %d %s this process may use",
                refuse ? "" : "warning: ", sharing, rs, cli->comm_cores,
                cli->gemm_cores, threads, cli->usable_cores, cs);
        if (!refuse)
            fprintf(err,
                    "; the run goes on, slower (bench refuses this without "
                    "--oversubscribe)\n");
        else if (!cli->comm_cores_set && !cli->gemm_cores_set)
            fprintf(
                err,
                " (default for %d %s; pass --oversubscribe to run more threads "
                "than cores)\n",
                sharing, rs);
        else if (!cli->gemm_cores_set)
            fprintf(err,
                    " (--gemm-cores defaults to at least 1; use fewer cores or "
                    "--oversubscribe)\n");
        else
            fprintf(err, " (use fewer cores or --oversubscribe)\n");
        if (refuse) return 2;
    }

    /* Warnings: idle cores */
    int max_rank = 0;
    int64_t max_tiles = 0, row_tiles_total = 0;
    for (int r = 0; r < cli->ranks; r++) {
        int64_t t = ceil_div(cli->m_local[r], cli->tile_m);
        row_tiles_total += t; /* <= M, no overflow */
        if (t > max_tiles) {
            max_tiles = t;
            max_rank = r;
        }
    }
    if (cli->comm_cores > 0 && cli->comm_cores > max_tiles) {
        fprintf(err,
                "agmm: warning: --comm-cores %d%s exceeds the %" PRId64
                " row tile%s of rank %d; extra comm cores will be idle\n",
                cli->comm_cores, cli->comm_cores_set ? "" : " (default)",
                max_tiles, max_tiles == 1 ? "" : "s", max_rank);
    }
    int64_t col_blocks = ceil_div(cli->n, cli->tile_n);
    int64_t items = 0;
    if (mul_i64(row_tiles_total, col_blocks, &items) == 0 &&
        cli->gemm_cores > items) {
        fprintf(err,
                "agmm: warning: --gemm-cores %d%s exceeds the %" PRId64
                " GEMM work item%s per rank (%" PRId64 " row tile%s x %" PRId64
                " column block%s); extra GEMM cores will be idle\n",
                cli->gemm_cores, cli->gemm_cores_set ? "" : " (default)", items,
                items == 1 ? "" : "s", row_tiles_total,
                row_tiles_total == 1 ? "" : "s", col_blocks,
                col_blocks == 1 ? "" : "s");
    }
    return 0;
}
