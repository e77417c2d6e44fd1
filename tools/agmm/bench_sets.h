/* `agmm bench --weight-sets L`: L plans of the same description, each with
 * its own weight, used in turn (bench_sets.c). */
#ifndef AGMM_TOOL_BENCH_SETS_H
#define AGMM_TOOL_BENCH_SETS_H

#include "tool.h"

typedef struct agmm_bench_sets {
    int n;    /* the sets (1: only the tool's plan) */
    int next; /* the set the next call uses */
    agmm_plan_t *plan[AGMM_CLI_MAX_WEIGHT_SETS]; /* [0]: t->plan */
} agmm_bench_sets_t;

/* Collective: plans 1..L-1 (agmm_plan_create, as the tool's own), each
 * with a weight of its own seed. 0, or 1 after an error. */
int agmm_bench_sets_setup(agmm_tool_rank_t *t, agmm_bench_sets_t *s);
/* Points t->plan at the next set (every rank calls it in the same order). */
void agmm_bench_sets_next(agmm_tool_rank_t *t, agmm_bench_sets_t *s);
/* t->plan back to set 0 (the plan the tool destroys); the others
 * destroyed. */
void agmm_bench_sets_teardown(agmm_tool_rank_t *t, agmm_bench_sets_t *s);

#endif
