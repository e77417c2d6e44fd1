/* Reference GEMM; see gemm_ref.h. */
#include "check/gemm_ref.h"

void agmm_gemm_ref(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++)
                acc += (double)a[i * lda + p] * (double)b[p * ldb + j];
            c[i * ldc + j] = (float)acc;
        }
    }
}
