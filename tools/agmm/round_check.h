/* `agmm run`'s check of one round (round_check.c): every weight's C of
 * this rank against the reference of the round's inputs, regenerated from
 * the seeds (allclose rtol RTOL, atol ATOL; int8: check_int8.h; a
 * quantized weight: check_wq.h; an epilogue: epilogue_check.h), and the
 * hash gemm-ar's ranks compare C's bytes with. */
#ifndef AGMM_TOOL_ROUND_CHECK_H
#define AGMM_TOOL_ROUND_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "check_int8.h"
#include "tool.h"

#define RTOL 1e-2
#define ATOL 1e-2

typedef struct round_result {
    double seconds;
    double max_abs_diff;
    int64_t mismatches;  /* elements outside allclose */
    int64_t first_bad;   /* flat index of the first one, -1 if none */
    int bad_weight;      /* several weights: the one first_bad is in */
    agmm_int8_check_t q; /* int8: the bound's worst ratio, quant error */
    uint64_t c_hash;     /* gemm-ar: FNV-1a of C's bytes */
} round_result_t;

/* FNV-1a of the bytes of C ([rows, n] of the output dtype). */
uint64_t agmm_tool_c_hash(const void *c, int64_t elems, size_t esize);

/* Compare every weight's C with the reference of this round (this round's
 * rows: the first m_rows[p] rows of each shard); fills max diff (over the
 * weights) and mismatches (first_bad: of the first weight that has one,
 * whose index goes to *bad_weight). Returns 0, or 1 if the reference could
 * not be computed. */
int agmm_tool_check_round(agmm_tool_rank_t *t, int round, round_result_t *res,
                          int *bad_weight);

#endif
