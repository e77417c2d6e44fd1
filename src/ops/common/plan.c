/* Plan lifecycle: description checks, memory estimate, collective create
 * and destroy, the weight, and the registry of live plans (so a destroyed
 * plan is refused instead of crashing). */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gemm/convert.h"
#include "ops/common/plan_internal.h"

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
    agmm_free(p->m_local);
    agmm_free(p->row_off);
    agmm_free(p->tiles);
    agmm_free(p->tile_base);
    agmm_free(p->m_max);
    agmm_free(p->tiles_max);
    agmm_free(p->win_off);
    agmm_free(p->win_max);
    agmm_free(p->n_w);
    agmm_free(p->blk_off);
    agmm_free(p->k_local);
    agmm_free(p->part);
    agmm_free(p->ready);
    if (p->engine) agmm_plan_engine_free(p);
    agmm_free(p->g32);
    agmm_free(p->claimed);
    agmm_free(p->converted);
    agmm_free((void *)p->item_count);
    agmm_free(p);
}

static agmm_status_t plan_layout(agmm_plan_t *p, const agmm_plan_desc_t *d)
{
    int P = d->nranks;
    p->m_local = agmm_alloc(sizeof(int64_t) * (size_t)P);
    p->row_off = agmm_alloc(sizeof(int64_t) * (size_t)(P + 1));
    p->tiles = agmm_alloc(sizeof(int64_t) * (size_t)P);
    p->tile_base = agmm_alloc(sizeof(int64_t) * (size_t)(P + 1));
    p->m_max = agmm_alloc(sizeof(int64_t) * (size_t)P);
    p->tiles_max = agmm_alloc(sizeof(int64_t) * (size_t)P);
    p->win_off = agmm_alloc(sizeof(int64_t) * (size_t)(P + 1));
    p->win_max = agmm_alloc(sizeof(int64_t) * (size_t)(P + 1));
    p->nw = d->n_list ? AGMM_MAX(d->n_weights, 1) : 1;
    p->n_w = agmm_alloc(sizeof(int64_t) * (size_t)p->nw);
    p->blk_off = agmm_alloc(sizeof(int64_t) * (size_t)(p->nw + 1));
    if (!p->m_local || !p->row_off || !p->tiles || !p->tile_base ||
        !p->m_max || !p->tiles_max || !p->win_off || !p->win_max || !p->n_w ||
        !p->blk_off)
        return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    for (int r = 0; r < P; r++) {
        p->m_max[r] = p->m_local[r] = d->m_local[r];
        p->win_off[r + 1] = p->row_off[r + 1] = p->row_off[r] + d->m_local[r];
        p->win_max[r + 1] = p->row_off[r + 1];
        p->tiles_max[r] = p->tiles[r] = AGMM_DIV_UP(d->m_local[r], d->tile_m);
        p->tile_base[r + 1] = p->tile_base[r] + p->tiles[r];
    }
    for (int i = 0; i < p->nw; i++) {
        p->n_w[i] = d->n_list ? d->n_list[i] : d->n;
        p->blk_off[i + 1] = p->blk_off[i] + AGMM_DIV_UP(p->n_w[i], d->tile_n);
    }
    p->desc = *d;
    p->desc.m_local = p->m_max;
    p->desc.n_list = p->n_w;
    p->desc.n_weights = p->nw;
    p->desc.n = p->n_w[0];
    p->nranks = P;
    p->M_max = p->M = p->row_off[P];
    p->total_tiles = p->tile_base[P];
    p->col_blocks = p->blk_off[p->nw];
    p->esize = agmm_dtype_size(d->dtype);
    p->tile_cells = p->total_tiles;
    p->k_gemm = d->k;
    if (d->op == AGMM_OP_GEMM_RS) {
        p->k_local = agmm_alloc(sizeof(int64_t) * (size_t)P);
        if (!p->k_local)
            return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
        p->desc.k_local = p->k_local;
        for (int r = 0; r < P; r++) {
            p->k_local[r] = agmm_plan_k_part(d, r);
            p->max_rows = AGMM_MAX(p->max_rows, p->m_local[r]);
            p->max_tiles = AGMM_MAX(p->max_tiles, p->tiles[r]);
        }
        p->k_gemm = p->k_local[p->rank];
        p->tile_cells = (int64_t)P * p->max_tiles;
        /* Zeroed: with k_gemm == 0 it stays the (zero) partial. */
        p->part = agmm_alloc((size_t)p->M * (size_t)d->n * sizeof(float));
        p->ready = agmm_alloc((size_t)AGMM_MAX(p->total_tiles, 1) *
                              sizeof(agmm_padded_counter_t));
        if (!p->part || !p->ready)
            return agmm_error(AGMM_ERR_NO_MEMORY,
                              "plan: out of memory for %llu bytes",
                              (unsigned long long)agmm_plan_bytes_per_rank(d));
    }

    size_t nt = (size_t)(p->total_tiles > 0 ? p->total_tiles : 1);
    agmm_status_t st = agmm_plan_engine_init(p);
    if (st != AGMM_OK) return st;
    p->claimed = agmm_alloc(nt * sizeof(agmm_padded_counter_t));
    p->converted = agmm_alloc(nt * sizeof(agmm_padded_counter_t));
    p->item_count =
        agmm_alloc(nt * (size_t)p->col_blocks * sizeof(_Atomic uint32_t));
    if (!p->native)
        p->g32 = agmm_alloc((size_t)p->M_max * (size_t)p->k_gemm * sizeof(float));
    if (!p->claimed || !p->converted || !p->item_count ||
        (!p->native && !p->g32))
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "plan: out of memory for %llu bytes",
                          (unsigned long long)agmm_plan_bytes_per_rank(d));
    return AGMM_OK;
}

/* Tell a transport with posted receives every put this rank will receive,
 * once per plan (agmm_tp_expect; shm needs nothing): each remote tile for
 * the fused schedule (receive set TILES), each remote shard for the
 * baseline (SHARDS) unless the transport gathers shards natively. A round
 * arms only the receive set of its schedule (run.c). */
static agmm_status_t declare_puts(agmm_plan_t *p)
{
    agmm_world_t *w = p->world;
    if (!agmm_tp_has(w, AGMM_TP_CAP_POSTED_RECEIVES)) return AGMM_OK;
    if (p->desc.op == AGMM_OP_GEMM_RS) return agmm_rs_declare_puts(p);
    int native = agmm_tp_has(w, AGMM_TP_CAP_NATIVE_ALLGATHER);
    size_t row_bytes = (size_t)p->desc.k * p->esize;
    for (int src = 0; src < p->nranks; src++) {
        if (src == p->rank) continue;
        for (int64_t t = 0; t < p->tiles[src]; t++) {
            int64_t row = t * p->desc.tile_m;
            int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_max[src] - row);
            AGMM_CHECK(
                agmm_tp_expect(w, &p->gathered, src,
                               (size_t)(p->win_max[src] + row) * row_bytes,
                               (size_t)rows * row_bytes, &p->signals,
                               agmm_sig_off(p, SIG_TILE, p->tile_base[src] + t),
                               AGMM_RSET_TILES));
        }
        if (native || p->m_max[src] == 0) continue;
        AGMM_CHECK(agmm_tp_expect(
            w, &p->gathered, src, (size_t)p->win_max[src] * row_bytes,
            (size_t)p->m_max[src] * row_bytes, &p->signals,
            agmm_sig_off(p, SIG_BULK, src), AGMM_RSET_SHARDS));
    }
    return AGMM_OK;
}

agmm_status_t agmm_plan_create(agmm_world_t *w, const agmm_plan_desc_t *d,
                               agmm_plan_t **out)
{
    if (!w || !out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan_create: NULL argument");
    *out = NULL;
    AGMM_CHECK(agmm_plan_desc_check(d));
    if (d->nranks != w->size)
        return agmm_error(AGMM_ERR_MISMATCH,
                          "plan_create: the plan is for %d ranks but the "
                          "world has %d",
                          d->nranks, w->size);

    /* Every rank must describe the same operation. */
    uint64_t mine = agmm_plan_desc_hash(d), *all = calloc((size_t)w->size, sizeof mine);
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
    st = plan_layout(p, d);
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

    size_t recv_bytes =
        d->op == AGMM_OP_GEMM_RS
            ? (size_t)p->nranks * (size_t)p->max_rows * (size_t)d->n * 4
            : (size_t)p->M_max * (size_t)d->k * p->esize;
    st = agmm_tp_win_alloc(w, recv_bytes, &p->gathered);
    if (st != AGMM_OK) goto fail_local;
    st = agmm_tp_win_alloc(w, agmm_sig_off(p, SIG_ROWS, p->nranks),
                           &p->signals);
    if (st != AGMM_OK) goto fail_gathered;
    /* All-gather: every peer receives the same tiles at the same places,
     * so the transport may pass one put on to several peers (MPI: once per
     * remote host, forwarded there). Not gemm-rs: each peer gets its own
     * partials. */
    if (d->op != AGMM_OP_GEMM_RS)
        st = agmm_tp_replicate(w, &p->gathered);
    if (st == AGMM_OK) st = declare_puts(p);
    if (st != AGMM_OK) goto fail_signals;
    if (!registry_add(p)) {
        st = agmm_error(AGMM_ERR_NO_MEMORY, "plan_create: too many live plans");
        goto fail_signals;
    }
    *out = p;
    return AGMM_OK;

fail_signals:
    agmm_tp_win_free(w, &p->signals);
fail_gathered:
    agmm_tp_win_free(w, &p->gathered);
fail_local:
    plan_free_local(p);
    return st;
}

agmm_status_t agmm_plan_set_weight_i(agmm_plan_t *p, int i, const void *wt)
{
    if (!p || !wt)
        return agmm_error(AGMM_ERR_INVALID_ARG, "set_weight: NULL argument");
    AGMM_CHECK(agmm_plan_enter(p, "set_weight"));
    agmm_status_t st = AGMM_OK;
    if (i < 0 || i >= p->nw) {
        st = agmm_error(AGMM_ERR_INVALID_ARG,
                        "set_weight: weight %d (the plan has %d: allowed "
                        "0..%d)",
                        i, p->nw, p->nw - 1);
    } else {
        /* A failed load leaves no half-loaded weight in use. */
        p->weight_set &= ~(1u << i);
        st = agmm_plan_engine_load_i(p, i, wt);
        if (st == AGMM_OK) p->weight_set |= 1u << i;
    }
    agmm_plan_leave(p);
    return st;
}

agmm_status_t agmm_plan_set_weight(agmm_plan_t *p, const void *wt)
{
    return agmm_plan_set_weight_i(p, 0, wt);
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
    double deadline = agmm_deadline(w, p->desc.timeout_s);
    for (int q = 0; q < p->nranks; q++) {
        if (q == p->rank) continue;
        if (agmm_world_aborted(w)) return AGMM_OK;
        agmm_wait_what_t what = {"ack of round", q, (int64_t)last, 0, 0};
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
    agmm_status_t st2 =
        agmm_world_barrier_until(w, agmm_deadline(w, p->desc.timeout_s));
    if (st == AGMM_OK) st = st2;
    agmm_tp_win_free(w, &p->signals);
    agmm_tp_win_free(w, &p->gathered);
    plan_free_local(p);
    return st;
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

int agmm_plan_weights(const agmm_plan_t *p)
{
    return p && agmm_plan_is_live(p) ? p->nw : -1;
}

int64_t agmm_plan_cols(const agmm_plan_t *p, int i)
{
    if (!p || !agmm_plan_is_live(p) || i < 0 || i >= p->nw) return -1;
    return p->n_w[i];
}
