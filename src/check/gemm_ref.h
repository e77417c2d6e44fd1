/*
 * Reference GEMM: the oracle the tests trust. Plain loops, double
 * accumulation, no BLAS.
 */
#ifndef AGMM_CHECK_GEMM_REF_H
#define AGMM_CHECK_GEMM_REF_H

#include <stdint.h>

/* C = A @ B, row-major: A is m x k (row stride lda), B is k x n (ldb),
 * C is m x n (ldc), overwritten. Each element is summed in double and
 * rounded to float once. Nothing is done when m <= 0 or n <= 0; with
 * k <= 0, C is set to zero. */
void agmm_gemm_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc);

#endif /* AGMM_CHECK_GEMM_REF_H */
