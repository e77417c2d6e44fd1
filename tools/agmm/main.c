/* agmm: the command-line tool. Parses the options (cli/cli.h: cli/parse.c
 * over the option table in cli/options.c), refuses what cannot run (the
 * checks in cli/, the memory in cli/memory_check.c), starts the ranks
 * (agmm_launch; or, under an MPI launcher, joins the MPI world:
 * dispatch.c) and runs `run` (run.c) or `bench` (bench.c) on each; `cleanup`
 * (cleanup.c) and `model` (model.c) start no ranks (model never joins an MPI
 * world, even under a launcher); `launch` (launch.c) starts P processes of
 * another program as ranks. Everything goes through include/agmm.h (and
 * agmm_ext.h's helpers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "cli/cli.h"
#include "launch.h"
#include "tool.h"

int main(int argc, char **argv)
{
    static agmm_cli_t cli; /* large (m_local table): not on the stack */
    /* Whole lines as they happen, also into a pipe (| tee, mpirun): a
     * reader sees each round when it ends, and a killed run's log never
     * ends mid-line. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* agmm launch starts other programs: none of the run/bench options. */
    if (argc > 1 && !strcmp(argv[1], "launch"))
        return agmm_tool_launch_main(argc - 1, argv + 1);
    int local =
        argc > 1 && (!strcmp(argv[1], "cleanup") || !strcmp(argv[1], "model"));
    if (!local && agmm_cli_wants_mpi(argc, argv))
        return agmm_tool_mpi_main(argc, argv, &cli);
    int rc = agmm_cli_parse(argc, argv, &cli, stdout, stderr);
    if (rc < 0) return 0; /* help or version */
    if (rc != 0) return rc;
    if (cli.cmd == AGMM_CMD_CLEANUP) return agmm_tool_cleanup(&cli);
    if (cli.cmd == AGMM_CMD_MODEL) return agmm_tool_model(&cli);

    rc = agmm_tool_check_memory(&cli, stderr);
    if (rc != 0) return rc;

    return agmm_tool_launch(&cli);
}
