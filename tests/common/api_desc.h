/* The small, valid plan description the API tests start from (test_api.c,
 * test_api_misuse.c): 2 ranks of 5 and 3 rows, k 7, n 6, tiles 2 x 4, one
 * comm worker and two GEMM workers, so every schedule has tiles to pass. */
#ifndef AGMM_TESTS_API_DESC_H
#define AGMM_TESTS_API_DESC_H

#include <stdint.h>

#include "agmm.h"

#define NR 2

static int64_t good_m[NR] = {5, 3};

static inline void good_desc(agmm_plan_desc_t *d)
{
    agmm_plan_desc_init(d);
    d->nranks = NR;
    d->m_local = good_m;
    d->k = 7;
    d->n = 6;
    d->tile_m = 2;
    d->tile_n = 4;
    d->comm_workers = 1;
    d->gemm_workers = 2;
}

#endif /* AGMM_TESTS_API_DESC_H */
