/* The fused schedule: comm workers put row tiles to every peer while GEMM
 * workers compute the tiles that have already arrived.
 *
 * Who writes what, round e, on rank r:
 *   comm worker c (or GEMM worker g when there are no comm workers):
 *     for its local tiles t (t = c, c + C, ...), for each peer q in the order
 *     r+1, r+2, ...: wait ack[q] >= e-1 (q no longer reads round e-1's rows
 *     from r), copy tile t into q's gathered rows, then raise q's signal
 *     tile(r, t) to e (release).
 *   GEMM worker g: its local items first (no waiting), then sources r+1,
 *     r+2, ...: wait tile(src, t) >= e (acquire), take every following tile
 *     of its share that has also arrived, convert them once (shared claims),
 *     and compute the whole run with one GEMM call over its columns.
 * Without comm workers, GEMM worker g issues the puts of tiles g, g + G, ...
 *   before its GEMM work and waits for their completion (quiet) after it.
 * The caller (run.c) raises ack[r] = e on every peer once every worker of
 *   round e has joined: at the end of round e, or, on a transport that
 *   posts receives (MPI), at the start of round e + 1 after posting them. */
#include "common/log.h"
#include "gemm/gemm.h"
#include "ops/plan_internal.h"
#include "ops/schedule.h"
#include "ops/workers.h"
#include "trace/trace.h"

static double deadline_of(const agmm_plan_t *p)
{
    return agmm_deadline(p->world, p->desc.timeout_s);
}

/* Put local tile t to every peer, each followed by its signal. */
static agmm_status_t put_tile(agmm_round_t *x, int64_t t)
{
    agmm_plan_t *p = x->p;
    agmm_world_t *w = p->world;
    int r = p->rank;
    size_t row_bytes = (size_t)p->desc.k * p->esize;
    int64_t row = t * p->desc.tile_m;
    int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_local[r] - row);
    const unsigned char *src = (const unsigned char *)x->a + (size_t)row * row_bytes;
    size_t dst_off = (size_t)(p->row_off[r] + row) * row_bytes;
    size_t sig = agmm_sig_off(p, SIG_TILE, p->tile_base[r] + t);
    for (int i = 1; i < p->nranks; i++) {
        int q = (r + i) % p->nranks;
        /* The peer may still read our rows of the previous round. */
        agmm_wait_what_t what = {"ack of round", q, (int64_t)x->epoch - 1};
        AGMM_CHECK(agmm_traced_wait(
            w, agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_ACK, q)),
            x->epoch - 1, deadline_of(p), &what, AGMM_TSIG_ACK));
        uint64_t t_put = agmm_trace_clock();
        AGMM_CHECK(w->ops->put_signal(w, &p->gathered, q, dst_off, src,
                                      (size_t)rows * row_bytes, &p->signals,
                                      sig, x->epoch));
        agmm_trace_put(t_put, q, t, t + 1, (size_t)rows * row_bytes, x->epoch,
                       AGMM_TSIG_TILE);
    }
    return AGMM_OK;
}

/* Issue tiles t = first, first + stride, ... of the local shard (their
 * completion is the caller's quiet()). */
static agmm_status_t put_share(agmm_round_t *x, int first, int stride)
{
    agmm_plan_t *p = x->p;
    for (int64_t t = first; t < p->tiles[p->rank]; t += stride)
        AGMM_CHECK(put_tile(x, t));
    return AGMM_OK;
}

static agmm_status_t comm_worker(agmm_worker_t *self)
{
    agmm_round_t *x = self->ctx;
    agmm_trace_thread(x->p->trace, AGMM_TRACE_COMM_WORKER, self->index);
    AGMM_CHECK(put_share(x, self->index, x->comm_workers));
    return x->p->world->ops->quiet(x->p->world);
}

static int tile_arrived(const agmm_plan_t *p, int src, int64_t t, uint64_t e)
{
    return atomic_load_explicit(
               agmm_win_signal(&p->signals,
                               agmm_sig_off(p, SIG_TILE, p->tile_base[src] + t)),
               memory_order_acquire) >= e;
}

/* Compute tiles [t0, t1) of src over this worker's columns, one GEMM call
 * per run of arrived tiles. */
static agmm_status_t gemm_source(agmm_round_t *x, const agmm_worker_share_t *s,
                                 int src, int64_t t0, int64_t t1)
{
    agmm_plan_t *p = x->p;
    int64_t k = p->desc.k, n = p->desc.n, tm = p->desc.tile_m;
    int64_t c0 = s->j0 * p->desc.tile_n;
    int64_t c1 = AGMM_MIN(s->j1 * p->desc.tile_n, n);
    for (int64_t t = t0; t < t1;) {
        int64_t u = t1; /* local tiles are all there */
        if (src != p->rank) {
            agmm_wait_what_t what = {"tile", src, t};
            AGMM_CHECK(agmm_traced_wait(
                p->world,
                agmm_win_signal(&p->signals,
                                agmm_sig_off(p, SIG_TILE, p->tile_base[src] + t)),
                x->epoch, deadline_of(p), &what, AGMM_TSIG_TILE));
            for (u = t + 1; u < t1 && tile_arrived(p, src, u, x->epoch); u++) {
            }
        }
        const float *a;
        uint64_t t_conv = agmm_trace_clock();
        AGMM_CHECK(agmm_plan_rows_f32(p, src, t, u, x->a, x->epoch, &a));
        uint64_t t_gemm = agmm_trace_clock();
        int64_t rows = AGMM_MIN(u * tm, p->m_local[src]) - t * tm;
        float *c = x->c + (size_t)(p->row_off[src] + t * tm) * (size_t)n + c0;
        agmm_gemm_f32(rows, c1 - c0, k, a, k, p->w32 + c0, n, c, n);
        agmm_trace_gemm(t_conv, t_gemm, src, t, u, s->j0, s->j1, rows);
        agmm_plan_count_items(p, src, t, u, s->j0, s->j1);
        t = u;
    }
    return AGMM_OK;
}

static agmm_status_t gemm_worker(agmm_worker_t *self)
{
    agmm_round_t *x = self->ctx;
    agmm_plan_t *p = x->p;
    agmm_trace_thread(p->trace, AGMM_TRACE_GEMM_WORKER, self->index);
    /* Without comm workers the puts are issued first and completed last
     * (quiet), so an asynchronous transport (MPI) moves the tiles while
     * this worker computes; on shm the puts are done when issued. */
    if (x->comm_workers == 0)
        AGMM_CHECK(put_share(x, self->index, x->gemm_workers));
    agmm_worker_share_t s;
    if (agmm_worker_share(self->index, x->gemm_workers, p->col_blocks, &s)) {
        for (int i = 0; i < p->nranks; i++) {
            int src = agmm_source_order(p->rank, p->nranks, i);
            int64_t t0, t1;
            agmm_share_tiles(&s, p->tiles[src], &t0, &t1);
            AGMM_CHECK(gemm_source(x, &s, src, t0, t1));
        }
    }
    return x->comm_workers == 0 ? p->world->ops->quiet(p->world) : AGMM_OK;
}

agmm_status_t agmm_run_fused(agmm_round_t *round)
{
    return agmm_round_run(round, gemm_worker, comm_worker);
}
