/* Each rank's plan and inputs (tool.h: agmm_tool_rank_t): the plan made
 * from the options' description (cli/desc.h), its weights, biases and
 * outputs, the shard of every round, the round arguments, and teardown. */
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inputs.h"

double agmm_tool_create_ms;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int agmm_tool_setup(agmm_world_t *world, const agmm_cli_t *cli,
                    agmm_tool_rank_t *t)
{
    memset(t, 0, sizeof *t);
    t->world = world;
    t->cli = cli;
    t->rank = agmm_world_rank(world);
    agmm_plan_desc_t desc;
    agmm_tool_desc(cli, &desc);
    double t0 = now_ms();
    if (agmm_plan_create(world, &desc, &t->plan) != AGMM_OK) return 1;
    agmm_tool_create_ms = now_ms() - t0;

    size_t es = agmm_dtype_size(cli->dtype);
    int int8 = cli->dtype == AGMM_DTYPE_INT8;
    t->a = malloc((size_t)agmm_tool_a_elems(cli, t->rank) * es + 1);
    if (int8)
        t->a_scale = malloc(
            (size_t)agmm_tool_a_scales(cli, t->rank) * sizeof(float) + 1);
    if (!t->a || (int8 && !t->a_scale)) {
        fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                t->rank);
        return 1;
    }
    int nw = cli->n_count > 1 ? cli->n_count : 1;
    for (int i = 0; i < nw; i++) {
        int64_t n = nw > 1 ? cli->n_list[i] : cli->n;
        size_t kn = (size_t)agmm_tool_k_part(cli, t->rank) * (size_t)n;
        size_t cn = (size_t)agmm_tool_c_rows(cli, t->rank) *
                    (size_t)agmm_tool_c_cols(cli, n);
        t->ws[i] = malloc(kn * es + 1);
        t->cs[i] = malloc(cn * agmm_dtype_size(cli->out_dtype) + 1);
        int c16 = cli->out_dtype != AGMM_DTYPE_FP32;
        if (c16) t->c32s[i] = malloc(cn * sizeof(float) + 1);
        if (cli->bias) t->biases[i] = malloc((size_t)n * sizeof(float) + 1);
        int64_t kp = agmm_tool_k_part(cli, t->rank);
        int wq = agmm_tool_wq_bits(cli), zp = wq && cli->zero_point;
        int64_t ns = wq ? agmm_inputs_wq_groups(kp, n, cli->group_size)
                        : agmm_tool_w_scales(cli, i);
        if (int8 || wq) t->w_scales[i] = malloc((size_t)ns * sizeof(float) + 1);
        if (zp) t->w_zeros[i] = malloc((size_t)ns + 1);
        if (!t->ws[i] || !t->cs[i] || ((int8 || wq) && !t->w_scales[i]) ||
            (zp && !t->w_zeros[i]) || (c16 && !t->c32s[i]) ||
            (cli->bias && !t->biases[i])) {
            fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                    t->rank);
            return 1;
        }
        int64_t id = agmm_tool_w_id_i(cli, t->rank, i);
        if (cli->bias &&
            agmm_inputs_fill(cli->seed, AGMM_STREAM_BIAS, i, AGMM_DTYPE_FP32,
                             t->biases[i], n) != AGMM_OK)
            return 1;
        agmm_status_t st =
            wq ? agmm_inputs_fill_wq(cli->seed, AGMM_STREAM_W, id, kp, n, wq,
                                     cli->group_size, zp, t->ws[i],
                                     t->w_scales[i], t->w_zeros[i])
            : int8 ? agmm_inputs_fill_int8(cli->seed, AGMM_STREAM_W, id,
                                           agmm_tool_k_part(cli, t->rank), n,
                                           cli->w_scale == AGMM_SCALE_TENSOR
                                               ? AGMM_QUANT_TENSOR
                                               : AGMM_QUANT_COLS,
                                           t->ws[i], t->w_scales[i])
                   : agmm_inputs_fill(cli->seed, AGMM_STREAM_W, id, cli->dtype,
                                      t->ws[i], (int64_t)kn);
        if (st != AGMM_OK || agmm_tool_set_weight(t, t->plan, i, i) != AGMM_OK)
            return 1;
    }
    t->w = t->ws[0];
    t->c = t->cs[0];
    /* run's check also compares the gathered A the library hands back. */
    if (cli->cmd == AGMM_CMD_RUN && cli->check && cli->op == AGMM_OP_AG_GEMM &&
        !(t->gathered =
              malloc((size_t)cli->m_total * (size_t)cli->k * es + 1))) {
        fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                t->rank);
        return 1;
    }
    if (t->gathered && int8 &&
        !(t->gathered_scale =
              malloc((size_t)cli->m_total * sizeof(float) + 1))) {
        fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                t->rank);
        return 1;
    }
    return 0;
}

agmm_status_t agmm_tool_set_weight(const agmm_tool_rank_t *t, agmm_plan_t *plan,
                                   int plan_i, int i)
{
    if (t->cli->bias) {
        agmm_status_t st = agmm_plan_set_bias(plan, plan_i, t->biases[i]);
        if (st != AGMM_OK) return st;
    }
    if (t->cli->dtype == AGMM_DTYPE_INT8)
        return agmm_plan_set_weight_scaled(plan, plan_i, t->ws[i],
                                           t->w_scales[i]);
    if (agmm_tool_wq_bits(t->cli))
        return agmm_plan_set_weight_quantized(plan, plan_i, t->ws[i],
                                              t->w_scales[i], t->w_zeros[i]);
    return agmm_plan_set_weight_i(plan, plan_i, t->ws[i]);
}

/* Round r's shard of rank `rank` comes from seed + r: inputs change every
 * round, and the check regenerates them the same way. */
int agmm_tool_fill_shard(agmm_tool_rank_t *t, int round)
{
    const agmm_cli_t *cli = t->cli;
    if (cli->dtype == AGMM_DTYPE_INT8)
        return agmm_inputs_fill_int8(cli->seed + (uint64_t)round, AGMM_STREAM_A,
                                     t->rank, agmm_tool_a_rows(cli, t->rank),
                                     agmm_tool_k_part(cli, t->rank),
                                     cli->a_scale == AGMM_SCALE_TENSOR
                                         ? AGMM_QUANT_TENSOR
                                         : AGMM_QUANT_ROWS,
                                     t->a, t->a_scale) == AGMM_OK
                   ? 0
                   : 1;
    return agmm_inputs_fill(cli->seed + (uint64_t)round, AGMM_STREAM_A, t->rank,
                            cli->dtype, t->a,
                            agmm_tool_a_elems(cli, t->rank)) == AGMM_OK
               ? 0
               : 1;
}

void agmm_tool_teardown(agmm_tool_rank_t *t)
{
    agmm_trace_destroy(t->trace); /* before its plan */
    free(t->trace_json);
    if (t->plan) agmm_plan_destroy(t->plan);
    free(t->a);
    free(t->gathered);
    free(t->a_scale);
    free(t->gathered_scale);
    for (int i = 0; i < AGMM_MAX_WEIGHTS; i++) {
        free(t->w_scales[i]);
        free(t->w_zeros[i]);
        free(t->ws[i]);
        free(t->cs[i]);
        free(t->c32s[i]);
        free(t->biases[i]);
    }
    memset(t, 0, sizeof *t);
}

void agmm_tool_round_args(agmm_tool_rank_t *t, agmm_schedule_t schedule,
                          int round, agmm_run_args_t *args)
{
    const agmm_cli_t *cli = t->cli;
    agmm_run_args_init(args);
    args->schedule = schedule;
    args->a_local = t->a;
    args->c = t->cs;
    args->a_gathered = t->gathered;
    args->a_scale = t->a_scale;
    args->a_gathered_scale = t->gathered_scale;
    if (cli->rows_per_round_count > 0) {
        for (int r = 0; r < cli->ranks; r++)
            t->m_rows[r] = agmm_tool_round_rows(cli, round, r);
        args->m_rows = t->m_rows;
    }
}
