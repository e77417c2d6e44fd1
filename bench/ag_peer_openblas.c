/* agmm_ag_peer's OpenBLAS engine: the gathered A converted to fp32 (fp16,
 * bf16; agmm's AVX2+F16C conversion) and one cblas_sgemm against the
 * weight converted to fp32 once. OpenBLAS packs the weight inside every
 * call; that is part of what a round costs. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_peer.h"
#include "gemm/convert.h"

#ifdef AGMM_HAVE_OPENBLAS
extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);
extern void openblas_set_num_threads(int num_threads);
#endif

typedef struct blas_state {
    agmm_dtype_t dt;
    int64_t m, k, n;
    float *w;   /* [K, N] fp32 */
    float *a32; /* [M, K] fp32, NULL for fp32 input */
} blas_state_t;

static int blas_run(ag_engine_t *e, const void *a, float *c)
{
    blas_state_t *s = e->state;
    const float *a32 = a;
    if (s->a32) {
        agmm_convert_to_f32(s->dt, a, s->a32, (size_t)(s->m * s->k));
        a32 = s->a32;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->m, (int)s->n,
                (int)s->k, 1.0f, a32, (int)s->k, s->w, (int)s->n, 0.0f, c,
                (int)s->n);
    return 0;
}

static void blas_destroy(ag_engine_t *e)
{
    blas_state_t *s = e->state;
    if (s) {
        free(s->w);
        free(s->a32);
        free(s);
    }
    e->state = NULL;
}

int ag_engine_openblas(ag_engine_t *e, agmm_dtype_t dt, int64_t M, int64_t K,
                       int64_t N, const void *w)
{
    memset(e, 0, sizeof *e);
    blas_state_t *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    e->state = s;
    e->run = blas_run;
    e->destroy = blas_destroy;
    s->dt = dt;
    s->m = M;
    s->k = K;
    s->n = N;
    s->w = malloc((size_t)(K * N) * sizeof(float));
    if (!s->w) goto oom;
    agmm_convert_to_f32(dt, w, s->w, (size_t)(K * N)); /* once */
    if (dt != AGMM_DTYPE_FP32) {
        s->a32 = malloc((size_t)(M * K) * sizeof(float) + 1);
        if (!s->a32) goto oom;
    }
#ifdef AGMM_HAVE_OPENBLAS
    openblas_set_num_threads(1);
    /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ...": the first two words */
    const char *cfg = openblas_get_config();
    size_t i = 0;
    for (int words = 0; cfg[i] && i < sizeof e->name - 1; i++) {
        if (cfg[i] == ' ' && ++words == 2) break;
        e->name[i] = cfg[i];
    }
    e->name[i] = 0;
    snprintf(e->impl, sizeof e->impl, "%s", openblas_get_corename());
#else
    snprintf(e->name, sizeof e->name, "CBLAS");
    snprintf(e->impl, sizeof e->impl, "unknown");
#endif
    if (dt == AGMM_DTYPE_FP32)
        snprintf(e->what, sizeof e->what,
                 "one cblas_sgemm (weight packed inside the call)");
    else
        snprintf(e->what, sizeof e->what,
                 "convert %s -> fp32 (%s) + one cblas_sgemm (weight converted "
                 "to fp32 once, packed inside the call)",
                 agmm_dtype_name(dt), agmm_convert_path());
    return 0;
oom:
    fprintf(stderr, "agmm_ag_peer: out of memory for the OpenBLAS engine\n");
    blas_destroy(e);
    return -1;
}
