/* `agmm bench --weight-sets L` (bench_sets.h). A decode step reads every
 * weight once, from DRAM: a model's layers follow each other and together
 * exceed any cache. One weight timed round after round stays in the
 * last-level cache when it fits (bf16 4096 x 4096: 32 MiB per rank), and
 * the rate measured is the cache's. With L sets each timed call (every
 * mode's, in turn) runs the next set's plan, so a set comes back after L
 * calls, once the others have pushed it out.
 *
 * Each set is a plan of its own: set_weight prepares the weight into the
 * plan (oneDNN reorders it into its blocked layout, OpenBLAS converts it
 * to fp32), so swapping weights in one plan would rewrite the prepared
 * copy before each round, and the round would read what was just written
 * (from cache) besides paying the reorder. L plans cost L prepared weights
 * and L plans' windows (cli/memory_check.c counts them); the source
 * weight is filled and prepared one set at a time in the tool's buffer. */
#include "bench_sets.h"

#include <string.h>

#include "inputs.h"

/* Set s's weight into t->ws[0] (its own seed; bench checks no result). */
static int fill_set(agmm_tool_rank_t *t, int s)
{
    const agmm_cli_t *cli = t->cli;
    uint64_t seed = cli->seed + 0x9E3779B97F4A7C15ull * (uint64_t)s;
    int64_t id = agmm_tool_w_id_i(cli, t->rank, 0);
    int64_t k = agmm_tool_k_part(cli, t->rank), n = cli->n;
    agmm_status_t st =
        agmm_tool_wq_bits(cli)
            ? agmm_inputs_fill_wq(seed, AGMM_STREAM_W, id, k, n,
                                  agmm_tool_wq_bits(cli), cli->group_size,
                                  cli->zero_point, t->ws[0], t->w_scales[0],
                                  t->w_zeros[0])
        : cli->dtype == AGMM_DTYPE_INT8
            ? agmm_inputs_fill_int8(seed, AGMM_STREAM_W, id, k, n,
                                    cli->w_scale == AGMM_SCALE_TENSOR
                                        ? AGMM_QUANT_TENSOR
                                        : AGMM_QUANT_COLS,
                                    t->ws[0], t->w_scales[0])
            : agmm_inputs_fill(seed, AGMM_STREAM_W, id, cli->dtype, t->ws[0],
                               k * n);
    return st == AGMM_OK ? 0 : 1;
}

int agmm_bench_sets_setup(agmm_tool_rank_t *t, agmm_bench_sets_t *s)
{
    memset(s, 0, sizeof *s);
    s->n = t->cli->weight_sets > 1 ? t->cli->weight_sets : 1;
    s->plan[0] = t->plan;
    agmm_plan_desc_t desc;
    agmm_tool_desc(t->cli, &desc);
    for (int i = 1; i < s->n; i++) {
        if (agmm_plan_create(t->world, &desc, &s->plan[i]) != AGMM_OK) return 1;
        if (fill_set(t, i) ||
            agmm_tool_set_weight(t, s->plan[i], 0, 0) != AGMM_OK)
            return 1;
    }
    return 0;
}

void agmm_bench_sets_next(agmm_tool_rank_t *t, agmm_bench_sets_t *s)
{
    t->plan = s->plan[s->next];
    s->next = (s->next + 1) % s->n;
}

void agmm_bench_sets_teardown(agmm_tool_rank_t *t, agmm_bench_sets_t *s)
{
    if (s->plan[0]) t->plan = s->plan[0];
    for (int i = 1; i < s->n; i++)
        if (s->plan[i]) agmm_plan_destroy(s->plan[i]);
    memset(s, 0, sizeof *s);
}
