/* The engine side of a plan (gemm_plan.c, gemm_load.c): its prepared
 * segments, their estimate and preparation, the weights loaded into them
 * and the GEMM calls of the schedules. */
#ifndef AGMM_OPS_GEMM_PLAN_H
#define AGMM_OPS_GEMM_PLAN_H

#include <stdint.h>

#include "ops/common/plan.h"

struct agmm_worker_share;

/* The engine side of the plan (gemm_plan.c). segments: the column
 * segments of the plan's worker groups and weights (part of the layout,
 * before booking; seg may be NULL to count them). estimate: the engine's
 * bytes for every segment's prepared weight and each worker's scratch,
 * as prepare will allocate them. prepare: the engine for every segment
 * and row count. load: weight i's values into its segments. */
int agmm_plan_segments(const agmm_plan_t *p, agmm_gemm_seg_t *seg,
                       int *seg_off);
agmm_status_t agmm_plan_engine_estimate(const agmm_plan_t *p, uint64_t *weights,
                                        uint64_t *scratch);
agmm_status_t agmm_plan_engine_prepare(agmm_plan_t *p);
/* Weight i; w_scale: INT8's [n_i] per-column scales, else NULL. A
 * quantized plan's: w, w_scale, zeros its plain layout's q, scales, zeros. */
agmm_status_t agmm_plan_engine_load_i(agmm_plan_t *p, int i, const void *w,
                                      const float *w_scale,
                                      const uint8_t *zeros);
/* Weight i's bias (p->bias) into the segments whose engine call adds it
 * (engine load_bias), after agmm_plan_set_bias copied it. */
agmm_status_t agmm_plan_engine_load_bias(agmm_plan_t *p, int i);
/* Bytes of the engine's prepared weights of this plan (as allocated). */
uint64_t agmm_plan_engine_bytes(const agmm_plan_t *p);
void agmm_plan_engine_free(agmm_plan_t *p);

/* C rows [r0, r0 + m) (global rows, of c) over the columns of worker share
 * s, from m rows `a` in gemm_dtype (leading dimension: the engine's lda,
 * agmm_plan_lda), for every weight: c[i] is weight i's output ([rows,
 * n_i]; elements of out_dtype with the epilogue for an operation whose
 * GEMM calls carry it, op.h epilogue_in_gemm, else fp32). INT8: a_scale
 * is the rows' scales (stride: agmm_plan_gemm's shape, 1, or row_bytes /
 * 4 when they are in the rows: agmm_plan_row_scales), else NULL. */
agmm_status_t agmm_plan_gemm_all(agmm_plan_t *p,
                                 const struct agmm_worker_share *s, int64_t r0,
                                 int64_t m, const void *a, const float *a_scale,
                                 void *const *c);
/* The same for a plan of one weight: C = A @ W, and (an operation that
 * accumulates, op.h) C += A @ W; c fp32 (the operation's calls carry no
 * epilogue). */
agmm_status_t agmm_plan_gemm(agmm_plan_t *p, const struct agmm_worker_share *s,
                             int64_t r0, int64_t m, const void *a,
                             const float *a_scale, float *c);
agmm_status_t agmm_plan_gemm_acc(agmm_plan_t *p,
                                 const struct agmm_worker_share *s, int64_t r0,
                                 int64_t m, const void *a, const float *a_scale,
                                 float *c);

#endif
