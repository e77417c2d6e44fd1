/* The OpenBLAS/CBLAS engine (engine.h) and the CBLAS binding the
 * reference uses. AGMM_HAVE_OPENBLAS is defined by the build when the CBLAS
 * is OpenBLAS, which can also name its kernel and set its thread count.
 *
 * Its prepared weight is the fp32 copy of its column range (converted once
 * per set_weight); a run converts nothing itself: the schedules hand it
 * fp32 rows (converted per tile into the plan's g32, see ops/rows.c).
 * sgemm packs the weight again on every call, so few large calls win
 * (cheap_tile_calls = 0: the fused schedule coalesces). */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "agmm.h"
#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/engine.h"
#include "gemm/gemm.h"

#ifdef AGMM_HAVE_OPENBLAS
/* Declared by OpenBLAS's cblas.h on most installs; repeated for those that
 * don't. */
extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);
extern void openblas_set_num_threads(int num_threads);
extern int openblas_get_num_threads(void);
#endif

void agmm_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float *c,
                   int64_t ldc)
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

/* ------------------------------------------------------------- engine */

struct agmm_gemm_prep {
    agmm_gemm_shape_t shape; /* rows/nrows not kept */
    float *w;                /* [k, ncols] fp32, row stride ncols */
    char impl[64];
};

static const char *ob_version(void)
{
    const char *name = agmm_blas_name(); /* "OpenBLAS 0.3.21" */
    const char *sp = strchr(name, ' ');
    return sp ? sp + 1 : name;
}

static agmm_dtype_t ob_input_dtype(agmm_dtype_t dt)
{
    (void)dt;
    return AGMM_DTYPE_FP32;
}

static uint64_t ob_weight_bytes(agmm_dtype_t dt, int64_t k, int64_t ncols)
{
    (void)dt;
    return (uint64_t)k * (uint64_t)ncols * sizeof(float);
}

static agmm_status_t ob_prepare(const agmm_gemm_shape_t *s,
                                agmm_gemm_prep_t **out)
{
    agmm_gemm_prep_t *p = agmm_alloc(sizeof *p);
    if (!p) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    p->shape = *s;
    p->shape.rows = NULL;
    p->shape.nrows = 0;
    p->w = agmm_alloc((size_t)s->k * (size_t)s->ncols * sizeof(float));
    if (!p->w) {
        agmm_free(p);
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "gemm: out of memory for the fp32 weight");
    }
    snprintf(p->impl, sizeof p->impl, "sgemm:%s", agmm_blas_kernel());
    *out = p;
    return AGMM_OK;
}

static agmm_status_t ob_load(agmm_gemm_prep_t *p, const void *w)
{
    const agmm_gemm_shape_t *s = &p->shape;
    size_t es = agmm_dtype_size(s->dtype);
    const unsigned char *row = w;
    for (int64_t r = 0; r < s->k; r++, row += (size_t)s->ldw * es)
        agmm_convert_to_f32(s->dtype, row, p->w + (size_t)(r * s->ncols),
                            (size_t)s->ncols);
    return AGMM_OK;
}

static agmm_status_t ob_run(agmm_gemm_prep_t *p, int64_t m, const void *a,
                            float *c, void *scratch)
{
    (void)scratch;
    const agmm_gemm_shape_t *s = &p->shape;
    agmm_gemm_f32(m, s->ncols, s->k, a, s->lda, p->w, s->ncols, c, s->ldc);
    return AGMM_OK;
}

static size_t ob_scratch_bytes(const agmm_gemm_prep_t *p)
{
    (void)p;
    return 0;
}

static const char *ob_impl(const agmm_gemm_prep_t *p) { return p->impl; }

static void ob_destroy(agmm_gemm_prep_t *p)
{
    if (!p) return;
    agmm_free(p->w);
    agmm_free(p);
}

const agmm_gemm_engine_t agmm_gemm_engine_openblas = {
    .name = "openblas",
    .kind = AGMM_GEMM_ENGINE_OPENBLAS,
    .cheap_tile_calls = 0,
    .version = ob_version,
    .input_dtype = ob_input_dtype,
    .weight_bytes = ob_weight_bytes,
    .prepare = ob_prepare,
    .load = ob_load,
    .run = ob_run,
    .scratch_bytes = ob_scratch_bytes,
    .impl = ob_impl,
    .destroy = ob_destroy,
};
