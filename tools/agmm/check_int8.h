/* `agmm run`'s check of an int8 (W8A8) round (check_int8.c): every
 * rank's C against the exact int8 oracles, within a bound of a few fp32
 * roundings, and, as information, the quantization error against the fp32
 * product of the inputs before they were quantized. */
#ifndef AGMM_TOOL_CHECK_INT8_H
#define AGMM_TOOL_CHECK_INT8_H

#include "tool.h"

/* The bound of each element of C (|c - ref| <= it passes):
 *   ag-gemm: AGMM_INT8_AG_ULPS * 2^-24 * |ref| + 1e-30 (the scaling's fp32
 *            roundings of an exact int32 sum);
 *   gemm-rs, gemm-ar: (P + 3) * 2^-24 * sum_r |partial_r| (P fp32
 *            partials summed, each rank's exact partial_r from the oracle
 *            with that rank). */
#define AGMM_INT8_AG_ULPS 4
#define AGMM_INT8_AG_ABS  1e-30

typedef struct agmm_int8_check {
    double worst; /* max over elements of |c - ref| / its bound */
    /* against the fp32 product of the unquantized inputs (C32): max
     * |c - c32|, max |c32|, sum (c - c32)^2, sum c32^2 */
    double q_max_diff, q_max_ref, q_sq_diff, q_sq_ref;
} agmm_int8_check_t;

/* This rank's outputs of round `round` (its inputs regenerated from the
 * seeds as every rank made them; ag-gemm: every weight, and the gathered
 * A and its scales when handed back). Fills *max_abs_diff, *mismatches,
 * *first_bad (flat index; gemm-rs: into this rank's rows), *bad_weight and
 * *q. Returns 0, or 1 if a reference could not be computed (said). */
int agmm_tool_check_int8(const agmm_tool_rank_t *t, int round,
                         double *max_abs_diff, int64_t *mismatches,
                         int64_t *first_bad, int *bad_weight,
                         agmm_int8_check_t *q);

#endif
