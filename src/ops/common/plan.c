/* Plan lifecycle: collective create and destroy, the weight, and the
 * registry of live plans (so a destroyed plan is refused instead of
 * crashing). Create is: the descriptor (pd.c: the checks and the booking's
 * bound, once, no world), the ranks' agreement on it, this rank's geometry
 * and the path measurement (path.c, the only collective part of it), the
 * booking (plan_book.c), the allocation, the windows and the engines. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "ops/common/book.h"
#include "ops/common/desc.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/path.h"
#include "ops/common/pd.h"
#include "ops/common/plan.h"
#include "ops/common/plan_book.h"

/* ------------------------------------------------------------ registry */

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static const agmm_plan_t *live[64];
static int nlive;

static int registry_add(const agmm_plan_t *p)
{
    pthread_mutex_lock(&live_lock);
    int ok = nlive < (int)(sizeof live / sizeof live[0]);
    if (ok) live[nlive++] = p;
    pthread_mutex_unlock(&live_lock);
    return ok;
}

static void registry_remove_locked(const agmm_plan_t *p)
{
    for (int i = 0; i < nlive; i++)
        if (live[i] == p) {
            live[i] = live[--nlive];
            break;
        }
}

static int is_live_locked(const agmm_plan_t *p)
{
    for (int i = 0; i < nlive; i++)
        if (live[i] == p) return 1;
    return 0;
}

int agmm_plan_is_live(const agmm_plan_t *p)
{
    pthread_mutex_lock(&live_lock);
    int found = is_live_locked(p);
    pthread_mutex_unlock(&live_lock);
    return found;
}

/* The busy flag is taken under the registry lock, so a plan being
 * destroyed (removed from the registry under the same lock) is never
 * entered: a call either sees it live and not busy, or refuses. The
 * successful exchange is acquire and agmm_plan_leave's store release, so
 * everything one call wrote to the plan (the weight, the epoch, the last
 * ack) happens before the next call on it, whichever thread makes it. */
static agmm_status_t enter(agmm_plan_t *p, const char *who, int unregister)
{
    pthread_mutex_lock(&live_lock);
    int live = is_live_locked(p), was_busy = 1;
    if (live)
        was_busy = atomic_exchange_explicit(&p->busy, 1, memory_order_acquire);
    if (live && !was_busy && unregister) registry_remove_locked(p);
    pthread_mutex_unlock(&live_lock);
    if (!live)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "%s: the plan was destroyed or never made", who);
    if (was_busy)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "%s: another call on this plan is in progress (a "
                          "plan is used by one thread at a time, see agmm.h)",
                          who);
    return AGMM_OK;
}

agmm_status_t agmm_plan_enter(agmm_plan_t *p, const char *who)
{
    return enter(p, who, 0);
}

void agmm_plan_leave(agmm_plan_t *p)
{
    atomic_store_explicit(&p->busy, 0, memory_order_release);
}

int agmm_plan_busy(const agmm_plan_t *p)
{
    return atomic_load_explicit(&((agmm_plan_t *)p)->busy,
                                memory_order_relaxed);
}

/* ------------------------------------------------------------ create */

static void plan_free_local(agmm_plan_t *p)
{
    if (p->engine && p->seg_off) agmm_plan_engine_free(p);
    agmm_free(p->arena);
    agmm_free(p->layout);
    agmm_free(p);
}

/* This rank's part of a plan that needs no peer but for the GEMM path's
 * agreement: the geometry, the path, the booking, the local buffers and
 * the engine. `book` keeps the windows' sizes for the collective
 * allocation. */
static agmm_status_t plan_local(agmm_plan_t *p, const agmm_plan_pd_t *pd,
                                agmm_book_t *book)
{
    const agmm_plan_desc_t *d = agmm_plan_pd_desc(pd);
    agmm_status_t st = agmm_plan_geometry(p, d, p->world->rank);
    /* Collective where it measures (every rank takes part, failed or
     * not: path.c). */
    agmm_status_t st2 =
        agmm_path_choose(p, d, agmm_plan_pd_bound(pd), st == AGMM_OK);
    AGMM_CHECK(st);
    AGMM_CHECK(st2);
    agmm_plan_set_path(p, p->path);
    AGMM_CHECK(agmm_plan_book(p, book));
    AGMM_CHECK(agmm_book_alloc_local(book, &p->arena));
    AGMM_CHECK(agmm_plan_engine_prepare(p));
    p->bytes_held += book->local_bytes + agmm_plan_engine_bytes(p);
    return AGMM_OK;
}

/* The windows of the booking, collectively, in booking order (every rank
 * books the same windows); on failure the ones made are freed. */
static agmm_status_t alloc_windows(agmm_plan_t *p, const agmm_book_t *b)
{
    agmm_status_t st = AGMM_OK;
    int i = 0;
    for (; i < b->n && st == AGMM_OK; i++)
        if (b->item[i].where == AGMM_MEM_WINDOW) {
            st = agmm_tp_win_alloc(p->world, (size_t)b->item[i].bytes,
                                   b->item[i].win);
            if (st == AGMM_OK) p->bytes_held += b->item[i].bytes;
        }
    if (st == AGMM_OK) return AGMM_OK;
    for (int j = 0; j < i - 1; j++)
        if (b->item[j].where == AGMM_MEM_WINDOW)
            agmm_tp_win_free(p->world, b->item[j].win);
    return st;
}

/* A plan of a descriptor on world w. */
static agmm_status_t create(agmm_world_t *w, const agmm_plan_pd_t *pd,
                            agmm_plan_t **out)
{
    const agmm_plan_desc_t *d = agmm_plan_pd_desc(pd);
    if (d->nranks != w->size)
        return agmm_error(AGMM_ERR_MISMATCH,
                          "plan_create: the plan is for %d ranks but the "
                          "world has %d",
                          d->nranks, w->size);

    /* Every rank must describe the same operation. */
    uint64_t mine = agmm_plan_desc_hash(d),
             *all = calloc((size_t)w->size, sizeof mine);
    if (!all) return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    agmm_status_t st = agmm_world_allgather(w, &mine, all, sizeof mine);
    for (int r = 0; st == AGMM_OK && r < w->size; r++)
        if (all[r] != mine)
            st = agmm_error(AGMM_ERR_MISMATCH,
                            "plan_create: rank %d passed a different plan "
                            "description than rank %d",
                            r, w->rank);
    free(all);
    AGMM_CHECK(st);

    agmm_plan_t *p = agmm_alloc(sizeof *p);
    if (!p) return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    p->world = w;
    p->rank = w->rank;
    /* A local failure must still take part in the collective allocations,
     * or the other ranks would wait for us: agree on success first. */
    agmm_book_t book;
    agmm_book_init(&book);
    st = plan_local(p, pd, &book);
    int ok = st == AGMM_OK, *oks = calloc((size_t)w->size, sizeof ok);
    agmm_status_t st2 =
        oks ? agmm_world_allgather(w, &ok, oks, sizeof ok) : AGMM_ERR_NO_MEMORY;
    for (int r = 0; st2 == AGMM_OK && r < w->size; r++)
        if (!oks[r] && st == AGMM_OK)
            st = agmm_error_quiet(AGMM_ERR_ABORTED,
                                  "plan_create: rank %d failed", r);
    free(oks);
    if (st2 != AGMM_OK) st = st2;
    if (st != AGMM_OK) goto fail_local;

    st = alloc_windows(p, &book);
    if (st != AGMM_OK) goto fail_local;
    /* Every peer receives the same tiles at the same places (the
     * operation says so), so the transport may pass one put on to several
     * peers (MPI: once per remote host, forwarded there). */
    if (p->op->replicated_window) st = agmm_tp_replicate(w, &p->recv_win);
    /* A transport with posted receives (MPI) is told once every put this
     * rank will receive; a round arms only its schedule's set (run.c). */
    if (st == AGMM_OK && p->op->declare_puts &&
        agmm_tp_has(w, AGMM_TP_CAP_POSTED_RECEIVES))
        st = p->op->declare_puts(p);
    if (st != AGMM_OK) goto fail_windows;
    if (!registry_add(p)) {
        st = agmm_error(AGMM_ERR_NO_MEMORY, "plan_create: too many live plans");
        goto fail_windows;
    }
    *out = p;
    return AGMM_OK;

fail_windows:
    agmm_tp_win_free(w, &p->signals);
    agmm_tp_win_free(w, &p->recv_win);
fail_local:
    plan_free_local(p);
    return st;
}

agmm_status_t agmm_plan_create(agmm_world_t *w, const agmm_plan_desc_t *d,
                               agmm_plan_t **out)
{
    if (!w || !out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan_create: NULL argument");
    *out = NULL;
    agmm_plan_pd_t *pd = NULL;
    AGMM_CHECK(agmm_plan_pd_create(d, &pd));
    agmm_status_t st = create(w, pd, out);
    agmm_plan_pd_destroy(pd);
    return st;
}

/* Weight i, with its scales (INT8: [n_i] or [1], given; else NULL). */
static agmm_status_t set_weight(agmm_plan_t *p, int i, const void *wt,
                                const float *w_scale)
{
    if (i < 0 || i >= p->nw)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight: weight %d (the plan has %d: allowed "
                          "0..%d)",
                          i, p->nw, p->nw - 1);
    if (p->desc.weight_dtype != AGMM_WDTYPE_SAME)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "%s: the plan's weight_dtype is %s "
                          "(agmm_plan_set_weight_quantized)",
                          w_scale ? "set_weight_scaled" : "set_weight",
                          agmm_wdtype_name(p->desc.weight_dtype));
    if (p->int8 && !w_scale)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight: an int8 plan's weight needs its scales "
                          "(agmm_plan_set_weight_scaled)");
    if (!p->int8 && w_scale)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight_scaled: the plan's dtype is %s, not "
                          "int8 (agmm_plan_set_weight)",
                          agmm_dtype_name(p->desc.dtype));
    int64_t n = p->n_w[i];
    int tensor = p->desc.w_scale == AGMM_SCALE_TENSOR;
    float *cols = NULL;
    if (p->int8) {
        for (int64_t j = 0; j < (tensor ? 1 : n); j++)
            if (!(w_scale[j] >= 0 && w_scale[j] <= FLT_MAX))
                return agmm_error(AGMM_ERR_INVALID_ARG,
                                  "set_weight_scaled: w_scale[%lld] = %g "
                                  "(allowed: finite, >= 0)",
                                  (long long)j, (double)w_scale[j]);
        if (tensor) { /* the engine takes one per column */
            cols = agmm_alloc(sizeof *cols * (size_t)n);
            if (!cols)
                return agmm_error(AGMM_ERR_NO_MEMORY,
                                  "set_weight_scaled: out of memory");
            for (int64_t j = 0; j < n; j++)
                cols[j] = w_scale[0];
            w_scale = cols;
        }
    }
    /* A failed load leaves no half-loaded weight in use. */
    p->weight_set &= ~(1u << i);
    agmm_status_t st = agmm_plan_engine_load_i(p, i, wt, w_scale, NULL);
    if (st == AGMM_OK) p->weight_set |= 1u << i;
    agmm_free(cols);
    return st;
}

/* A quantized plan's weight i (agmm.h). */
static agmm_status_t set_weight_wq(agmm_plan_t *p, int i, const void *q,
                                   const float *scales, const uint8_t *zeros)
{
    int asym = p->desc.weight_zero_point != 0;
    if (p->desc.weight_dtype == AGMM_WDTYPE_SAME)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight_quantized: the plan's weight_dtype is "
                          "same (agmm_plan_set_weight%s)",
                          p->int8 ? "_scaled" : "");
    if (i < 0 || i >= p->nw)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight_quantized: weight %d (the plan has %d: "
                          "allowed 0..%d)",
                          i, p->nw, p->nw - 1);
    if (asym && !zeros)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight_quantized: zeros is NULL (the plan's "
                          "weight_zero_point is 1: asymmetric)");
    /* The whole weight's scales and zero points, named as the caller
     * indexes them (the engine sees each column range apart). */
    int64_t n = p->n_w[i], k = p->k_gemm, G = p->desc.group_size;
    int64_t ng = k > 0 ? (k + (G > 0 ? G : k) - 1) / (G > 0 ? G : k) : 0;
    int int4 = p->desc.weight_dtype == AGMM_WDTYPE_INT4;
    for (int64_t e = 0; e < ng * n; e++) {
        if (!(scales[e] >= -FLT_MAX && scales[e] <= FLT_MAX))
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "set_weight_quantized: scales[%lld][%lld] = %g "
                              "(allowed: finite)",
                              (long long)(e / n), (long long)(e % n),
                              (double)scales[e]);
        if (asym && int4 && zeros[e] > 15)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "set_weight_quantized: zeros[%lld][%lld] = %d "
                              "(allowed with int4: 0..15)",
                              (long long)(e / n), (long long)(e % n), zeros[e]);
    }
    p->weight_set &= ~(1u << i);
    agmm_status_t st =
        agmm_plan_engine_load_i(p, i, q, scales, asym ? zeros : NULL);
    if (st == AGMM_OK) p->weight_set |= 1u << i;
    return st;
}

agmm_status_t agmm_plan_set_weight_quantized(agmm_plan_t *p, int i,
                                             const void *q, const void *scales,
                                             const uint8_t *zeros)
{
    if (!p || !q || !scales)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight_quantized: NULL argument (plan, q or "
                          "scales)");
    AGMM_CHECK(agmm_plan_enter(p, "set_weight_quantized"));
    agmm_status_t st = set_weight_wq(p, i, q, (const float *)scales, zeros);
    agmm_plan_leave(p);
    return st;
}

agmm_status_t agmm_plan_set_weight_scaled(agmm_plan_t *p, int i,
                                          const int8_t *wt,
                                          const float *w_scale)
{
    if (!p || !wt || !w_scale)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "set_weight_scaled: NULL argument");
    AGMM_CHECK(agmm_plan_enter(p, "set_weight"));
    agmm_status_t st = set_weight(p, i, wt, w_scale);
    agmm_plan_leave(p);
    return st;
}

agmm_status_t agmm_plan_set_weight_i(agmm_plan_t *p, int i, const void *wt)
{
    if (!p || !wt)
        return agmm_error(AGMM_ERR_INVALID_ARG, "set_weight: NULL argument");
    AGMM_CHECK(agmm_plan_enter(p, "set_weight"));
    agmm_status_t st = set_weight(p, i, wt, NULL);
    agmm_plan_leave(p);
    return st;
}

agmm_status_t agmm_plan_set_weight(agmm_plan_t *p, const void *wt)
{
    return agmm_plan_set_weight_i(p, 0, wt);
}

agmm_status_t agmm_plan_set_bias(agmm_plan_t *p, int i, const float *bias)
{
    if (!p || !bias)
        return agmm_error(AGMM_ERR_INVALID_ARG, "set_bias: NULL argument");
    AGMM_CHECK(agmm_plan_enter(p, "set_bias"));
    agmm_status_t st = AGMM_OK;
    int64_t n = i >= 0 && i < p->nw ? p->n_w[i] : 0, bad = -1;
    for (int64_t j = 0; j < n && bad < 0; j++)
        if (!(bias[j] >= -FLT_MAX && bias[j] <= FLT_MAX)) bad = j;
    if (!p->desc.bias)
        st = agmm_error(AGMM_ERR_INVALID_ARG,
                        "set_bias: the plan has no bias (desc.bias 0)");
    else if (i < 0 || i >= p->nw)
        st = agmm_error(AGMM_ERR_INVALID_ARG,
                        "set_bias: weight %d (the plan has %d: allowed "
                        "0..%d)",
                        i, p->nw, p->nw - 1);
    else if (bad >= 0)
        st = agmm_error(AGMM_ERR_INVALID_ARG,
                        "set_bias: bias[%lld] = %g (allowed: finite)",
                        (long long)bad, (double)bias[bad]);
    if (st == AGMM_OK) {
        p->bias_set &= ~(1u << i); /* until the engine has it too */
        memcpy(p->bias + agmm_plan_col_off(p, i), bias,
               (size_t)n * sizeof(float));
        st = agmm_plan_engine_load_bias(p, i);
        if (st == AGMM_OK) p->bias_set |= 1u << i;
    }
    agmm_plan_leave(p);
    return st;
}

/* Wait until every peer's ack cell holds the last ack value it sends for
 * this plan, which is the one this rank sent (see last_ack_sent): shm
 * acks round e at its end (E after E rounds), MPI at the start of round
 * e + 1 (E - 1). Not in an aborted world: nobody acks any more there, and
 * destroy must return promptly (the windows are still freed). */
static agmm_status_t wait_last_acks(agmm_plan_t *p)
{
    agmm_world_t *w = p->world;
    uint64_t last = p->last_ack_sent;
    if (last == 0) return AGMM_OK;
    double deadline = agmm_plan_deadline(p);
    for (int q = 0; q < p->nranks; q++) {
        if (q == p->rank) continue;
        if (agmm_world_aborted(w)) return AGMM_OK;
        agmm_wait_what_t what = {"ack of round", q, (int64_t)last, 0, 0, 0};
        agmm_status_t st = agmm_signal_wait(
            w, agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_ACK, q)), last,
            deadline, &what);
        if (st == AGMM_ERR_ABORTED) return AGMM_OK; /* the barrier says so */
        AGMM_CHECK(st);
    }
    return AGMM_OK;
}

agmm_status_t agmm_plan_destroy(agmm_plan_t *p)
{
    if (!p) return AGMM_OK;
    /* Out of the registry at once: no other call can start on it. */
    AGMM_CHECK(enter(p, "plan_destroy", 1));
    agmm_world_t *w = p->world;
    /* No peer may still write into our windows once they are freed. Every
     * put of the last round was received before its run returned; acks
     * may still be in flight (an MPI send's completion is not its
     * delivery), so first wait for the last one of each peer, then the
     * barrier: after it no peer sends anything for this plan. */
    agmm_status_t st = wait_last_acks(p);
    agmm_status_t st2 = agmm_world_barrier_until(w, agmm_plan_deadline(p));
    if (st == AGMM_OK) st = st2;
    agmm_tp_win_free(w, &p->signals);
    agmm_tp_win_free(w, &p->recv_win);
    plan_free_local(p);
    return st;
}

void agmm_plan_take_rows(agmm_plan_t *p, const int64_t *m_rows)
{
    const int64_t *m = m_rows ? m_rows : p->m_max;
    int64_t off = 0;
    for (int r = 0; r < p->nranks; r++) {
        p->m_local[r] = m[r];
        p->tiles[r] = AGMM_DIV_UP(m[r], p->desc.tile_m);
        /* Atomic stores: agmm_plan_row_offset may read from any thread. */
        __atomic_store_n(&p->row_off[r], off, __ATOMIC_RELAXED);
        off += m[r];
    }
    __atomic_store_n(&p->row_off[p->nranks], off, __ATOMIC_RELAXED);
    __atomic_store_n(&p->M, off, __ATOMIC_RELAXED);
}

int64_t agmm_plan_rows(const agmm_plan_t *p)
{
    if (!p || !agmm_plan_is_live(p)) return -1;
    return __atomic_load_n(&p->M, __ATOMIC_RELAXED); /* run.c stores it */
}

int64_t agmm_plan_row_offset(const agmm_plan_t *p, int r)
{
    if (!p || !agmm_plan_is_live(p) || r < 0 || r > p->nranks) return -1;
    return __atomic_load_n(&p->row_off[r], __ATOMIC_RELAXED);
}

uint64_t agmm_plan_bytes_held(const agmm_plan_t *p)
{
    return p && agmm_plan_is_live(p) ? p->bytes_held : 0;
}

int agmm_plan_weights(const agmm_plan_t *p)
{
    return p && agmm_plan_is_live(p) ? p->nw : -1;
}

int64_t agmm_plan_cols(const agmm_plan_t *p, int i)
{
    if (!p || !agmm_plan_is_live(p) || i < 0 || i >= p->nw) return -1;
    return p->n_w[i];
}
