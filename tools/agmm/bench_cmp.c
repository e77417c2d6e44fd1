/* `agmm bench`: the plans the extended call is compared with, made beside
 * the bench's own plan and timed in the same rounds (bench.c):
 *   separate  (--n with several weights) one single-weight plan per weight,
 *             run one after the other: what a caller without several
 *             weights per gather does (gathers A once per weight);
 *   exact     (--m-local-per-round) one plan per row count of the list,
 *             made for exactly those rows: what a caller without per-call
 *             rows does (a plan per size), against the bench's one plan
 *             for the most rows whose rows change every round.
 * Both run the fused schedule, as the bench's "fused" mode they are
 * compared with. Plan creation is collective: every rank makes the same. */
#include "bench_cmp.h"

#include <stdio.h>
#include <string.h>

#include "agmm_ext.h"

static int make_plan(agmm_tool_rank_t *t, agmm_plan_desc_t *d, int w0, int nw,
                     agmm_plan_t **out)
{
    if (agmm_plan_create(t->world, d, out) != AGMM_OK) return 1;
    for (int i = 0; i < nw; i++)
        if (agmm_tool_set_weight(t, *out, i, w0 + i) != AGMM_OK) return 1;
    return 0;
}

int agmm_bench_cmp_setup(agmm_tool_rank_t *t, agmm_bench_cmp_t *b)
{
    const agmm_cli_t *cli = t->cli;
    memset(b, 0, sizeof *b);
    agmm_plan_desc_t d;
    if (cli->n_count > 1) {
        for (int i = 0; i < cli->n_count; i++) {
            agmm_tool_desc(cli, &d);
            d.n_weights = 0;
            d.n_list = NULL;
            d.n = cli->n_list[i];
            if (make_plan(t, &d, i, 1, &b->sep[i])) return 1;
            b->nsep = i + 1;
        }
    }
    /* Too many sizes to hold a plan each: no exact comparison (said). */
    int nrows = cli->rows_per_round_count <= AGMM_BENCH_CMP_MAX
                    ? cli->rows_per_round_count
                    : 0;
    for (int i = 0; i < nrows; i++) {
        int64_t sum = 0;
        for (int r = 0; r < cli->ranks; r++) {
            b->rows[i][r] = agmm_tool_round_rows(cli, i, r);
            sum += b->rows[i][r];
        }
        b->nexact = i + 1;
        if (sum == 0)
            continue; /* no plan has no rows: that round is not compared */
        agmm_tool_desc(cli, &d);
        d.m_local = b->rows[i];
        if (make_plan(t, &d, 0, cli->n_count > 1 ? cli->n_count : 1,
                      &b->exact[i]))
            return 1;
    }
    return 0;
}

int agmm_bench_cmp_has(const agmm_bench_cmp_t *b, int exact)
{
    return exact ? b->nexact > 0 : b->nsep > 0;
}

agmm_status_t agmm_bench_cmp_run(agmm_tool_rank_t *t, agmm_bench_cmp_t *b,
                                 int exact, int round, int *ran)
{
    const agmm_cli_t *cli = t->cli;
    agmm_run_args_t a;
    agmm_tool_round_args(t, AGMM_SCHEDULE_FUSED, round, &a);
    *ran = 0;
    if (exact) {
        int n = cli->rows_per_round_count;
        int i = round >= 0 ? round % n : (n - 1 - (-1 - round) % n);
        if (!b->exact[i]) return AGMM_OK;
        a.m_rows = NULL; /* the plan's own */
        *ran = 1;
        return agmm_plan_run_args(b->exact[i], &a);
    }
    for (int i = 0; i < b->nsep; i++) {
        a.c = &t->cs[i];
        agmm_status_t st = agmm_plan_run_args(b->sep[i], &a);
        if (st != AGMM_OK) return st;
    }
    *ran = 1;
    return AGMM_OK;
}

void agmm_bench_cmp_teardown(agmm_bench_cmp_t *b)
{
    for (int i = 0; i < AGMM_MAX_WEIGHTS; i++)
        if (b->sep[i]) agmm_plan_destroy(b->sep[i]);
    for (int i = 0; i < AGMM_BENCH_CMP_MAX; i++)
        if (b->exact[i]) agmm_plan_destroy(b->exact[i]);
    memset(b, 0, sizeof *b);
}
