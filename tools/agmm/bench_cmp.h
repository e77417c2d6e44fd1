/* `agmm bench`: the plans the extended call is compared with (bench_cmp.c). */
#ifndef AGMM_TOOL_BENCH_CMP_H
#define AGMM_TOOL_BENCH_CMP_H

#include "tool.h"

/* Most row counts of --m-local-per-round that get an exact plan each. */
#define AGMM_BENCH_CMP_MAX 8

typedef struct agmm_bench_cmp {
    agmm_plan_t *sep[AGMM_MAX_WEIGHTS]; /* one single-weight plan per weight */
    int nsep;
    agmm_plan_t *exact[AGMM_BENCH_CMP_MAX]; /* NULL for a round of no rows */
    int64_t rows[AGMM_BENCH_CMP_MAX][AGMM_CLI_MAX_RANKS];
    int nexact;
} agmm_bench_cmp_t;

/* Collective: make the plans the options ask for; 0 or 1 (printed). */
int agmm_bench_cmp_setup(agmm_tool_rank_t *t, agmm_bench_cmp_t *b);
/* Whether the exact (1) or separate (0) comparison is made. */
int agmm_bench_cmp_has(const agmm_bench_cmp_t *b, int exact);
/* Collective: one round of it for bench round `round` (the bench's own
 * rows and inputs); *ran is 0 for a round with no exact plan (no rows). */
agmm_status_t agmm_bench_cmp_run(agmm_tool_rank_t *t, agmm_bench_cmp_t *b,
                                 int exact, int round, int *ran);
/* Collective: destroy the plans. */
void agmm_bench_cmp_teardown(agmm_bench_cmp_t *b);

#endif
