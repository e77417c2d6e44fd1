/* The fused schedule: comm workers put row tiles to every peer while GEMM
 * workers compute the tiles that have already arrived.
 *
 * Who writes what, round e, on rank r:
 *   comm worker c (or GEMM worker g when there are no comm workers):
 *     for its local tiles t (t = c, c + C, ...), for each peer q in the order
 *     r+1, r+2, ...: wait ack[q] >= e-1 (q no longer reads round e-1's rows
 *     from r), copy tile t into q's gathered rows, then raise q's signal
 *     tile(r, t) to e (release). Peers that another rank of their host
 *     forwards the tile to (the transport says so: agmm_tp_put_direct)
 *     are skipped.
 *   GEMM worker g, with an engine whose tile calls are cheap (oneDNN: the
 *     weight is prepared once, a call packs nothing): if its whole share
 *     arrives within the time its own posting took (see
 *     share_arrives_within; one row group only) and the round has at
 *     most AGMM_AG_WHOLE_ROWS rows, one call over all M rows, local rows
 *     copied into the window beside the others (shared claims): at decode
 *     sizes every call streams the whole weight from memory, so one call
 *     beats one per source (measured: 1.15x slower per tile at --m-local
 *     16, parity with the wait). Otherwise its local tiles first
 *     (no waiting), then
 *     sources r+1, r+2, ...: wait tile(src, t) >= e (acquire), convert it
 *     if the engine needs fp32 (shared claims) and compute it over its
 *     columns, one call per tile, as tiles arrive. The row counts are
 *     M, tile_m and each shard's last partial tile, all prepared with the
 *     plan (gemm_plan.c).
 *   GEMM worker g, otherwise (OpenBLAS): if every tile of its share has
 *     arrived when it starts
 *     (the common case on shared memory, where the all-gather takes a few
 *     ms), it converts them (shared claims) and computes its whole share
 *     with one GEMM call per contiguous block of rows, like the baseline:
 *     a GEMM call packs the weight again, so fewer, larger calls win.
 *     Otherwise: its local items first (no waiting), then sources r+1,
 *     r+2, ...: wait tile(src, t) >= e (acquire), take every following tile
 *     of its share that has also arrived, convert them once (shared claims),
 *     and compute the whole run with one GEMM call over its columns.
 * Without comm workers, GEMM worker g issues the puts of tiles g, g + G, ...
 *   before its GEMM work and waits for their completion (quiet) after it.
 * The caller (run.c) raises ack[r] = e on every peer once every worker of
 *   round e has joined: at the end of round e, or, on a transport that
 *   posts receives (MPI), at the start of round e + 1 after posting them.
 *
 * Benchmark parts (agmm_plan_run_part): `phases` without GEMM makes the
 * GEMM workers only wait for their tiles; without COMM nobody puts and every
 * tile counts as arrived. */
#include "common/log.h"
#include "ops/ag_gemm/ag_gemm.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"
#include "trace/trace.h"

/* Put local tile t to every peer, each followed by its signal. */
static agmm_status_t put_tile(agmm_round_t *x, int64_t t)
{
    agmm_plan_t *p = x->p;
    agmm_world_t *w = p->world;
    int r = p->rank;
    size_t row_bytes = p->row_bytes;
    int64_t row = t * p->desc.tile_m;
    /* Beyond this call's rows (posted receives only): an empty put. */
    int64_t rows = AGMM_MAX(AGMM_MIN(p->desc.tile_m, p->m_local[r] - row), 0);
    const unsigned char *src =
        (const unsigned char *)x->a + (rows ? (size_t)row * row_bytes : 0);
    size_t dst_off = (size_t)(p->win_off[r] + row) * row_bytes;
    size_t sig = agmm_sig_off(p, SIG_TILE, p->tile_base[r] + t);
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(r, p->nranks, i);
        /* Another rank of q's host passes the tile on to q (MPI across
         * hosts, AGMM_TP_CAP_FORWARD): nothing to put, no ack to wait for. */
        if (!agmm_tp_put_direct(w, &p->recv_win, q)) continue;
        AGMM_CHECK(agmm_round_put(x, q, dst_off, src, (size_t)rows * row_bytes,
                                  sig, t, t + 1, AGMM_TSIG_TILE));
    }
    return AGMM_OK;
}

/* Issue tiles t = first, first + stride, ... of the local shard (their
 * completion is the caller's quiet()). */
static agmm_status_t put_share(agmm_round_t *x, int first, int stride)
{
    agmm_plan_t *p = x->p;
    /* This call's row count first (call.c), from the first sender. */
    if (first == 0) AGMM_CHECK(agmm_ag_send_rows(x, 0, 1));
    /* Every tile of the plan's layout is signalled, those beyond this
     * call's rows empty (call.c): a peer that expects one of them learns
     * from the rows cell instead of waiting forever, and MPI's declared
     * receives all complete. */
    for (int64_t t = first; t < p->tiles_max[p->rank]; t += stride)
        AGMM_CHECK(put_tile(x, t));
    return AGMM_OK;
}

static agmm_status_t comm_worker(agmm_worker_t *self)
{
    agmm_round_t *x = self->ctx;
    agmm_trace_thread(x->p->trace, AGMM_TRACE_COMM_WORKER, self->index);
    if (!(x->phases & AGMM_PHASE_COMM)) return AGMM_OK;
    AGMM_CHECK(put_share(x, self->index, x->comm_workers));
    return agmm_tp_quiet(x->p->world);
}

static int tile_arrived(const agmm_plan_t *p, int src, int64_t t, uint64_t e)
{
    return atomic_load_explicit(
               agmm_win_signal(
                   &p->signals,
                   agmm_sig_off(p, SIG_TILE, p->tile_base[src] + t)),
               memory_order_acquire) >= e;
}

static agmm_status_t wait_tile(agmm_round_t *x, int src, int64_t t)
{
    agmm_plan_t *p = x->p;
    agmm_wait_what_t what = {"tile", src, t, 0, 0, 0};
    int via = agmm_tp_forwarder(p->world, &p->recv_win, src);
    if (via >= 0) { /* a timeout names the rank that forwards it too */
        what.via_set = 1;
        what.via = via;
    }
    return agmm_traced_wait(
        p->world,
        agmm_win_signal(&p->signals,
                        agmm_sig_off(p, SIG_TILE, p->tile_base[src] + t)),
        x->epoch, agmm_plan_deadline(p), &what, AGMM_TSIG_TILE);
}

/* Has every tile of this worker's share arrived (or is local)? */
static int share_arrived(agmm_round_t *x, const agmm_worker_share_t *s)
{
    agmm_plan_t *p = x->p;
    if (!(x->phases & AGMM_PHASE_COMM)) return 1;
    for (int src = 0; src < p->nranks; src++) {
        if (src == p->rank) continue;
        int64_t t0, t1;
        agmm_share_tiles(s, p->tiles[src], &t0, &t1);
        for (int64_t t = t0; t < t1; t++)
            if (!tile_arrived(p, src, t, x->epoch)) return 0;
    }
    return 1;
}

/* Does the whole share arrive within `ns` from now? Every rank posts its
 * tiles at the start of the round, as this worker just did in `ns`: a peer
 * posting as much is likely to finish about as fast. Waiting that long (a
 * copy's time, not a GEMM's) for one GEMM call over the whole share beats
 * splitting it into calls that each pack the weight again (measured in
 * docs/history/, decode-like shape). 0 ns: just look. */
static int share_arrives_within(agmm_round_t *x, const agmm_worker_share_t *s,
                                uint64_t ns)
{
    uint64_t until = agmm_now_ns() + ns;
    while (!share_arrived(x, s)) {
        if (agmm_now_ns() >= until) return 0;
        agmm_cpu_relax();
    }
    return 1;
}

/* C rows [r0, r1) over this worker's columns from rows `a` (the engine's
 * input dtype), with conversion having started at t_conv; `src` and tiles
 * [t0, t1) name the rows in the trace (src -1: several sources, global
 * tiles). */
static agmm_status_t gemm_rows(agmm_round_t *x, const agmm_worker_share_t *s,
                               int64_t r0, int64_t r1, const void *a,
                               uint64_t t_conv, int src, int64_t t0, int64_t t1)
{
    uint64_t t_gemm = agmm_trace_clock();
    AGMM_CHECK(agmm_plan_gemm_all(x->p, s, r0, r1 - r0, a,
                                  agmm_plan_row_scales(x->p, a), x->cs));
    agmm_trace_gemm(t_conv, t_gemm, src, t0, t1, s->j0, s->j1, r1 - r0);
    return AGMM_OK;
}

/* Every tile of the share is in place: convert them and run one GEMM per
 * block of rows that is contiguous in memory. Converted rows (g32) of
 * adjacent sources are contiguous; fp32 rows are used in place, from the
 * local shard or the window, so each source is its own block there. */
static agmm_status_t gemm_share_at_once(agmm_round_t *x,
                                        const agmm_worker_share_t *s)
{
    agmm_plan_t *p = x->p;
    /* Rows of adjacent sources are contiguous in g32, and in the window
     * when local rows are copied there: done whenever the rows are read in
     * place (native), so a run of rows is one call whatever the engine (an
     * engine that streams its whole weight per call, wq, then reads it
     * once per round instead of once per source). */
    int cheap = p->native, merge = 1;
    int64_t r0 = 0, r1 = 0; /* the pending block of output rows */
    int64_t w1 = 0;         /* its end in window / g32 rows */
    int bsrc = 0;           /* its source, -1 once it spans several */
    int64_t bt0 = 0, bt1 = 0;
    const void *block = NULL;
    uint64_t t_conv = agmm_trace_clock();
    for (int src = 0; src < p->nranks; src++) {
        int64_t t0, t1;
        agmm_share_tiles(s, p->tiles[src], &t0, &t1);
        AGMM_CHECK(agmm_ag_check_rows(x, src));
        if (t0 >= t1) continue;
        const void *a;
        AGMM_CHECK(
            agmm_ag_gemm_rows(p, src, t0, t1, x->a, x->epoch, cheap, &a));
        agmm_plan_count_items(p, src, t0, t1, s->j0, s->j1);
        int64_t rows = AGMM_MIN(t1 * p->desc.tile_m, p->m_local[src]);
        int64_t g0 = p->row_off[src] + t0 * p->desc.tile_m;
        int64_t g1 = p->row_off[src] + rows;
        int64_t v0 = p->win_off[src] + t0 * p->desc.tile_m;
        /* Contiguous in the output and in the rows read (a call with fewer
         * rows than the plan's most leaves gaps in the window). */
        if (block && merge && g0 == r1 && v0 == w1) {
            r1 = g1;
            w1 = p->win_off[src] + rows;
            bsrc = -1;
            bt1 = p->tile_base[src] + t1;
            continue;
        }
        if (block) {
            AGMM_CHECK(gemm_rows(x, s, r0, r1, block, t_conv, bsrc, bt0, bt1));
            t_conv = agmm_trace_clock();
        }
        block = a;
        r0 = g0;
        r1 = g1;
        w1 = p->win_off[src] + rows;
        bsrc = src;
        bt0 = t0;
        bt1 = t1;
        if (merge) { /* global tile numbers, in case the block grows */
            bt0 += p->tile_base[src];
            bt1 += p->tile_base[src];
        }
    }
    if (block) {
        if (bsrc >= 0 && merge) { /* one source after all: its own tiles */
            bt0 -= p->tile_base[bsrc];
            bt1 -= p->tile_base[bsrc];
        }
        AGMM_CHECK(gemm_rows(x, s, r0, r1, block, t_conv, bsrc, bt0, bt1));
    }
    return AGMM_OK;
}

/* Compute tiles [t0, t1) of src over this worker's columns: one GEMM call
 * per tile with an engine whose tile calls are cheap, else one per run of
 * arrived tiles. */
static agmm_status_t gemm_source(agmm_round_t *x, const agmm_worker_share_t *s,
                                 int src, int64_t t0, int64_t t1)
{
    agmm_plan_t *p = x->p;
    int64_t tm = p->desc.tile_m;
    /* The source's count before any of its rows is used: after its first
     * tile (raised after its rows cell, so the check rarely waits; a tile
     * it does not have this call comes empty, so the wait ends either
     * way). A source with no tiles here: gemm_worker checks it at the
     * end. */
    if (t0 < t1 && src != p->rank && (x->phases & AGMM_PHASE_COMM)) {
        AGMM_CHECK(wait_tile(x, src, t0));
        AGMM_CHECK(agmm_ag_check_rows(x, src));
    }
    if (!(x->phases & AGMM_PHASE_GEMM)) { /* comm-only: just the arrivals */
        for (int64_t t = t0; src != p->rank && t < t1; t++)
            AGMM_CHECK(wait_tile(x, src, t));
        return AGMM_OK;
    }
    int per_tile = p->engine->cheap_tile_calls;
    for (int64_t t = t0; t < t1;) {
        int64_t u = per_tile ? t + 1 : t1; /* local tiles are all there */
        /* gemm-only (no COMM phase): every tile counts as arrived. */
        if (src != p->rank && (x->phases & AGMM_PHASE_COMM)) {
            AGMM_CHECK(wait_tile(x, src, t));
            for (u = t + 1;
                 !per_tile && u < t1 && tile_arrived(p, src, u, x->epoch);
                 u++) {
            }
        }
        const void *a;
        uint64_t t_conv = agmm_trace_clock();
        AGMM_CHECK(agmm_ag_gemm_rows(p, src, t, u, x->a, x->epoch, 0, &a));
        int64_t r1 = p->row_off[src] + AGMM_MIN(u * tm, p->m_local[src]);
        AGMM_CHECK(gemm_rows(x, s, p->row_off[src] + t * tm, r1, a, t_conv, src,
                             t, u));
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
     * this worker computes; on shm they are done when issued, unless the
     * link is emulated. */
    int sends = x->comm_workers == 0 && (x->phases & AGMM_PHASE_COMM);
    uint64_t t_post = agmm_now_ns();
    if (sends) AGMM_CHECK(put_share(x, self->index, x->gemm_workers));
    t_post = agmm_now_ns() - t_post;
    agmm_worker_share_t s;
    if (!agmm_worker_share(self->index, x->gemm_workers, p->col_blocks, &s)) {
        /* No GEMM items: nothing to wait for. */
    } else if ((x->phases & AGMM_PHASE_GEMM) &&
               (!p->engine->cheap_tile_calls ||
                (s.gr == 1 && __atomic_load_n(&p->M, __ATOMIC_RELAXED) <=
                                  AGMM_AG_WHOLE_ROWS)) &&
               share_arrives_within(x, &s, t_post)) {
        AGMM_CHECK(gemm_share_at_once(x, &s));
    } else {
        for (int i = 0; i < p->nranks; i++) {
            int src = agmm_source_order(p->rank, p->nranks, i);
            int64_t t0, t1;
            agmm_share_tiles(&s, p->tiles[src], &t0, &t1);
            AGMM_CHECK(gemm_source(x, &s, src, t0, t1));
        }
    }
    /* Every source's count, including those with no rows for this worker
     * (worker 0; the others checked the sources they used). */
    for (int src = 0; self->index == 0 && src < p->nranks; src++)
        AGMM_CHECK(agmm_ag_check_rows(x, src));
    return sends ? agmm_tp_quiet(p->world) : AGMM_OK;
}

agmm_status_t agmm_ag_run_fused(agmm_round_t *round)
{
    AGMM_CHECK(agmm_round_run(round, gemm_worker, comm_worker));
    return agmm_ag_wait_absent(round);
}
