/* The GEMM attributes' epilogue as a pass over a finished fp32 tile, for
 * engines that cannot fuse it (gemm_openblas.c): the formula of
 * agmm_gemm_attr_t (engine.h) after the product. */
#ifndef AGMM_GEMM_EPILOGUE_H
#define AGMM_GEMM_EPILOGUE_H

#include <stdint.h>

#include "gemm/engine.h"

/* The activation of x in fp32 (NONE: x). */
float agmm_gemm_act_f32(agmm_gemm_act_t act, float x);

/* For i < m, j < ncols, with p = acc[i*ldacc + j] (fp32, the sum over k):
 *   v = p * w_scale[j] * a_scale[i]   (each factor when given)
 *   v = v + bias[j]                   (when given)
 *   v = v + C_old[i,j]                (attr->accumulate; C_old read from c
 *                                      in attr->c_dtype, widened exactly)
 *   C[i,j] = act(v), rounded to attr->c_dtype (c's row stride ldc).
 * Each step is one fp32 operation, so accumulate alone adds the finished
 * product to C_old with one rounding. acc is scratch the pass may
 * overwrite; acc == c is allowed when c_dtype is FP32 and ldacc == ldc
 * (no accumulate: C_old would be the product). */
void agmm_gemm_epilogue(const agmm_gemm_attr_t *attr, int64_t m, int64_t ncols,
                        float *acc, int64_t ldacc, const float *a_scale,
                        const float *w_scale, const float *bias, void *c,
                        int64_t ldc);

#endif /* AGMM_GEMM_EPILOGUE_H */
