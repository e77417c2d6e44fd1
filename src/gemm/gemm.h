/* The CBLAS binding (blas.c): fp32 sgemm on the calling thread
 * and the BLAS's thread setting, used by the OpenBLAS engine (engine.h)
 * and by the reference all-gather-GEMM (check/reference.c). OpenBLAS by
 * default; any CBLAS can be swapped in at build time (CMakeLists.txt). The
 * tile GEMM engines themselves are in engine.h. */
#ifndef AGMM_GEMM_H
#define AGMM_GEMM_H

#include <stdint.h>

/* C[m, n] = A[m, k] * B[k, n], row-major with leading dimensions. Called
 * concurrently from several worker threads; each call runs on the calling
 * thread only (the BLAS is told to use one thread, see agmm_blas_init). */
void agmm_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc);

/* Make the BLAS single-threaded: agmm's workers are the parallelism. Call
 * before forking ranks and before the first GEMM. Idempotent. */
void agmm_blas_init(void);

#endif
