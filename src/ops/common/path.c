/* The GEMM path of a plan (agmm_gemm_path_t): which paths the engine has
 * for the plan's dtype, and, for AGMM_GEMM_PATH_AUTO, the measurement that
 * picks one at plan creation.
 *
 * The measurement (each rank, on the thread that creates the plan, which
 * is its GEMM worker 0's): for each candidate, one prepared weight slice
 * of the plan's inner dimension and up to 256 columns (512 for a call of
 * at most 32 rows, whose weight streaming matters more than its compute),
 * one warm-up call and three timed ones at the plan's usual call rows (a
 * tile, or all its rows when fewer), the best of them; for the fp32 path
 * also the conversion of those rows to fp32, which a round does once per
 * row whatever the columns. The round's predicted GEMM time is then
 * rows/call x (call x columns/slice + conversion). The inputs are zeros:
 * a GEMM's speed does not depend on the values, except for subnormals,
 * which zeros are not.
 *
 * Agreement: every rank allgathers its two predicted times (native, f32;
 * +inf for a path it does not have, or whose booking does not fit in this
 * host's available memory over the ranks sharing it), and every rank
 * picks the path whose
 * slowest rank is fastest (a tie goes to native: fewer bytes), so every
 * rank computes the same way from the same numbers. The allgather happens
 * for every AUTO plan of a 16-bit dtype, measured or not, so that every
 * rank makes the same collective calls.
 *
 * Cache: per process, keyed by (engine, dtype, k, columns, call rows): a
 * plan whose shape was measured before times nothing. Guarded by a mutex
 * (plans are created by one thread per world, but a process may hold
 * several worlds). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/engine_list.h"
#include "ops/common/book.h"
#include "ops/common/path_probe.h"
#include "ops/common/plan_internal.h"

const char *agmm_gemm_path_name(agmm_gemm_path_t path)
{
    switch (path) {
    case AGMM_GEMM_PATH_AUTO:
        return "auto";
    case AGMM_GEMM_PATH_NATIVE:
        return "native";
    case AGMM_GEMM_PATH_F32:
        return "f32";
    }
    return "invalid";
}

int agmm_path_has_native(const agmm_gemm_engine_t *e, agmm_dtype_t dt)
{
    return dt != AGMM_DTYPE_FP32 && e->input_dtype(dt) == dt;
}

int agmm_gemm_path_available(agmm_gemm_engine_kind_t kind, agmm_dtype_t dtype,
                             agmm_gemm_path_t path)
{
    const agmm_gemm_engine_t *e = agmm_gemm_engine_get(kind);
    if (!e || agmm_dtype_size(dtype) == 0) return 0;
    if (dtype == AGMM_DTYPE_INT8) /* integer dot products or nothing */
        return (path == AGMM_GEMM_PATH_AUTO || path == AGMM_GEMM_PATH_NATIVE) &&
               agmm_path_has_native(e, dtype);
    if (path == AGMM_GEMM_PATH_AUTO || path == AGMM_GEMM_PATH_F32) return 1;
    return path == AGMM_GEMM_PATH_NATIVE &&
           (dtype == AGMM_DTYPE_FP32 || agmm_path_has_native(e, dtype));
}

agmm_dtype_t agmm_path_gemm_dtype(agmm_dtype_t dt, agmm_gemm_path_t path)
{
    return path == AGMM_GEMM_PATH_NATIVE ? dt : AGMM_DTYPE_FP32;
}

agmm_status_t agmm_path_check(const agmm_plan_desc_t *d,
                              const agmm_gemm_engine_t *e)
{
    agmm_gemm_path_t path = d->gemm_path;
    if (path != AGMM_GEMM_PATH_AUTO && path != AGMM_GEMM_PATH_NATIVE &&
        path != AGMM_GEMM_PATH_F32)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: gemm_path %d is not valid (allowed: auto, "
                          "native, f32)",
                          (int)path);
    if (d->dtype == AGMM_DTYPE_INT8 && !agmm_path_has_native(e, d->dtype))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: dtype int8 needs exact int8 products, which "
                          "the %s engine does not have here: %s",
                          e->name, e->why_not_native(d->dtype));
    if (d->dtype == AGMM_DTYPE_INT8 && path == AGMM_GEMM_PATH_F32)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: gemm_path f32 with dtype int8 (int8 runs "
                          "on integer dot products; allowed: auto, native)");
    if (path == AGMM_GEMM_PATH_NATIVE && d->dtype != AGMM_DTYPE_FP32 &&
        !agmm_path_has_native(e, d->dtype))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: gemm_path native: the %s engine has no "
                          "native %s kernel on this CPU (allowed here: auto, "
                          "f32)",
                          e->name, agmm_dtype_name(d->dtype));
    return AGMM_OK;
}

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

/* ------------------------------------------------------------ memory */

/* What this host's memory allows one rank: MemAvailable over the ranks
 * that share it (a shared-memory world: all of them; under MPI the count
 * per host is not known here: this rank alone). 0: unknown, no limit. */
static uint64_t memory_limit(const agmm_plan_t *p)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
    fclose(f);
    int here =
        strcmp(agmm_world_transport_name(p->world), "shm") ? 1 : p->nranks;
    return (uint64_t)kib * 1024u / (uint64_t)here;
}

/* The bytes this rank's plan books on `path` (0 on failure). */
static uint64_t bytes_on(agmm_plan_t *p, agmm_gemm_path_t path)
{
    agmm_book_t b;
    agmm_plan_set_path(p, path);
    return agmm_plan_book(p, &b) == AGMM_OK ? agmm_book_total(&b) : 0;
}

/* ------------------------------------------------------------ choosing */

/* Test hook (agmm_path_set_probe, plan_internal.h): replaces the
 * measurement. */
static agmm_path_probe_fn probe_override;

void agmm_path_set_probe(agmm_path_probe_fn fn)
{
    probe_override = fn;
}

int agmm_path_decide(const double *round_us, int nranks)
{
    double worst[2] = {0, 0};
    for (int r = 0; r < nranks; r++)
        for (int i = 0; i < 2; i++)
            worst[i] = AGMM_MAX(worst[i], round_us[2 * r + i]);
    return worst[1] < worst[0] ? 1 : 0; /* a tie: native */
}

int agmm_path_probe_overridden(void)
{
    return probe_override != NULL;
}

agmm_status_t agmm_path_choose(agmm_plan_t *p, const agmm_plan_desc_t *d,
                               int ok)
{
    const agmm_gemm_engine_t *e = p->engine;
    agmm_path_choice_t *c = &p->choice;
    memset(c, 0, sizeof *c);
    int native = agmm_path_has_native(e, d->dtype);
    /* INT8 has one path (native: path_check) and, on it, two variants to
     * measure: s8 x s8, and A shifted to u8 with the compensation (their
     * results are the same bits); a forced native takes s8 x s8. */
    int int8 = d->dtype == AGMM_DTYPE_INT8;
    p->int8_u8 = 0;
    if (int8 && d->gemm_path != AGMM_GEMM_PATH_AUTO) {
        c->by = "forced";
        p->path = AGMM_GEMM_PATH_NATIVE;
        return AGMM_OK;
    }
    /* A quantized weight: the wq kernels read the dtype itself (they
     * widen A's rows to fp32 in their own scratch), so AUTO is native, not
     * measured (every rank has the same description: no allgather). */
    if (d->weight_dtype != AGMM_WDTYPE_SAME &&
        d->gemm_path == AGMM_GEMM_PATH_AUTO) {
        c->by = "only";
        p->path = d->dtype == AGMM_DTYPE_FP32 ? AGMM_GEMM_PATH_F32
                                              : AGMM_GEMM_PATH_NATIVE;
        return AGMM_OK;
    }
    if (d->gemm_path != AGMM_GEMM_PATH_AUTO || d->dtype == AGMM_DTYPE_FP32) {
        c->by = d->gemm_path == AGMM_GEMM_PATH_AUTO ? "only" : "forced";
        p->path =
            d->dtype == AGMM_DTYPE_FP32 ? AGMM_GEMM_PATH_F32 : d->gemm_path;
        return AGMM_OK;
    }
    /* The call every round makes most: a tile, or all rows when fewer. */
    probe_key_t key = {e->kind, d->dtype, p->k_gemm, 0,
                       AGMM_MIN(d->tile_m, AGMM_MAX(p->max_rows, 1))};
    for (int i = 0; ok && i < p->nw; i++)
        key.ncols += p->n_w[i];
    probe_result_t res = {{INFINITY, INFINITY}, {0, 0}, {0, 0}, {"", ""}};
    double t0 = agmm_now();
    agmm_status_t st = AGMM_OK;
    if (!ok) { /* no geometry: only the allgather (then the failure) */
        c->by = "only";
        st = AGMM_ERR_NO_MEMORY;
    } else if (key.k == 0) { /* no GEMM here: no preference */
        c->by = "only";
        res.call_us[0] = res.call_us[1] = 0;
    } else if (!native) { /* still in the allgather below, as every rank */
        c->by = "only";
        res.call_us[1] = 0;
    } else if (agmm_path_cache_find(&key, &res)) {
        c->by = "cached";
    } else {
        c->by = "measured";
        int64_t cols = AGMM_MIN(key.ncols, key.rows <= 32 ? 512 : 256);
        for (int f32 = 0; f32 < 2 && st == AGMM_OK; f32++)
            st = probe_override
                     ? probe_override(p->rank, f32, &res.call_us[f32],
                                      &res.conv_us[f32])
                     : agmm_path_probe(e, &key, cols, f32, &res, NULL, 0);
        for (int f32 = 0; f32 < 2; f32++) /* per column: to the whole width */
            res.call_us[f32] *= (double)key.ncols / (double)cols;
        if (st == AGMM_OK && !probe_override) agmm_path_cache_add(&key, &res);
        c->ms = (agmm_now() - t0) * 1e3;
    }
    /* A path whose memory does not fit is no candidate (mine: +inf). The
     * exact bookings build engine descriptors: only when a bound that
     * needs none (the buffers without the engine, and twice an fp32 copy
     * of the weights for the engine) does not fit. */
    uint64_t limit = ok && strcmp(c->by, "only") && !int8 ? memory_limit(p) : 0;
    if (limit > 0) {
        uint64_t bound = agmm_plan_bytes_booked(d, 0);
        bound += 8u * (uint64_t)key.k * (uint64_t)key.ncols;
        if (bound > 0 && bound <= limit) limit = 0; /* both fit */
    }
    int fits[2] = {1, 1};
    for (int i = 0; i < 2 && limit > 0; i++) {
        uint64_t need =
            bytes_on(p, i ? AGMM_GEMM_PATH_F32 : AGMM_GEMM_PATH_NATIVE);
        fits[i] = need > 0 && need <= limit;
    }
    if (!fits[0] && !fits[1]) fits[0] = fits[1] = 1; /* the create fails */
    /* This rank's predicted GEMM time of one round per path. */
    double calls = (double)AGMM_DIV_UP(AGMM_MAX(p->M_max, 1), key.rows);
    double mine[2], *all = agmm_alloc(sizeof mine * (size_t)p->nranks);
    for (int i = 0; i < 2; i++)
        mine[i] = st == AGMM_OK && fits[i]
                      ? calls * (res.call_us[i] + res.conv_us[i])
                      : INFINITY;
    agmm_status_t st2 =
        all ? agmm_world_allgather(p->world, mine, all, sizeof mine)
            : agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    if (st == AGMM_OK) st = st2;
    if (!ok) st = AGMM_OK; /* the caller has the geometry's failure */
    if (st == AGMM_OK && ok) {
        int pick = agmm_path_decide(all, p->nranks);
        p->path = pick && !int8 ? AGMM_GEMM_PATH_F32 : AGMM_GEMM_PATH_NATIVE;
        p->int8_u8 = int8 && pick;
        c->n = strcmp(c->by, "only") ? 2 : 0;
        for (int i = 0; i < 2; i++) {
            double worst = 0, gf = INFINITY;
            for (int r = 0; r < p->nranks; r++)
                worst = AGMM_MAX(worst, all[2 * r + i]);
            c->round_us[i] = worst;
            if (res.call_us[i] > 0 && isfinite(res.call_us[i]))
                gf = 2e-3 * (double)key.rows * (double)key.k *
                     (double)key.ncols / res.call_us[i];
            c->gflops[i] = isfinite(gf) ? gf : 0;
            snprintf(c->impl[i], sizeof c->impl[i], "%s", res.impl[i]);
        }
    }
    agmm_free(all);
    /* bf16w (issue 48): agmm's bf16-weight kernel as a third candidate */
    if (d->dtype == AGMM_DTYPE_BF16 && d->weight_dtype == AGMM_WDTYPE_SAME &&
        d->gemm_engine == AGMM_GEMM_ENGINE_AUTO) {
        agmm_status_t st3 = agmm_path_bf16w_choose(
            p, &key, ok && st == AGMM_OK && c->n == 2, calls);
        if (st == AGMM_OK && ok) st = st3;
    }
    return st;
}
