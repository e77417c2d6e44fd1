/*
 * The checks of the `agmm` command line that one option-table row cannot
 * state (options.h): --schedule against --mode, and opt_validate, which
 * runs them all in order: the output paths, --ranks under MPI, the link
 * emulator and MPI, the GEMM path against the engine here; the dtypes, the
 * shapes, --bind and the cores in the files options.h names (the memory
 * check is memory_check.c, after parsing). Each refusal is one line,
 * "agmm: --option: ...".
 */
#include "options.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../placement.h" /* agmm_cli_check_bind */

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

/* ------------------------------------------------------------ validation */

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
    if (opt_check_weights(cli, err) || opt_check_gated(cli, err) ||
        opt_check_rows(cli, err))
        return 2;
    agmm_cli_resolve_cores(cli);
    if (cli->cmd != AGMM_CMD_MODEL && agmm_cli_check_bind(cli, err, world_size))
        return 2;
    if (opt_check_plan(cli, err)) return 2;
    /* agmm model runs nothing here: no core budget, no idle cores. */
    if (cli->cmd == AGMM_CMD_MODEL) return 0;
    return opt_check_cores(cli, err);
}
