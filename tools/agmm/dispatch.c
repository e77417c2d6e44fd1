/* Starting the ranks and running the command on each (tool.h): the forked
 * ranks (agmm_launch, a stop on SIGINT/SIGTERM) or the MPI world's (the
 * options parsed on every rank, only rank 0 printing), the command each
 * rank runs (run.c or bench.c), and the failure reported once. */
#include "tool.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "placement.h"
#include "report.h"

volatile sig_atomic_t agmm_tool_stop = 0;

static void on_stop(int sig)
{
    agmm_tool_stop = sig;
}

int agmm_tool_stopped(void)
{
    /* The launcher aborts the world ("the run was interrupted") before it
     * signals the ranks: a rank may see the abort first. */
    const char *e = agmm_last_error();
    if (!agmm_tool_stop && e && strstr(e, "the run was interrupted"))
        agmm_tool_stop = SIGTERM;
    return agmm_tool_stop != 0;
}

static int rank_main(agmm_world_t *world, void *arg)
{
    const agmm_cli_t *cli = arg;
    /* Ctrl-C reaches the ranks too, and the launcher answers SIGINT/SIGTERM
     * by aborting the world and sending SIGTERM: a rank notes the signal
     * and leaves through the aborted wait, so bench can print the rounds
     * done (the launcher SIGKILLs a rank that takes longer than 2 s). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = cli->cmd == AGMM_CMD_RUN ? agmm_tool_run(world, cli)
                                      : agmm_tool_bench(world, cli);
    if (rc != 0) agmm_tool_report_failure(agmm_world_rank(world), NULL);
    return rc;
}

int agmm_tool_launch(const agmm_cli_t *cli)
{
    agmm_launch_opts_t opts = {0};
    opts.nranks = cli->ranks;
    opts.timeout_s = cli->timeout_s;
    opts.link_gbps = cli->link_gbps;
    opts.link_latency_us = cli->link_latency_us;
    opts.bind = agmm_tool_bind_launch(cli);
    opts.bind_threads = cli->comm_cores + cli->gemm_cores;
    int code = 1;
    agmm_tool_report_share(); /* the ranks' first failure, for --json */
    agmm_status_t st = agmm_launch(&opts, rank_main, (void *)cli, &code);
    /* 129/130/143: the launcher was interrupted by SIGHUP/SIGINT/SIGTERM */
    int signalled =
        code == 128 + SIGHUP || code == 128 + SIGINT || code == 128 + SIGTERM;
    if (signalled) agmm_tool_report_interrupted(code - 128);
    /* No rank got to report (e.g. the survivors were SIGKILLed after the
     * launcher's grace period on a loaded machine): the launcher's own
     * error names the rank that failed ("rank 1 was killed by signal 9"). */
    if ((st != AGMM_OK || code != 0) && !signalled)
        agmm_tool_report_failure(-1, NULL);
    if (st != AGMM_OK || code != 0) agmm_tool_json_failure(cli, "shm");
    if (st != AGMM_OK) return 1; /* the launcher printed why */
    if (signalled) return code;
    return code == 0 ? 0 : (code == 2 ? 2 : 1);
}

/* How many ranks of the world run on this host (same host name): they
 * share its cores and memory. */
static int ranks_on_this_host(agmm_world_t *world)
{
    char mine[64] = "";
    gethostname(mine, sizeof mine - 1);
    int size = agmm_world_size(world), here = 0;
    char *all = malloc(sizeof mine * (size_t)size);
    if (!all ||
        agmm_world_allgather(world, mine, all, sizeof mine) != AGMM_OK) {
        free(all);
        return size;
    }
    for (int r = 0; r < size; r++)
        here += strncmp(all + (size_t)r * sizeof mine, mine, sizeof mine) == 0;
    free(all);
    return here;
}

int agmm_tool_mpi_main(int argc, char **argv, agmm_cli_t *cli)
{
    agmm_world_t *world = NULL;
    agmm_status_t st = agmm_world_create_mpi(&argc, &argv, 0, &world);
    if (st != AGMM_OK) /* printed; "built without MPI" is a usage error */
        return st == AGMM_ERR_UNSUPPORTED ? 2 : 1;
    int rank = agmm_world_rank(world);
    int here = ranks_on_this_host(world);
    /* Every rank parses the same command line; only rank 0 prints. */
    FILE *quiet = rank == 0 ? NULL : fopen("/dev/null", "w");
    FILE *out = quiet ? quiet : stdout, *err = quiet ? quiet : stderr;
    int rc = agmm_cli_parse_mpi(argc, argv, cli, out, err,
                                agmm_world_size(world), here);
    if (rc == 0) rc = agmm_tool_check_memory(cli, err);
    if (quiet) fclose(quiet);
    if (rc == 0) {
        agmm_world_set_timeout(world, cli->timeout_s);
        rc = cli->cmd == AGMM_CMD_RUN ? agmm_tool_run(world, cli)
                                      : agmm_tool_bench(world, cli);
        if (rc != 0 && rank == 0) {
            agmm_tool_report_failure(rank, NULL);
            agmm_tool_json_failure(cli, "mpi");
        }
        fflush(stdout);
        /* A rank that failed tells the others at once (they may be waiting
         * for it); failures every rank saw alike (a failed check) too,
         * which is harmless. */
        if (rc != 0) {
            char why[64];
            snprintf(why, sizeof why, "exiting with code %d", rc);
            agmm_world_abort(world, why);
        }
    }
    agmm_world_destroy(world);
    return rc < 0 ? 0 : rc;
}
