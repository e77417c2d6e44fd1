/* The memory check of the `agmm` command line (desc.h:
 * agmm_tool_check_memory, cli.h: agmm_cli_check_memory): what the ranks'
 * plans (the library's count for the description) and the tool's inputs
 * need against the host's MemAvailable, refused in one line naming the
 * options that set the sizes. */
#include <stdio.h>

#include "cli.h"
#include "desc.h"

static void fmt_bytes(char *buf, size_t size, long double b)
{
    const long double gib = 1024.0L * 1024.0L * 1024.0L;
    if (b >= 1024.0L * gib)
        snprintf(buf, size, "%.1Lf TiB", b / (1024.0L * gib));
    else if (b >= gib / 10.0L)
        snprintf(buf, size, "%.1Lf GiB", b / gib);
    else
        snprintf(buf, size, "%.1Lf MiB", b / (1024.0L * 1024.0L));
}

int agmm_cli_check_memory(const agmm_cli_t *cli, uint64_t bytes_per_rank,
                          FILE *err)
{
    if (!cli) return 0;
    if (!err) err = stderr;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long avail_kib = 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &avail_kib) == 1) {
            found = 1;
            break;
        }
    }
    fclose(f);
    if (!found) return 0;
    long double avail = (long double)avail_kib * 1024.0L;
    /* The ranks on this host share its memory (all of them on shm). */
    int ranks = cli->ranks_here > 0 ? cli->ranks_here
                : cli->ranks > 0    ? cli->ranks
                                    : 1;
    /* bytes_per_rank == 0 means the library found the plan invalid or its
     * byte count overflowing: treat as too large. */
    long double need = bytes_per_rank == 0
                           ? (long double)UINT64_MAX * ranks
                           : (long double)bytes_per_rank * ranks;
    if (need <= avail) return 0;
    char nb[32], ab[32];
    if (bytes_per_rank == 0)
        snprintf(nb, sizeof nb, "more than 16 EiB");
    else
        fmt_bytes(nb, sizeof nb, need);
    fmt_bytes(ab, sizeof ab, avail);
    fprintf(err,
            "agmm: --m-local/--k/--n%s: the plan%s need%s %s on %d %s but "
            "only %s is available\n",
            cli->weight_sets > 1 ? "/--weight-sets" : "",
            cli->weight_sets > 1 ? "s" : "", cli->weight_sets > 1 ? "" : "s",
            nb, ranks, ranks == 1 ? "rank" : "ranks", ab);
    return 2;
}

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
