/*
 * The checks of the `agmm` command line on the cores (options.h): the
 * default --comm-cores / --gemm-cores for this host, the core budget (ranks
 * x threads against the cores this process may use) and the idle-core
 * warnings. Each refusal or warning is one line, "agmm: ...".
 */
#include "options.h"

#include <inttypes.h>

static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

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

int opt_check_cores(const agmm_cli_t *cli, FILE *err)
{
    /* Core budget: a bench refuses (its timings would lie) unless
     * --oversubscribe; a run (a correctness check) warns and goes on. */
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
    if (opt_mul_i64(row_tiles_total, col_blocks, &items) == 0 &&
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
