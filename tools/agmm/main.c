/* agmm: the command-line tool. Parses the options (cli.h: parse.c over the
 * option table in options.c), refuses what cannot run, starts the ranks
 * (agmm_launch; or, under an MPI launcher, joins the MPI world: tool.c) and
 * runs `run` (run.c) or `bench` (bench.c) on each; `cleanup` (cleanup.c)
 * and `model` (model.c) start no ranks (model never joins an MPI world,
 * even under a launcher); `launch` (launch.c) starts P processes of another
 * program as ranks. Everything goes through include/agmm.h (and
 * agmm_ext.h's helpers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "cli.h"
#include "epilogue_check.h"
#include "launch.h"
#include "tool.h"

/* Memory one rank of the tool needs besides the plan: its shard, the
 * weight in the input dtype, C, and for the check every shard plus the
 * reference's fp32 copies and result (int8: the fp32 inputs quantized, and
 * the check's fp32 product of them). */
uint64_t agmm_tool_bytes_per_rank(const agmm_cli_t *cli)
{
    double es = (double)agmm_dtype_size(cli->dtype);
    double M = (double)cli->m_total, k = (double)cli->k, n = (double)cli->n_sum;
    double mmax = 0;
    for (int r = 0; r < cli->ranks; r++)
        if ((double)cli->m_local[r] > mmax) mmax = (double)cli->m_local[r];
    double ces = (double)agmm_dtype_size(cli->out_dtype);
    double bytes = mmax * k * es + k * n * es + M * n * ces;
    if (cli->check) /* + the gathered A handed back */
        bytes += 2 * M * k * es + M * k * 4 + k * n * 4 + M * n * 4;
    if (cli->check && agmm_tool_has_epilogue(cli)) /* epilogue_check.h: */
        bytes += 2 * M * n * 4 + (ces < 4 ? M * n * 4 : 0); /* pre, raw, C */
    if (cli->dtype == AGMM_DTYPE_INT8) {   /* inputs made in fp32, then */
        bytes += mmax * k * 4 + k * n * 4; /* quantized; the check's */
        if (cli->check) /* fp32 product and per-rank partials */
            bytes += M * k * 4 + k * n * 4 + 2 * M * n * 4;
    }
    return bytes > 1.8e19 ? 0 : (uint64_t)bytes;
}

int agmm_tool_check_memory(const agmm_cli_t *cli, FILE *err)
{
    agmm_plan_desc_t desc;
    agmm_tool_desc(cli, &desc);
    uint64_t plan_bytes = agmm_plan_bytes_per_rank(&desc);
    uint64_t tool_bytes = agmm_tool_bytes_per_rank(cli);
    /* bench --weight-sets L: L plans, each with its prepared weight. */
    uint64_t sets = cli->weight_sets > 1 ? (uint64_t)cli->weight_sets : 1;
    uint64_t need = plan_bytes * sets + tool_bytes;
    if (plan_bytes == 0 || tool_bytes == 0 || plan_bytes > UINT64_MAX / sets ||
        need < plan_bytes * sets)
        need = 0;
    return agmm_cli_check_memory(cli, need, err);
}

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
