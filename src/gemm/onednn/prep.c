/* The oneDNN engine (engine.h): oneDNN's matmul primitive on a weight
 * reordered once into the layout the primitive asks for (format_tag any).
 * This file holds one prepared column range (agmm_dn_prep_t: prepare,
 * load, run, destroy) and its primitives; cols.c the engine's table,
 * which splits wide ranges into such parts; pd.c builds the descriptors
 * with the attributes and says what is refused; estimate.c the sizes
 * estimate reports; dense.c when a strided C goes through a dense buffer
 * (onednn_internal.h lists the files in the order they build on each
 * other).
 * dtypes: bf16 and fp16 as themselves where this oneDNN has a
 * non-reference matmul for them on this CPU (probed once:
 * probe.c), else read as fp32 (tiles converted by the caller,
 * the weight once here); fp32 as fp32. int8: s8 (or u8) x s8 -> s32
 * primitives and the pass of s8.c (run and load go there),
 * where the probe found both variants exact; else int8 is refused.
 *
 * Primitives: one per row count the plan will call (shape->rows), all made
 * in prepare, plus the weight's reorder. They share the weight layout of
 * the largest row count (a row count whose own choice differs is made with
 * that layout forced). A row count not given to prepare (a round with fewer
 * rows than the plan's most: agmm_run_args_t.m_rows) is created on demand,
 * under a lock, and counted like every creation (the tests assert the count
 * stays constant across rounds of the plan's rows), while fewer than
 * ON_DEMAND exist; beyond, such a call is split into powers of two, made
 * on demand in the POW2 slots kept for them (popcount(m) calls). A plan thus
 * creates at most MAX_PRIMS primitives per prepared weight in its life,
 * whatever its rounds' rows.
 *
 * Attributes (engine.h): mapped onto oneDNN's in pd.c, which
 * also says what is refused. A prep made with `share` forces the base's
 * weight layout on its primitives and runs on the base's weight, bias and
 * scale memories.
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/engine.h"
#include "gemm/epilogue.h"
#include "gemm/onednn/onednn_internal.h"

enum { ON_DEMAND = 64, POW2 = 32, MAX_PRIMS = ON_DEMAND + POW2 };

typedef struct {
    int64_t m;
    dnnl_primitive_t prim;
} prim_entry_t;

struct agmm_dn_prep {
    agmm_dn_cfg_t cfg;
    const agmm_dn_prep_t *base; /* the share given to prepare, or NULL */
    agmm_dn_md_t w_md;          /* the prepared weight's layout (the base's) */
    dnnl_memory_t w_mem;    /* the prepared weight (the base's with share) */
    dnnl_memory_t w_hi_mem; /* cfg.s8_split: the high half (w_mem: low) */
    void *w_buf, *w_hi_buf; /* their memory (make_weight); not a base's */
    dnnl_memory_t bias_mem, scale_mem; /* when the attr has them (same) */
    agmm_dn_s8_t *s8;     /* INT8: its bias, scales, compensation; else NULL */
    agmm_dn_md_t wsrc_md; /* the user's weight layout; owner only */
    dnnl_primitive_t reorder; /* user layout (wsrc_md) -> w_md; owner only */
    uint64_t owned;           /* weight bytes owned (0 with a base) */
    size_t scratch;           /* max scratchpad bytes over the primitives */
    size_t scratch_given;     /* scratchpad bytes prepare told the caller of */
    /* ldc > ncols (accumulate, or a plain call that would lose AMX): C's
     * rows go through a dense buffer of `mmax` rows after the scratchpad
     * (dense_bytes; dense.c, agmm_dn_run); ldc, act the caller's. */
    int dense;
    agmm_gemm_act_t act;
    int64_t mmax, ldc;
    size_t dense_bytes;
    char impl[128];
    /* Runs read prims[0, count) (acquire); additions append under `lock`,
     * then publish the count (release). */
    pthread_mutex_t lock;
    _Atomic int count;
    prim_entry_t prims[MAX_PRIMS];
};

/* Create the primitive for m rows on the prepared weight layout and add it
 * (caller holds p->lock or owns p alone). */
static agmm_status_t add_prim(agmm_dn_prep_t *p, int64_t m)
{
    int n = atomic_load_explicit(&p->count, memory_order_relaxed);
    if (n == MAX_PRIMS)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: oneDNN: more than %d row counts", MAX_PRIMS);
    int saved = agmm_dn_one_omp_thread();
    dnnl_primitive_desc_t pd;
    agmm_status_t st = agmm_dn_matmul_pd(&p->cfg, m, p->w_md, &pd);
    if (st == AGMM_OK) {
        size_t bytes = agmm_dn_pd_scratch(pd);
        if (bytes > p->scratch) p->scratch = bytes;
        if (n == 0) {
            const char *impl = NULL;
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            snprintf(p->impl, sizeof p->impl, "%s%s", impl ? impl : "unknown",
                     p->cfg.s8_split ? " x2 (7-bit weight halves)" : "");
        }
        dnnl_status_t s = dnnl_primitive_create(&p->prims[n].prim, pd);
        dnnl_primitive_desc_destroy(pd);
        if (s != dnnl_success) st = agmm_dn_fail(s, "matmul primitive");
    }
    agmm_dn_restore_omp(saved);
    if (st != AGMM_OK) return st;
    agmm_gemm_engine_count_creation();
    p->prims[n].m = m;
    atomic_store_explicit(&p->count, n + 1, memory_order_release);
    return AGMM_OK;
}

void agmm_dn_destroy(agmm_dn_prep_t *p)
{
    if (!p) return;
    int n = atomic_load_explicit(&p->count, memory_order_acquire);
    for (int i = 0; i < n; i++)
        dnnl_primitive_destroy(p->prims[i].prim);
    if (!p->base) {
        if (p->reorder) dnnl_primitive_destroy(p->reorder);
        if (p->w_mem) dnnl_memory_destroy(p->w_mem);
        if (p->w_hi_mem) dnnl_memory_destroy(p->w_hi_mem);
        agmm_free(p->w_buf);
        agmm_free(p->w_hi_buf);
        if (p->bias_mem) dnnl_memory_destroy(p->bias_mem);
        if (p->scale_mem) dnnl_memory_destroy(p->scale_mem);
        agmm_dn_md_destroy(p->w_md);
        agmm_dn_md_destroy(p->wsrc_md);
    }
    agmm_dn_s8_destroy(p->s8);
    pthread_mutex_destroy(&p->lock);
    agmm_free(p);
}

/* The prepared weight (with the bias and scale memories) and the reorder
 * into it from the user's layout (a w_dtype other than the compute dtype
 * comes through a dense fp32 copy: see dn_load). */
static agmm_status_t make_weight(agmm_dn_prep_t *p)
{
    const agmm_gemm_shape_t *s = &p->cfg.shape;
    dnnl_engine_t eng = agmm_dn_engine();
    /* On agmm_alloc's memory (huge pages: into oneDNN's own, 144 of a 45
     * MB weight's first reorder's 151 ms were 4 KiB page faults). */
    size_t bytes = dnnl_memory_desc_get_size(p->w_md);
    for (int hi = 0; hi <= (p->cfg.s8_split != 0); hi++) {
        void **buf = hi ? &p->w_hi_buf : &p->w_buf;
        dnnl_memory_t *mem = hi ? &p->w_hi_mem : &p->w_mem;
        if (!(*buf = agmm_alloc(bytes)))
            return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
        DN(dnnl_memory_create(mem, p->w_md, eng, *buf), "weight memory");
    }
    for (int scale = 0; scale < 2; scale++) {
        if (p->s8 || !(scale ? p->cfg.attr.w_scale : p->cfg.attr.bias))
            continue;
        agmm_dn_md_t vmd;
        AGMM_CHECK(agmm_dn_vec_md(&p->cfg, !scale, &vmd));
        dnnl_status_t st =
            dnnl_memory_create(scale ? &p->scale_mem : &p->bias_mem, vmd, eng,
                               DNNL_MEMORY_ALLOCATE);
        agmm_dn_md_destroy(vmd);
        DN(st, scale ? "scale memory" : "bias memory");
    }
    p->owned = bytes * (p->w_hi_mem ? 2 : 1) + agmm_dn_vec_bytes(&p->cfg) +
               agmm_dn_s8_weight_extra(&p->cfg);
    dnnl_dims_t dims = {s->k, s->ncols};
    dnnl_dims_t str = {agmm_dn_dense_source(&p->cfg) ? s->ncols : s->ldw, 1};
    DN(agmm_dn_md_strides(&p->wsrc_md, 2, dims, p->cfg.dt, str),
       "weight source desc");
    dnnl_primitive_desc_t pd;
    DN(dnnl_reorder_primitive_desc_create(&pd, p->wsrc_md, eng, p->w_md, eng,
                                          NULL),
       "weight reorder descriptor");
    dnnl_status_t st = dnnl_primitive_create(&p->reorder, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success) return agmm_dn_fail(st, "weight reorder");
    agmm_gemm_engine_count_creation();
    return AGMM_OK;
}

agmm_status_t agmm_dn_prepare(const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a,
                              const agmm_dn_prep_t *share, agmm_dn_prep_t **out)
{
    if (share && share->base) share = share->base;
    agmm_dn_cfg_t cfg;
    AGMM_CHECK(agmm_dn_config(s, a, share ? &share->cfg.shape : NULL,
                              share ? &share->cfg.attr : NULL, &cfg));
    if (s->nrows < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: no row counts to prepare");
    agmm_dn_prep_t *p = agmm_alloc(sizeof *p);
    if (!p) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    pthread_mutex_init(&p->lock, NULL);
    p->cfg = cfg;
    p->ldc = s->ldc;
    p->act = a->act;
    p->mmax = agmm_dn_most_rows(s);
    p->dense = agmm_dn_use_dense(&p->cfg);
    p->mmax = agmm_dn_dense_rows(p->dense, p->mmax);
    p->dense_bytes = p->dense ? agmm_dn_dense_size(&p->cfg, p->mmax) : 0;
    /* One OpenMP thread here too: the weight memory's creation zeroes its
     * padding in a parallel region, the reorder fixes its thread count when
     * created, and libgomp's pool of more would not survive a fork. */
    int saved = agmm_dn_one_omp_thread();
    agmm_status_t st = AGMM_OK;
    if (a->a_dtype == AGMM_DTYPE_INT8)
        st = agmm_dn_s8_create(&p->cfg, share ? share->s8 : NULL, p->mmax,
                               &p->s8);
    if (st == AGMM_OK && share) {
        p->base = share;
        p->w_md = share->w_md;
        p->w_mem = share->w_mem;
        p->w_hi_mem = share->w_hi_mem;
        p->bias_mem = share->bias_mem;
        p->scale_mem = share->scale_mem;
    } else if (st == AGMM_OK) {
        st = agmm_dn_choose_layout(&p->cfg, agmm_dn_most_rows(s), &p->w_md);
        if (st == AGMM_OK) st = make_weight(p);
    }
    for (int i = 0; i < s->nrows && st == AGMM_OK; i++)
        if (!agmm_dn_is_dup(s, i)) st = add_prim(p, s->rows[i]);
    agmm_dn_restore_omp(saved);
    if (st != AGMM_OK) {
        agmm_dn_destroy(p);
        return st;
    }
    p->scratch_given = p->scratch;
    *out = p;
    return AGMM_OK;
}

/* Copy n floats into a memory object's buffer. */
static agmm_status_t fill_vec(dnnl_memory_t mem, const float *v, int64_t n)
{
    void *h = NULL;
    DN(dnnl_memory_get_data_handle(mem, &h), "bias/scale handle");
    memcpy(h, v, (size_t)n * sizeof(float));
    return AGMM_OK;
}

/* The weight w (in wsrc_md's layout) reordered into dst; at one OpenMP
 * thread. */
static dnnl_status_t reorder_into(agmm_dn_prep_t *p, const void *w,
                                  dnnl_memory_t dst)
{
    dnnl_engine_t eng = agmm_dn_engine();
    dnnl_memory_t src = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t st = dnnl_memory_create(&src, p->wsrc_md, eng, (void *)w);
    if (st == dnnl_success)
        st = dnnl_stream_create(&stream, eng, dnnl_stream_default_flags);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
        st = dnnl_primitive_execute(p->reorder, stream, 2, args);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (stream) dnnl_stream_destroy(stream);
    if (src) dnnl_memory_destroy(src);
    return st;
}

agmm_status_t agmm_dn_load(agmm_dn_prep_t *p, const agmm_gemm_operand_t *o)
{
    const agmm_gemm_shape_t *s = &p->cfg.shape;
    const agmm_gemm_attr_t *a = &p->cfg.attr;
    if (p->base)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm: onednn: load on a prep sharing another's "
                          "weight (load that one)");
    if (!o || !o->w || (a->bias && !o->bias) || (a->w_scale && !o->w_scale))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: onednn: load: the weight%s is NULL",
                          a->bias || a->w_scale ? ", bias or w_scale" : "");
    if (p->s8) AGMM_CHECK(agmm_dn_s8_load(p->s8, o));
    if (p->bias_mem) AGMM_CHECK(fill_vec(p->bias_mem, o->bias, s->ncols));
    if (p->scale_mem) AGMM_CHECK(fill_vec(p->scale_mem, o->w_scale, s->ncols));
    void *copy = NULL;
    const void *w = o->w;
    AGMM_CHECK(agmm_dn_weight_source(&p->cfg, o->w, &copy, &w));
    int8_t *hi = NULL; /* split: copy becomes the low half */
    if (p->w_hi_mem) {
        agmm_status_t e = agmm_dn_s8_split(copy, s->k * s->ncols, &hi);
        if (e != AGMM_OK) {
            agmm_free(copy);
            return e;
        }
    }
    int saved = agmm_dn_one_omp_thread();
    dnnl_status_t st = reorder_into(p, w, p->w_mem);
    if (st == dnnl_success && hi) st = reorder_into(p, hi, p->w_hi_mem);
    agmm_dn_restore_omp(saved);
    agmm_free(hi);
    agmm_free(copy);
    return st == dnnl_success ? AGMM_OK : agmm_dn_fail(st, "weight reorder");
}
static dnnl_primitive_t find_prim(agmm_dn_prep_t *p, int64_t m)
{
    int n = atomic_load_explicit(&p->count, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (p->prims[i].m == m) return p->prims[i].prim;
    return NULL;
}

/* Does prim's scratchpad fit in what the plan gave each worker? */
static int scratch_fits(const agmm_dn_prep_t *p, dnnl_primitive_t prim)
{
    const_dnnl_primitive_desc_t pd;
    return dnnl_primitive_get_primitive_desc(prim, &pd) == dnnl_success &&
           dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(
               pd, dnnl_query_scratchpad_md, 0)) <= p->scratch_given;
}

static agmm_status_t run_prim(agmm_dn_prep_t *p, dnnl_primitive_t prim,
                              dnnl_memory_t wm, const void *a, void *c,
                              void *scratch)
{
    const_dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_get_primitive_desc(prim, &pd), "primitive query");
    dnnl_engine_t eng = agmm_dn_engine();
    agmm_dn_cmd_t sp_md =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    int saved = agmm_dn_one_omp_thread();
    dnnl_memory_t am = NULL, cm = NULL, sm = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t st = dnnl_memory_create(
        &am, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), eng,
        (void *)a);
    if (st == dnnl_success)
        st = dnnl_memory_create(
            &cm, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), eng,
            c);
    if (st == dnnl_success) st = dnnl_memory_create(&sm, sp_md, eng, scratch);
    if (st == dnnl_success)
        st = dnnl_stream_create(&stream, eng, dnnl_stream_default_flags);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[6] = {{DNNL_ARG_SRC, am},
                                   {DNNL_ARG_WEIGHTS, wm},
                                   {DNNL_ARG_DST, cm},
                                   {DNNL_ARG_SCRATCHPAD, sm}};
        int n = 4;
        if (p->bias_mem)
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, p->bias_mem};
        if (p->scale_mem)
            args[n++] = (dnnl_exec_arg_t){AGMM_DN_ARG_W_SCALE, p->scale_mem};
        st = dnnl_primitive_execute(prim, stream, n, args);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (stream) dnnl_stream_destroy(stream);
    if (sm) dnnl_memory_destroy(sm);
    if (cm) dnnl_memory_destroy(cm);
    if (am) dnnl_memory_destroy(am);
    agmm_dn_restore_omp(saved);
    return st == dnnl_success ? AGMM_OK : agmm_dn_fail(st, "matmul");
}

/* The primitive for m rows: found, or made now (under the lock, counted)
 * when `limit` primitives do not exist yet. NULL when neither, or when its
 * scratchpad does not fit. */
static agmm_status_t get_prim(agmm_dn_prep_t *p, int64_t m, int limit,
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

/* m rows into c with the primitives' ldc, on the weight wm. */
static agmm_status_t run_rows(agmm_dn_prep_t *p, dnnl_memory_t wm, int64_t m,
                              const void *a, void *c, void *scratch)
{
    if (m <= 0) return AGMM_OK;
    dnnl_primitive_t prim;
    AGMM_CHECK(get_prim(p, m, ON_DEMAND, &prim));
    if (prim) return run_prim(p, prim, wm, a, c, scratch);
    /* Split (see MAX_PRIMS): by powers of two, each made once, in the
     * slots kept for them. */
    size_t a_row = (size_t)p->cfg.lda * dnnl_data_type_size(p->cfg.a_dt);
    size_t c_row = (size_t)p->cfg.ldc * dnnl_data_type_size(p->cfg.c_dt);
    const unsigned char *ap = a;
    unsigned char *cp = c;
    for (int64_t pow = (int64_t)1 << 40; m > 0; pow >>= 1) {
        if (pow > m) continue;
        AGMM_CHECK(get_prim(p, pow, MAX_PRIMS, &prim));
        if (!prim)
            return agmm_error(AGMM_ERR_UNSUPPORTED,
                              "gemm: oneDNN: no "
                              "primitive for %lld rows fits the scratch",
                              (long long)pow);
        AGMM_CHECK(run_prim(p, prim, wm, ap, cp, scratch));
        ap += (size_t)pow * a_row;
        cp += (size_t)pow * c_row;
        m -= pow;
    }
    return AGMM_OK;
}

/* INT8's primitive calls (agmm_dn_s8_gemm_fn). */
static agmm_status_t s8_gemm(void *ctx, int half, int64_t m, const void *a,
                             int32_t *acc, void *pad)
{
    agmm_dn_prep_t *p = ctx;
    return run_rows(p, half ? p->w_hi_mem : p->w_mem, m, a, acc, pad);
}

agmm_status_t agmm_dn_run(agmm_dn_prep_t *p, int64_t m, const void *a,
                          const float *a_scale, void *c, void *scratch)
{
    if (p->s8) /* a_scale is refused at prepare but with INT8 */
        return agmm_dn_s8_run(p->s8, m, a, a_scale, c, scratch,
                              agmm_dn_align64(p->scratch_given), s8_gemm, p);
    if (!p->dense) return run_rows(p, p->w_mem, m, a, c, scratch);
    /* Through the dense copy, mmax rows at a time. */
    size_t ces = agmm_dtype_size(p->cfg.attr.c_dtype);
    size_t row = (size_t)p->cfg.shape.ncols * ces;
    size_t a_row =
        (size_t)p->cfg.shape.lda * agmm_dtype_size(p->cfg.attr.a_dtype);
    unsigned char *buf =
        (unsigned char *)scratch + agmm_dn_align64(p->scratch_given);
    for (int64_t r0 = 0; r0 < m; r0 += p->mmax) {
        int64_t mc = AGMM_MIN(p->mmax, m - r0);
        unsigned char *cr = (unsigned char *)c + (size_t)(r0 * p->ldc) * ces;
        const unsigned char *ar = (const unsigned char *)a + (size_t)r0 * a_row;
        int out = p->dense == AGMM_DN_DENSE_OUT;
        int add_out = p->dense == AGMM_DN_DENSE_ADD_OUT;
        if (!out && !add_out) /* C_old in */
            for (int64_t i = 0; i < mc; i++)
                memcpy(buf + (size_t)i * row, cr + (size_t)(i * p->ldc) * ces,
                       row);
        if (p->dense == AGMM_DN_DENSE_COPY || out) {
            AGMM_CHECK(run_rows(p, p->w_mem, mc, ar, buf, scratch));
            for (int64_t i = 0; i < mc; i++)
                memcpy(cr + (size_t)(i * p->ldc) * ces, buf + (size_t)i * row,
                       row);
            continue;
        }
        /* fp32: product into C (ADD) or buf (ADD_OUT); C = act(old + it) */
        AGMM_CHECK(run_rows(p, p->w_mem, mc, ar, add_out ? buf : cr, scratch));
        for (int64_t i = 0; i < mc; i++) {
            float *ci = (float *)cr + (size_t)(i * p->ldc);
            const float *o =
                (const float *)buf + (size_t)(i * p->cfg.shape.ncols);
            for (int64_t j = 0; j < p->cfg.shape.ncols; j++)
                ci[j] = agmm_gemm_act_f32(p->act, ci[j] + o[j]);
        }
    }
    return AGMM_OK;
}

agmm_status_t agmm_dn_load_bias(agmm_dn_prep_t *p, const float *bias)
{
    if (p->base)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm: onednn: load_bias on a prep sharing "
                          "another's weight (load that one)");
    if (!p->cfg.attr.bias || !bias)
        return agmm_error(AGMM_ERR_INVALID_ARG, "gemm: onednn: load_bias: %s",
                          bias ? "the prep has no bias attribute"
                               : "bias is NULL");
    if (p->s8) return agmm_dn_s8_load_bias(p->s8, bias);
    return fill_vec(p->bias_mem, bias, p->cfg.shape.ncols);
}

size_t agmm_dn_scratch_bytes(const agmm_dn_prep_t *p)
{
    if (p->s8)
        return agmm_dn_align64(p->scratch_given) +
               agmm_dn_s8_scratch(&p->cfg, p->mmax);
    return p->dense ? agmm_dn_align64(p->scratch_given) + p->dense_bytes
                    : p->scratch_given;
}

uint64_t agmm_dn_weight_bytes(const agmm_dn_prep_t *p)
{
    return p->owned;
}

const char *agmm_dn_impl(const agmm_dn_prep_t *p)
{
    return p->impl;
}
