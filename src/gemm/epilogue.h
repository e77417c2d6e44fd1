/* The GEMM attributes' epilogue as a pass over a finished tile, for
 * engines that cannot fuse it: fp32 sums (gemm_openblas.c, wq/engine.c,
 * wq/engine_bf16w.c, through agmm_gemm_epilogue_run) and exact int32 ones
 * (INT8, onednn/s8.c): the formula of agmm_gemm_attr_t (engine.h) after
 * the product, in one order for both. */
#ifndef AGMM_GEMM_EPILOGUE_H
#define AGMM_GEMM_EPILOGUE_H

#include <stdint.h>

#include "gemm/engine.h"

/* The instruction set of the pass's loops on this CPU, the clone the
 * loader took (epilogue.c): "x86-64-v4" (AVX-512 F, BW, VL, DQ, CD),
 * "x86-64-v3" (AVX2 with FMA), or "x86-64" (the baseline's loops; also where
 * the build has no clones: clang, sanitizers). */
const char *agmm_gemm_epilogue_isa(void);

/* The activation of x in fp32 (NONE: x). */
float agmm_gemm_act_f32(agmm_gemm_act_t act, float x);

/* For i < m, j < ncols, with p = acc[i*ldacc + j] (fp32, the sum over k):
 *   v = p * w_scale[j] * a_scale[i * ld_a_scale]  (each factor when given,
 *                                                  left to right; ld_a_scale
 *                                                  0 or 1: contiguous)
 *   v = v + bias[j]                   (when given)
 *   v = v + C_old[i,j]                (attr->accumulate; C_old read from c
 *                                      in attr->c_dtype, widened exactly)
 *   C[i,j] = act(v), rounded to attr->c_dtype (c's row stride ldc).
 * Each step is one fp32 operation, so accumulate alone adds the finished
 * product to C_old with one rounding. acc is only read (each block of a
 * row is copied before its steps), so acc == c is allowed when c_dtype is
 * FP32 and ldacc == ldc (no accumulate: C_old would be the product). */
void agmm_gemm_epilogue(const agmm_gemm_attr_t *attr, int64_t m, int64_t ncols,
                        const float *acc, int64_t ldacc, const float *a_scale,
                        int64_t ld_a_scale, const float *w_scale,
                        const float *bias, void *c, int64_t ldc);

/* The same for exact int32 sums (INT8, engine.h): p = (float)(acc[i*ldacc
 * + j] - comp[j]) (comp: the u8s8 compensation, or NULL for none), then
 * the steps above, in the same order. acc is only read and must not
 * overlap c. */
void agmm_gemm_epilogue_s32(const agmm_gemm_attr_t *attr, int64_t m,
                            int64_t ncols, const int32_t *acc, int64_t ldacc,
                            const int32_t *comp, const float *a_scale,
                            int64_t ld_a_scale, const float *w_scale,
                            const float *bias, void *c, int64_t ldc);

/* The gated pass (agmm.h: AGMM_ACT_SILU_MUL, GELU_TANH_MUL): for i < m,
 * j < ncols, with g = acc[i*ldacc + j] and u = acc[i*ldacc + ncols + j]
 * (each row's gate sums, then its up sums: fp32, already scaled, e.g. an
 * engine call over the paired columns), each step one fp32 operation:
 *   g = g + bias_gate[j]   (when given)
 *   g = act(g)             (attr->act: the gate's activation)
 *   u = u + bias_up[j]     (when given)
 *   C[i,j] = g * u, rounded once to attr->c_dtype (c's row stride ldc).
 * attr's accumulate and scales are not used (the sums come scaled). acc
 * is only read and must not overlap c. */
void agmm_gemm_epilogue_glu(const agmm_gemm_attr_t *attr, int64_t m,
                            int64_t ncols, const float *acc, int64_t ldacc,
                            const float *bias_gate, const float *bias_up,
                            void *c, int64_t ldc);

/* An engine's plain product (fp32 sums, no attribute) of rows r0 ..
 * r0 + m - 1 of its call into out (row stride ldo). */
typedef agmm_status_t (*agmm_gemm_product_fn)(void *ctx, int64_t r0, int64_t m,
                                              float *out, int64_t ldo);

/* Does a call of attr put its product through a scratch buffer (an
 * accumulate, whose C_old must survive the product; a bf16 / fp16 C)
 * rather than into C? */
int agmm_gemm_epilogue_via_scratch(const agmm_gemm_attr_t *attr);

/* A call of m rows (epilogue_run.c) for an engine whose kernel computes
 * the plain product (OpenBLAS, wq's quantized and bf16-weight kernels):
 * without via_scratch, fn writes C (fp32) and the pass runs in place when
 * there is anything to do (a scale, bias or act); with it, fn writes buf
 * (chunk x ncols fp32, the worker's scratch) chunk rows at a time and the
 * pass takes each chunk into C, adding C_old once to the finished
 * product. a_scale: row i's at a_scale[i * ld_a_scale] (ld_a_scale 0 or
 * 1: contiguous), or NULL; w_scale, bias: [ncols] or NULL. */
agmm_status_t agmm_gemm_epilogue_run(const agmm_gemm_attr_t *attr, int64_t m,
                                     int64_t ncols, agmm_gemm_product_fn fn,
                                     void *ctx, float *buf, int64_t chunk,
                                     const float *a_scale, int64_t ld_a_scale,
                                     const float *w_scale, const float *bias,
                                     void *c, int64_t ldc);

#endif /* AGMM_GEMM_EPILOGUE_H */
