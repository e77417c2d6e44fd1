/* The GEMM path probe (path_probe.h): one candidate's calls timed on a
 * weight slice, the per-process cache of measurements, and the tests' hook
 * that replaces the measurement (agmm_path_set_probe). Used by path.c's
 * choice and path_bf16w.c's candidate; calls neither. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "ops/common/path.h"
#include "ops/common/path_probe.h"

/* ------------------------------------------------------------ the probe */

enum { CACHE = 32 };
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    probe_key_t key;
    probe_result_t res;
} cache[CACHE];
static int ncache;

int agmm_path_cache_find(const probe_key_t *k, probe_result_t *out)
{
    pthread_mutex_lock(&cache_lock);
    int found = 0;
    for (int i = 0; i < ncache && !found; i++)
        if (!memcmp(&cache[i].key, k, sizeof *k)) {
            *out = cache[i].res;
            found = 1;
        }
    pthread_mutex_unlock(&cache_lock);
    return found;
}

void agmm_path_cache_add(const probe_key_t *k, const probe_result_t *r)
{
    pthread_mutex_lock(&cache_lock);
    int i = ncache < CACHE ? ncache++ : (int)(k->k % CACHE); /* full: evict */
    cache[i].key = *k;
    cache[i].res = *r;
    pthread_mutex_unlock(&cache_lock);
}

/* The best of three timed calls of f after one untimed (us). */
static double best_of_3(agmm_status_t (*f)(void *), void *ctx,
                        agmm_status_t *st)
{
    double best = INFINITY;
    for (int i = 0; i < 4 && *st == AGMM_OK; i++) {
        double t0 = agmm_now();
        *st = f(ctx);
        double us = (agmm_now() - t0) * 1e6;
        if (i > 0 && us < best) best = us;
    }
    return best;
}

typedef struct call_ctx {
    const agmm_gemm_engine_t *e;
    agmm_gemm_prep_t *prep;
    int64_t rows, k;
    agmm_dtype_t dt;
    void *a, *c, *scratch, *a16;
    float *a_scale;             /* INT8: [rows] */
    const unsigned char *evict; /* bf16w_choose: read before each call */
    size_t evict_bytes;
} call_ctx_t;

static agmm_status_t one_call(void *arg)
{
    call_ctx_t *x = arg;
    return x->e->run(x->prep, x->rows, x->a, x->a_scale, x->c, x->scratch);
}

/* A call with the weight out of the caches (bf16w_choose): the best of
 * three after one untimed, each after reading x->evict (twice the largest
 * cache) so the slice streams from memory, as a decode step's weights do
 * (us). */
static double best_of_3_cold(call_ctx_t *x, agmm_status_t *st)
{
    double best = INFINITY;
    volatile unsigned char sink = 0;
    for (int i = 0; i < 4 && *st == AGMM_OK; i++) {
        unsigned char acc = 0;
        for (size_t j = 0; j < x->evict_bytes; j += 64)
            acc ^= x->evict[j];
        sink ^= acc;
        double t0 = agmm_now();
        *st = one_call(x);
        double us = (agmm_now() - t0) * 1e6;
        if (i > 0 && us < best) best = us;
    }
    (void)sink;
    return best;
}

static agmm_status_t one_conversion(void *arg)
{
    call_ctx_t *x = arg;
    agmm_convert_to_f32(x->dt, x->a16, x->a, (size_t)(x->rows * x->k));
    return AGMM_OK;
}

/* Time one candidate for key k into r: 0 native, 1 f32; INT8: 0 s8 x s8,
 * 1 u8 x s8 (A shifted, with the compensation: engine.h's s8_as_u8),
 * both with unit scales. */
agmm_status_t agmm_path_probe(const agmm_gemm_engine_t *e,
                              const probe_key_t *key, int64_t cols, int f32,
                              probe_result_t *r, const unsigned char *evict,
                              size_t evict_bytes)
{
    agmm_dtype_t dt = key->dtype;
    int int8 = dt == AGMM_DTYPE_INT8;
    agmm_gemm_attr_t attr;
    agmm_gemm_attr_init(&attr, f32 && !int8 ? AGMM_DTYPE_FP32 : dt, dt);
    attr.a_scale = attr.w_scale = int8;
    attr.s8_as_u8 = int8 && f32;
    if (int8) f32 = 0; /* no conversion: the shift is the engine's */
    int variant = attr.s8_as_u8 || attr.a_dtype != dt;
    int64_t rows = key->rows, k = key->k;
    agmm_gemm_shape_t shape = {.k = k,
                               .ncols = cols,
                               .ldw = cols,
                               .lda = k,
                               .ldc = cols,
                               .rows = &rows,
                               .nrows = 1};
    call_ctx_t x = {e,    NULL, rows, k,    dt,    NULL,
                    NULL, NULL, NULL, NULL, evict, evict_bytes};
    float *ones = agmm_alloc(sizeof(float) * (size_t)(AGMM_MAX(rows, cols)));
    for (int64_t i = 0; ones && i < AGMM_MAX(rows, cols); i++)
        ones[i] = 1.0f;
    x.a_scale = int8 ? ones : NULL;
    void *w = agmm_alloc((size_t)(k * cols) * agmm_dtype_size(dt));
    x.a = agmm_alloc((size_t)(rows * k) * agmm_dtype_size(attr.a_dtype));
    x.c = agmm_alloc((size_t)(rows * cols) * sizeof(float));
    x.a16 = f32 ? agmm_alloc((size_t)(rows * k) * agmm_dtype_size(dt)) : NULL;
    agmm_status_t st =
        w && x.a && x.c && ones && (!f32 || x.a16)
            ? e->prepare(&shape, &attr, NULL, &x.prep)
            : agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory for the GEMM "
                                             "path probe");
    agmm_gemm_operand_t op = {
        .w = w, .bias = NULL, .w_scale = int8 ? ones : NULL};
    if (st == AGMM_OK) st = e->load(x.prep, &op);
    if (st == AGMM_OK && e->scratch_bytes(x.prep) > 0 &&
        !(x.scratch = agmm_alloc(e->scratch_bytes(x.prep))))
        st = agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    double call = st != AGMM_OK ? INFINITY
                  : evict       ? best_of_3_cold(&x, &st)
                                : best_of_3(one_call, &x, &st);
    double conv =
        f32 && st == AGMM_OK ? best_of_3(one_conversion, &x, &st) : 0.0;
    if (st == AGMM_OK) {
        r->call_us[variant] = call;
        r->conv_us[variant] = conv;
        r->gflops[variant] =
            2e-3 * (double)rows * (double)k * (double)cols / call;
        snprintf(r->impl[variant], sizeof r->impl[variant], "%s",
                 e->impl(x.prep));
    }
    if (x.prep) e->destroy(x.prep);
    agmm_free(x.scratch);
    agmm_free(x.a16);
    agmm_free(x.c);
    agmm_free(x.a);
    agmm_free(w);
    agmm_free(ones);
    return st;
}

/* ------------------------------------------------------------ test hook */

/* Test hook (agmm_path_set_probe, path.h): replaces the measurement. */
static agmm_path_probe_fn probe_override;

void agmm_path_set_probe(agmm_path_probe_fn fn)
{
    probe_override = fn;
}

agmm_path_probe_fn agmm_path_probe_hook(void)
{
    return probe_override;
}

int agmm_path_probe_overridden(void)
{
    return probe_override != NULL;
}
