/* `agmm run`'s check of a round with a quantized weight (--weight-dtype
 * int8|int4; check_wq.c): every rank's C against the product of its A
 * and the weight dequantized exactly from the plain layout the ranks were
 * given (check/wq_ref.h's value, sums in double), within
 *   |c - ref| <= gamma(2 max(G, K) + 16 + P) * sum_k |a| |s| (|q - z| + 2|z|
 *                + 16 + O) + 2^-24 |ref|,  gamma(n) = n 2^-24 / (1 - n 2^-24)
 * (G the group, K the inner dimension, P the ranks, O = 256 for int4 and
 * 0 for int8 (256 for symmetric int8 with --a-quant int8): the kernels'
 * fp32 group sums, zero term and scaling,
 * wq_ref.h's bound (an int4 kernel may sum u + 128, zero + 128), with gemm-rs's
 * and gemm-ar's P fp32 partials summed; s, q, z each element's scale, stored
 * value and zero point; 2^-24 |ref|: the reference's own rounding to
 * fp32), plus the epilogue's allowance (epilogue_check.h) on top; and
 * when the plan's GEMM multiplies bf16 panels of the dequantized weight
 * (the wq engine's prefill path: its impl says "bf16 panels"), each
 * weight value rounded to bf16 once more: + (2^-8 + 2^-23) sum_k |a| |s|
 * |q - z|. With --a-quant int8, A is first quantized per row as the
 * library's A8 kernels do (check/wq_ref.h's agmm_wq_ref_quantize_a, the
 * same float steps, so the same integers: per rank's k part for gemm-rs
 * and gemm-ar), and a is those values. */
#ifndef AGMM_TOOL_CHECK_WQ_H
#define AGMM_TOOL_CHECK_WQ_H

#include "tool.h"

/* The bound in words, for the check line and the JSON. */
#define AGMM_WQ_BOUND_TEXT                                                     \
    "gamma(2max(G,K)+16+P)*sum|a||s|(|q-z|+2|z|+16+O)+2^-24|ref|"              \
    "[O=256 int4 (and int8 sym with a-quant int8), 0 int8]"                    \
    "[+(2^-8+2^-23)*sum|a||s||q-z| with bf16 panels]"

/* This rank's outputs of round `round` (every weight; gemm-rs: its rows).
 * Fills *max_abs_diff, *mismatches, *first_bad (flat index; gemm-rs: into
 * this rank's rows), *bad_weight and *worst (max |c - ref| / bound).
 * Returns 0, or 1 if the reference could not be computed (said). */
int agmm_tool_check_wq(const agmm_tool_rank_t *t, int round,
                       double *max_abs_diff, int64_t *mismatches,
                       int64_t *first_bad, int *bad_weight, double *worst);

#endif
