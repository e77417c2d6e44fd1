/* The CBLAS binding (gemm.h, agmm_ext.h): fp32 sgemm on the calling thread,
 * the BLAS's thread setting, and the BLAS's name, kernel and thread count
 * for reports. Its readers are the OpenBLAS engine (gemm_openblas.c), the
 * reference (check/reference.c), wq's library GEMM (wq/libgemm.c), the
 * kernel advice (blas_advice.c) and the reports. AGMM_HAVE_OPENBLAS is
 * defined by the build when the CBLAS is OpenBLAS, which can also name its
 * kernel and set its thread count; any other CBLAS is AGMM_BLAS_NAME. */
#include <cblas.h>

#include "agmm_ext.h"
#include "gemm/gemm.h"

#ifdef AGMM_HAVE_OPENBLAS
/* Declared by OpenBLAS's cblas.h on most installs; repeated for those that
 * don't. */
extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);
extern void openblas_set_num_threads(int num_threads);
extern int openblas_get_num_threads(void);
#endif

void agmm_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n,
                (int)k, 1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}

void agmm_blas_init(void)
{
#ifdef AGMM_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
}

const char *agmm_blas_name(void)
{
#ifdef AGMM_HAVE_OPENBLAS
    static char name[96];
    if (!name[0]) {
        /* openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." */
        const char *cfg = openblas_get_config();
        int words = 0, i = 0;
        for (; cfg[i] && i < (int)sizeof name - 1; i++) {
            if (cfg[i] == ' ' && ++words == 2) break;
            name[i] = cfg[i];
        }
        name[i] = 0;
    }
    return name;
#else
    return AGMM_BLAS_NAME;
#endif
}

const char *agmm_blas_kernel(void)
{
#ifdef AGMM_HAVE_OPENBLAS
    return openblas_get_corename();
#else
    return "unknown";
#endif
}

int agmm_blas_threads(void)
{
#ifdef AGMM_HAVE_OPENBLAS
    return openblas_get_num_threads();
#else
    return -1;
#endif
}
