/* The oneDNN engine (engine.h): oneDNN's matmul primitive on a weight
 * reordered once into the layout the primitive asks for (format_tag any).
 *
 * dtypes: bf16 tiles and weights are used as bf16 (bf16 x bf16 -> f32,
 * AVX512_BF16 / AMX where the CPU has them), fp32 as fp32. fp16 likewise
 * where this oneDNN has a non-reference f16 matmul on this CPU
 * (AVX512_FP16 / AMX-FP16; probed once: one primitive descriptor, no
 * primitive); else it is read as fp32: tiles converted by the caller
 * (input_dtype), the weight once here.
 *
 * Primitives: one per row count the plan will call (shape->rows), all made
 * in prepare, plus the weight's reorder. They share the weight layout of
 * the largest row count (a row count whose own choice differs is made with
 * that layout forced). A row count not given to prepare (a round with fewer
 * rows than the plan's most: agmm_run_args_t.m_rows) is created on demand,
 * under a lock, and counted like every creation (the tests assert the count
 * stays constant across rounds of the plan's rows), while fewer than
 * ON_DEMAND exist; beyond, such a call is split into powers of two, made
 * on demand in the POW2 slots kept for them (popcount(m) calls). A plan thus creates at most MAX_PRIMS
 * primitives per prepared weight in its life, whatever its rounds' rows.
 *
 * Threads: every call runs on its calling thread only. Debian's oneDNN
 * runs on OpenMP (libgomp), whose thread count is an ICV of each thread:
 * around every creation, reorder and run, the calling thread's count is
 * set to 1 and restored afterwards (two thread-local accesses; workers are
 * new threads each round, and worker 0 is the caller's own thread, whose
 * setting is the user's). Creation happens at 1 thread too, since some
 * implementations fix their parallel decomposition when created.
 * Concurrent runs of one primitive are safe with their own scratchpad
 * (user-managed: the caller's per-worker scratch), their own stream and
 * memory objects (made per call: small host objects, no primitive).
 */
#include <dnnl.h>
#include <dnnl_debug.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/engine.h"

/* libgomp's, linked explicitly (CMakeLists.txt): declared here so agmm
 * needs no -fopenmp (clang's would bring another OpenMP runtime). */
extern void omp_set_num_threads(int n);
extern int omp_get_max_threads(void);

enum { ON_DEMAND = 64, POW2 = 32, MAX_PRIMS = ON_DEMAND + POW2 };

typedef struct {
    int64_t m;
    dnnl_primitive_t prim;
} prim_entry_t;

struct agmm_gemm_prep {
    agmm_gemm_shape_t shape; /* rows/nrows not kept */
    dnnl_data_type_t dt;     /* compute dtype of A and W: bf16 or f32 */
    dnnl_memory_desc_t w_md; /* the prepared weight's layout */
    dnnl_memory_t w_mem;     /* owns the prepared weight */
    dnnl_memory_desc_t wsrc_md;
    dnnl_primitive_t reorder; /* user layout (wsrc_md) -> w_md */
    size_t scratch;           /* max scratchpad bytes over the primitives */
    size_t scratch_given;     /* what prepare told the caller to provide */
    char impl[128];
    /* Runs read prims[0, count) (acquire); additions append under `lock`,
     * then publish the count (release). */
    pthread_mutex_t lock;
    _Atomic int count;
    prim_entry_t prims[MAX_PRIMS];
};

static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;

static int g_f16_native; /* set once by engine_init */

/* Does a 16 x 64 x 64 f16 matmul get an implementation other than the
 * reference one? */
static int probe_f16(void)
{
    dnnl_memory_desc_t a, w, c;
    dnnl_dims_t ad = {16, 64}, wd = {64, 64};
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd;
    if (dnnl_memory_desc_init_by_tag(&a, 2, ad, dnnl_f16, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&w, 2, wd, dnnl_f16,
                                     dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&c, 2, ad, dnnl_f32, dnnl_ab) ||
        dnnl_matmul_desc_init(&md, &a, &w, NULL, &c) ||
        dnnl_primitive_desc_create(&pd, &md, NULL, g_engine, NULL))
        return 0;
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    int native = impl && strncmp(impl, "ref", 3) != 0;
    dnnl_primitive_desc_destroy(pd);
    return native;
}

static void engine_init(void)
{
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
    g_f16_native = g_engine_status == dnnl_success && probe_f16();
    omp_set_num_threads(saved);
}

static agmm_status_t fail(dnnl_status_t s, const char *what)
{
    return agmm_error(s == dnnl_out_of_memory   ? AGMM_ERR_NO_MEMORY
                      : s == dnnl_unimplemented ? AGMM_ERR_UNSUPPORTED
                                                : AGMM_ERR_SYSTEM,
                      "gemm: oneDNN %s failed: %s", what, dnnl_status2str(s));
}
#define DN(call, what)                                                         \
    do {                                                                       \
        dnnl_status_t s_ = (call);                                             \
        if (s_ != dnnl_success) return fail(s_, what);                         \
    } while (0)

/* This thread's OpenMP thread count to 1; returns the previous one for
 * restore_omp(). */
static int one_omp_thread(void)
{
    int saved = omp_get_max_threads();
    if (saved != 1) omp_set_num_threads(1);
    return saved;
}

static void restore_omp(int saved)
{
    if (saved != 1) omp_set_num_threads(saved);
}

static const char *dn_version(void)
{
    static char v[32];
    if (!v[0]) {
        const dnnl_version_t *d = dnnl_version();
        snprintf(v, sizeof v, "%d.%d.%d", d->major, d->minor, d->patch);
    }
    return v;
}

static agmm_dtype_t dn_input_dtype(agmm_dtype_t dt)
{
    if (dt != AGMM_DTYPE_FP16) return dt;
    pthread_once(&g_engine_once, engine_init);
    return g_f16_native ? dt : AGMM_DTYPE_FP32;
}

static uint64_t dn_weight_bytes(agmm_dtype_t dt, int64_t k, int64_t ncols)
{
    /* Blocked layouts pad columns to their block (<= 64) and bf16 rows to
     * pairs. */
    int half = dn_input_dtype(dt) != AGMM_DTYPE_FP32;
    uint64_t kk = (uint64_t)k + (half ? (uint64_t)k % 2 : 0);
    uint64_t nn = ((uint64_t)ncols + 63) / 64 * 64;
    return kk * nn * (half ? 2u : 4u);
}

/* The matmul of m rows; weights `wmd`, or NULL for the layout oneDNN
 * prefers. */
static agmm_status_t make_pd(const agmm_gemm_prep_t *p, int64_t m,
                             const dnnl_memory_desc_t *wmd,
                             dnnl_primitive_desc_t *pd)
{
    const agmm_gemm_shape_t *s = &p->shape;
    dnnl_memory_desc_t a_md, w_md, c_md;
    dnnl_dims_t a_dims = {m, s->k}, a_str = {s->lda, 1};
    dnnl_dims_t w_dims = {s->k, s->ncols};
    dnnl_dims_t c_dims = {m, s->ncols}, c_str = {s->ldc, 1};
    DN(dnnl_memory_desc_init_by_strides(&a_md, 2, a_dims, p->dt, a_str),
       "A desc");
    DN(dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, dnnl_f32, c_str),
       "C desc");
    if (wmd)
        w_md = *wmd;
    else
        DN(dnnl_memory_desc_init_by_tag(&w_md, 2, w_dims, p->dt,
                                        dnnl_format_tag_any),
           "W desc");
    dnnl_matmul_desc_t md;
    DN(dnnl_matmul_desc_init(&md, &a_md, &w_md, NULL, &c_md), "matmul desc");
    dnnl_primitive_attr_t attr;
    DN(dnnl_primitive_attr_create(&attr), "attr");
    dnnl_status_t st = dnnl_primitive_attr_set_scratchpad_mode(
        attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(pd, &md, attr, g_engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return fail(st, "matmul primitive descriptor");
    return AGMM_OK;
}

/* Create the primitive for m rows on the prepared weight layout and add it
 * (caller holds p->lock or owns p alone). */
static agmm_status_t add_prim(agmm_gemm_prep_t *p, int64_t m)
{
    int n = atomic_load_explicit(&p->count, memory_order_relaxed);
    if (n == MAX_PRIMS)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: oneDNN: more than %d row counts", MAX_PRIMS);
    int saved = one_omp_thread();
    dnnl_primitive_desc_t pd;
    agmm_status_t st = make_pd(p, m, NULL, &pd);
    if (st == AGMM_OK &&
        !dnnl_memory_desc_equal(
            dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
            &p->w_md)) {
        dnnl_primitive_desc_destroy(pd);
        st = make_pd(p, m, &p->w_md, &pd);
    }
    if (st == AGMM_OK) {
        const dnnl_memory_desc_t *sp =
            dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        size_t bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
        if (bytes > p->scratch) p->scratch = bytes;
        if (n == 0) {
            const char *impl = NULL;
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            snprintf(p->impl, sizeof p->impl, "%s", impl ? impl : "unknown");
        }
        dnnl_status_t s = dnnl_primitive_create(&p->prims[n].prim, pd);
        dnnl_primitive_desc_destroy(pd);
        if (s != dnnl_success) st = fail(s, "matmul primitive");
    }
    restore_omp(saved);
    if (st != AGMM_OK) return st;
    agmm_gemm_engine_count_creation();
    p->prims[n].m = m;
    atomic_store_explicit(&p->count, n + 1, memory_order_release);
    return AGMM_OK;
}

static void dn_destroy(agmm_gemm_prep_t *p)
{
    if (!p) return;
    int n = atomic_load_explicit(&p->count, memory_order_acquire);
    for (int i = 0; i < n; i++)
        dnnl_primitive_destroy(p->prims[i].prim);
    if (p->reorder) dnnl_primitive_destroy(p->reorder);
    if (p->w_mem) dnnl_memory_destroy(p->w_mem);
    pthread_mutex_destroy(&p->lock);
    agmm_free(p);
}

/* The weight layout: what oneDNN picks for the largest row count. */
static agmm_status_t choose_layout(agmm_gemm_prep_t *p, int64_t m)
{
    int saved = one_omp_thread();
    dnnl_primitive_desc_t pd;
    agmm_status_t st = make_pd(p, m, NULL, &pd);
    restore_omp(saved);
    if (st != AGMM_OK) return st;
    p->w_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    return AGMM_OK;
}

/* The prepared weight and the reorder into it from the user's layout
 * (fp16 comes through an fp32 copy: see dn_load). */
static agmm_status_t make_weight(agmm_gemm_prep_t *p)
{
    const agmm_gemm_shape_t *s = &p->shape;
    DN(dnnl_memory_create(&p->w_mem, &p->w_md, g_engine, DNNL_MEMORY_ALLOCATE),
       "weight memory");
    dnnl_dims_t dims = {s->k, s->ncols};
    /* Converted fp16 comes from a dense fp32 copy (dn_load). */
    int conv = s->dtype == AGMM_DTYPE_FP16 && p->dt == dnnl_f32;
    dnnl_dims_t str = {conv ? s->ncols : s->ldw, 1};
    DN(dnnl_memory_desc_init_by_strides(&p->wsrc_md, 2, dims, p->dt, str),
       "weight source desc");
    dnnl_primitive_desc_t pd;
    DN(dnnl_reorder_primitive_desc_create(&pd, &p->wsrc_md, g_engine, &p->w_md,
                                          g_engine, NULL),
       "weight reorder descriptor");
    dnnl_status_t st = dnnl_primitive_create(&p->reorder, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) return fail(st, "weight reorder");
    agmm_gemm_engine_count_creation();
    return AGMM_OK;
}

static agmm_status_t dn_prepare(const agmm_gemm_shape_t *s,
                                agmm_gemm_prep_t **out)
{
    pthread_once(&g_engine_once, engine_init);
    if (g_engine_status != dnnl_success)
        return fail(g_engine_status, "CPU engine");
    if (s->nrows < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: no row counts to prepare");
    agmm_gemm_prep_t *p = agmm_alloc(sizeof *p);
    if (!p) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    pthread_mutex_init(&p->lock, NULL);
    p->shape = *s;
    p->shape.rows = NULL;
    p->shape.nrows = 0;
    p->dt = dn_input_dtype(s->dtype) == AGMM_DTYPE_FP32 ? dnnl_f32
            : s->dtype == AGMM_DTYPE_BF16               ? dnnl_bf16
                                                        : dnnl_f16;
    int64_t mmax = 0;
    for (int i = 0; i < s->nrows; i++)
        mmax = AGMM_MAX(mmax, s->rows[i]);
    /* One thread for everything here too: the weight's allocation zeroes
     * its padding in a parallel region, and the reorder fixes its thread
     * count when created. (A process that ran an OpenMP region with more
     * threads cannot fork ranks safely: libgomp's pool does not survive
     * fork.) */
    int saved = one_omp_thread();
    agmm_status_t st = choose_layout(p, mmax);
    if (st == AGMM_OK) st = make_weight(p);
    for (int i = 0; i < s->nrows && st == AGMM_OK; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= s->rows[j] == s->rows[i];
        if (!dup && s->rows[i] > 0) st = add_prim(p, s->rows[i]);
    }
    restore_omp(saved);
    if (st != AGMM_OK) {
        dn_destroy(p);
        return st;
    }
    p->scratch_given = p->scratch;
    *out = p;
    return AGMM_OK;
}

static agmm_status_t dn_load(agmm_gemm_prep_t *p, const void *w)
{
    const agmm_gemm_shape_t *s = &p->shape;
    float *w32 = NULL;
    if (s->dtype == AGMM_DTYPE_FP16 && p->dt == dnnl_f32) {
        /* to fp32 first, then reordered */
        w32 = agmm_alloc((size_t)s->k * (size_t)s->ncols * sizeof(float));
        if (!w32)
            return agmm_error(AGMM_ERR_NO_MEMORY,
                              "gemm: out of memory converting the weight");
        for (int64_t r = 0; r < s->k; r++)
            agmm_convert_to_f32(s->dtype,
                                (const uint16_t *)w + (size_t)(r * s->ldw),
                                w32 + (size_t)(r * s->ncols), (size_t)s->ncols);
        w = w32;
    }
    int saved = one_omp_thread();
    dnnl_memory_t src = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t st =
        dnnl_memory_create(&src, &p->wsrc_md, g_engine, (void *)w);
    if (st == dnnl_success)
        st = dnnl_stream_create(&stream, g_engine, dnnl_stream_default_flags);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src},
                                   {DNNL_ARG_TO, p->w_mem}};
        st = dnnl_primitive_execute(p->reorder, stream, 2, args);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (stream) dnnl_stream_destroy(stream);
    if (src) dnnl_memory_destroy(src);
    restore_omp(saved);
    agmm_free(w32);
    return st == dnnl_success ? AGMM_OK : fail(st, "weight reorder");
}

static dnnl_primitive_t find_prim(agmm_gemm_prep_t *p, int64_t m)
{
    int n = atomic_load_explicit(&p->count, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (p->prims[i].m == m) return p->prims[i].prim;
    return NULL;
}

/* Does prim's scratchpad fit in what the plan gave each worker? */
static int scratch_fits(const agmm_gemm_prep_t *p, dnnl_primitive_t prim)
{
    const_dnnl_primitive_desc_t pd;
    return dnnl_primitive_get_primitive_desc(prim, &pd) == dnnl_success &&
           dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(
               pd, dnnl_query_scratchpad_md, 0)) <= p->scratch_given;
}

static agmm_status_t run_prim(agmm_gemm_prep_t *p, dnnl_primitive_t prim,
                              const void *a, float *c, void *scratch)
{
    const_dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_get_primitive_desc(prim, &pd), "primitive query");
    const dnnl_memory_desc_t *sp_md =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    int saved = one_omp_thread();
    dnnl_memory_t am = NULL, cm = NULL, sm = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t st = dnnl_memory_create(
        &am, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), g_engine,
        (void *)a);
    if (st == dnnl_success)
        st = dnnl_memory_create(
            &cm, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0),
            g_engine, c);
    if (st == dnnl_success)
        st = dnnl_memory_create(&sm, sp_md, g_engine, scratch);
    if (st == dnnl_success)
        st = dnnl_stream_create(&stream, g_engine, dnnl_stream_default_flags);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, am},
                                   {DNNL_ARG_WEIGHTS, p->w_mem},
                                   {DNNL_ARG_DST, cm},
                                   {DNNL_ARG_SCRATCHPAD, sm}};
        st = dnnl_primitive_execute(prim, stream, 4, args);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (stream) dnnl_stream_destroy(stream);
    if (sm) dnnl_memory_destroy(sm);
    if (cm) dnnl_memory_destroy(cm);
    if (am) dnnl_memory_destroy(am);
    restore_omp(saved);
    return st == dnnl_success ? AGMM_OK : fail(st, "matmul");
}

/* The primitive for m rows: found, or made now (under the lock, counted)
 * when `limit` primitives do not exist yet. NULL when neither, or when its
 * scratchpad does not fit. */
static agmm_status_t get_prim(agmm_gemm_prep_t *p, int64_t m, int limit,
                              dnnl_primitive_t *out)
{
    dnnl_primitive_t prim = find_prim(p, m);
    agmm_status_t st = AGMM_OK;
    if (!prim) {
        pthread_mutex_lock(&p->lock);
        if (!(prim = find_prim(p, m)) &&
            atomic_load_explicit(&p->count, memory_order_relaxed) < limit &&
            (st = add_prim(p, m)) == AGMM_OK)
            prim = find_prim(p, m);
        pthread_mutex_unlock(&p->lock);
    }
    *out = prim && scratch_fits(p, prim) ? prim : NULL;
    return st;
}

static agmm_status_t dn_run(agmm_gemm_prep_t *p, int64_t m, const void *a,
                            float *c, void *scratch)
{
    if (m <= 0) return AGMM_OK;
    dnnl_primitive_t prim;
    AGMM_CHECK(get_prim(p, m, ON_DEMAND, &prim));
    if (prim) return run_prim(p, prim, a, c, scratch);
    /* Split (see MAX_PRIMS): by powers of two, each made once, in the
     * slots kept for them. */
    size_t a_row = (size_t)p->shape.lda * (p->dt == dnnl_f32 ? 4 : 2);
    const unsigned char *ap = a;
    for (int64_t pow = (int64_t)1 << 40; m > 0; pow >>= 1) {
        if (pow > m) continue;
        AGMM_CHECK(get_prim(p, pow, MAX_PRIMS, &prim));
        if (!prim)
            return agmm_error(AGMM_ERR_UNSUPPORTED, "gemm: oneDNN: no "
                              "primitive for %lld rows fits the scratch",
                              (long long)pow);
        AGMM_CHECK(run_prim(p, prim, ap, c, scratch));
        ap += (size_t)pow * a_row;
        c += (size_t)pow * (size_t)p->shape.ldc;
        m -= pow;
    }
    return AGMM_OK;
}

static size_t dn_scratch_bytes(const agmm_gemm_prep_t *p)
{
    return p->scratch;
}

static const char *dn_impl(const agmm_gemm_prep_t *p)
{
    return p->impl;
}

const agmm_gemm_engine_t agmm_gemm_engine_onednn = {
    .name = "onednn",
    .kind = AGMM_GEMM_ENGINE_ONEDNN,
    .cheap_tile_calls = 1,
    .version = dn_version,
    .input_dtype = dn_input_dtype,
    .weight_bytes = dn_weight_bytes,
    .prepare = dn_prepare,
    .load = dn_load,
    .run = dn_run,
    .scratch_bytes = dn_scratch_bytes,
    .impl = dn_impl,
    .destroy = dn_destroy,
};
