/* The fused GEMM + reduce-scatter schedule: each rank computes the row
 * blocks of C destined for its peers first, in rotated order (r+1, r+2,
 * ...), its own block last; every finished partial tile goes to its owner
 * while the next tile computes, and the owner sums its tiles in a fixed
 * order once its own partial of the tile is done.
 *
 * Who writes what, round e, on rank r (P ranks, G GEMM workers in
 * ngroups column groups, C comm workers):
 *   GEMM worker g (share: columns of group cg, a row group of each owner's
 *     tiles): for owners q = r+1, r+2, ..., r: for its tiles t of q: the
 *     partial rows A_r @ W_r of tile t over its columns into `part` (with
 *     OpenBLAS: the whole block of q's tiles in one call first); for its
 *     own block (q == r, one call), into c instead: on ranks 0 and 1
 *     first, from rank 2 on after waiting for the tile cells >= e of
 *     sources 0..r-1 and summing them into its rows and columns of c
 *     (own_in_c, sums_before_gemm below); then ready[tile] += 1
 *     (acq_rel: the rows of every column group before it happen before
 *     the last increment). The worker whose increment completes the tile
 *     (e * ngroups):
 *       q == r: reduces tile t into c (tiles.c: waits for the tile cells
 *         >= e of the sources its GEMM did not add onto, r+1..P-1 (on
 *         rank 1: 0 and 2..P-1), and adds them in order), applying the
 *         plan's epilogue to each row after its last addition (the sum's
 *         `finish`: bias, activation, out_dtype; with a 16-bit out_dtype
 *         "c" above is the fp32 sums buffer and the epilogue writes the
 *         user's C);
 *       q != r, C == 0: puts it to q itself (waiting ack[q] >= e-1);
 *       q != r, C > 0: publishes ready (wakes the comm worker).
 *   comm worker c: the peer tiles in the order they are computed, every
 *     C-th from c: waits ready[tile] >= e * ngroups (acquire), then puts it
 *     to its owner (waiting ack[q] >= e-1), raising cell (r, t) on q to e.
 *   GEMM worker 0, ahead of the first tile it hands on (before its own
 *     block if it hands on none): this call's rows cell on every peer,
 *     and on MPI the plan's tiles beyond the call's rows as empty puts
 *     (call.c); at its end it checks every source's rows cell (each
 *     reduction checks its own sources first). Ahead of the partials, so
 *     that on a wire delivering in order (the emulated link) the cells do
 *     not arrive behind all of them and hold up the owner's reductions;
 *     after the first tile's GEMM, not at the round's start, because the
 *     sends wait for the peers' acks of round e-1.
 *   Puts are completed (quiet) by each putting thread before the round
 *     ends, so `part` may be overwritten next round.
 * The caller (run.c) raises ack[r] = e on every peer once every worker of
 *   round e joined, i.e. once r reduced every tile of round e (and, on
 *   MPI, received the empty ones: agmm_rs_wait_absent): a source's round
 *   e+1 put into r's slot waits for it.
 *
 * Why push (the source puts into the owner's slot) and not pull (the
 * owner reads from the source's partial): a push needs one signal per tile
 * (data then flag, one message on MPI) and the source knows exactly when
 * the tile is finished; a pull needs a ready flag to the owner, then a get
 * and a "done reading" flag back before the source may overwrite `part`,
 * and our transports have put-with-signal, not get.
 *
 * Benchmark parts (agmm_plan_run_part): without the GEMM phase (comm-only)
 * the workers skip the tile GEMMs but keep the counters, puts, signals and
 * reductions (of stale partials); without COMM (gemm-only) they compute
 * every tile and nobody puts, waits for a peer or reduces. */
#include "common/log.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"
#include "ops/gemm_rs/tiles.h"
#include "trace/trace.h"

/* Is the own block computed into the output c? When the round computes
 * (GEMM phase) and this rank has an inner part: from rank 2 on each worker
 * first sums the ranks before it (sources 0..r-1) into its rows and
 * columns of c, then its GEMM adds the own partial to them (the
 * accumulate attribute: the finished product added once, the same fp32
 * addition as the reduction's), and the reduction of each tile adds the
 * ranks after it; ranks 0 and 1 write their own partial into c and the
 * reduction adds every peer's (sums_before_gemm). The same sequence of
 * additions as the baseline, without a pass over `part`. Otherwise
 * (comm-only part, empty inner part: the partial is zero) the own partial
 * is read from `part` like any source. */
static int own_in_c(const agmm_round_t *x)
{
    return (x->phases & AGMM_PHASE_GEMM) && x->p->k_gemm > 0;
}

/* With the own block in c: does this rank's GEMM add onto the sources
 * before it, summed into c first? Only from rank 2 on. An element's sum is
 * s_0 + s_1 + ... left to right, and on rank 1 s_1 + s_0 is s_0 + s_1 bit
 * for bit (one fp32 addition commutes), so ranks 0 and 1 write their own
 * partial first and add every peer's after their GEMM: rank 1 neither
 * copies source 0 into c before its GEMM nor waits for it there, and its
 * last addition carries the epilogue row by row, as rank 0's does (else a
 * pass of its own over the tile: docs/history/, "Rank 1's own
 * partial first"). */
static int sums_before_gemm(const agmm_plan_t *p)
{
    return p->rank > 1;
}

/* Partial tiles [t0, t1) of owner q over this worker's columns with one
 * GEMM call (rows of adjacent tiles are contiguous): into `part`, or, for
 * the own block with `into_c` (own_in_c), into the output c after the
 * sources before this rank. */
static agmm_status_t gemm_tiles(agmm_round_t *x, const agmm_worker_share_t *s,
                                int q, int64_t t0, int64_t t1, int into_c)
{
    agmm_plan_t *p = x->p;
    int64_t g0 = p->tile_base[q] + t0, g1 = p->tile_base[q] + t1;
    int before = into_c && (x->phases & AGMM_PHASE_COMM) && sums_before_gemm(p);
    if (before) { /* c = s_0 + ... + s_{r-1} on this worker's items */
        int64_t tn = p->desc.tile_n;
        agmm_rs_sum_t sum = {.t0 = t0,
                             .t1 = t1,
                             .s0 = 0,
                             .s1 = p->rank,
                             .c0 = s->j0 * tn,
                             .c1 = AGMM_MIN(s->j1 * tn, p->desc.n),
                             .first = 1};
        AGMM_CHECK(agmm_rs_reduce(x, &sum));
    }
    const void *a;
    uint64_t t_conv = agmm_trace_clock();
    AGMM_CHECK(agmm_rs_rows(x, g0, g1, &a));
    int64_t r0 = agmm_rs_tile_row(p, g0);
    int64_t r1 = agmm_rs_tile_row(p, g1);
    uint64_t t_gemm = agmm_trace_clock();
    const float *sc = x->a_scale ? x->a_scale + r0 : NULL; /* INT8 */
    /* c holds q's rows only: its row 0 is global row_off[q]. */
    float *sums = agmm_rs_sum_out(x); /* c, or its fp32 rows */
    if (before)
        AGMM_CHECK(
            agmm_plan_gemm_acc(p, s, r0 - p->row_off[q], r1 - r0, a, sc, sums));
    else if (into_c)
        AGMM_CHECK(
            agmm_plan_gemm(p, s, r0 - p->row_off[q], r1 - r0, a, sc, sums));
    else
        AGMM_CHECK(agmm_plan_gemm(p, s, r0, r1 - r0, a, sc, agmm_rs_part(p)));
    agmm_trace_gemm(t_conv, t_gemm, q, t0, t1, s->j0, s->j1, r1 - r0);
    agmm_plan_count_items(p, q, t0, t1, s->j0, s->j1);
    return AGMM_OK;
}

/* Do this round's puts overlap the GEMM calls? Only when a thread other
 * than the computing one moves the bytes: a comm worker, the link
 * emulator's delivery thread, or MPI. On shared memory without either,
 * the GEMM worker's put is its own copy into the peer's window, so a tile
 * call cannot hide anything behind it (measured, docs/history/). */
static int puts_overlap(const agmm_round_t *x)
{
    agmm_world_t *w = x->p->world;
    return x->comm_workers > 0 || !agmm_tp_has(w, AGMM_TP_CAP_ONE_SIDED) ||
           agmm_world_link_emulated(w, NULL, NULL);
}

/* This worker's column group finished tile t of q: the last group to
 * finish hands the tile on (see the header comment); an own tile, once
 * reduced, goes on to `then` (gemm-ar's). */
static agmm_status_t tile_done(agmm_round_t *x, const agmm_rs_then_t *then,
                               int q, int64_t t, int into_c)
{
    agmm_plan_t *p = x->p;
    int64_t g = p->tile_base[q] + t;
    uint64_t target = p->fused_rounds * (uint64_t)p->ngroups;
    uint64_t now = atomic_fetch_add_explicit(&agmm_rs_ready(p)[g].value, 1,
                                             memory_order_acq_rel) +
                   1;
    if (now != target) return AGMM_OK;
    if (!(x->phases & AGMM_PHASE_COMM)) return AGMM_OK; /* gemm-only part */
    if (q == p->rank) { /* the sources its GEMM did not add onto */
        agmm_rs_sum_t sum = {.t0 = t,
                             .t1 = t + 1,
                             .s0 = into_c && sums_before_gemm(p) ? p->rank + 1
                                                                 : 0,
                             .s1 = p->nranks,
                             .c1 = p->desc.n,
                             .first = !into_c,
                             .own_in_out = into_c,
                             .finish = 1}; /* complete: its epilogue */
        AGMM_CHECK(agmm_rs_reduce(x, &sum));
        return then ? then->own_tile(then->ctx, t) : AGMM_OK;
    }
    if (x->comm_workers == 0) return agmm_rs_put_tile(x, q, t);
    /* Release, and it wakes the comm worker. */
    agmm_signal_publish(&agmm_rs_ready(p)[g].value, target);
    return AGMM_OK;
}

/* GEMM worker 0, ahead of the first tile it hands on, or before its own
 * block (call.c): this call's rows to every peer, and the tiles of the
 * plan beyond them (posted receives only). Before any wait of the
 * worker's for round e (its own block's reductions wait for the peers'
 * rows cells): these puts wait only for the peers' acks of the previous
 * round, so no round waits on itself. Returns 1 in *puts when it put
 * anything. */
static agmm_status_t send_rows(agmm_round_t *x, const agmm_rs_then_t *then,
                               int *puts)
{
    agmm_plan_t *p = x->p;
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(p->rank, p->nranks, i);
        AGMM_CHECK(agmm_rs_send_rows(x, q));
        AGMM_CHECK(agmm_rs_send_absent(x, q));
    }
    *puts |= (x->phases & AGMM_PHASE_COMM) && p->nranks > 1;
    return then ? then->send_absent(then->ctx) : AGMM_OK;
}

/* A GEMM worker's end: `then`'s last step, then its puts' quiet. */
static agmm_status_t end_worker(agmm_worker_t *self, agmm_round_t *x,
                                const agmm_rs_then_t *then, int puts)
{
    if (then) AGMM_CHECK(then->before_quiet(then->ctx, self->index));
    return puts ? agmm_tp_quiet(x->p->world) : AGMM_OK;
}

/* The GEMM worker's part of a fused round, up to its puts' quiet (see
 * the header comment); `then` adds gemm-ar's steps (tiles.h). */
agmm_status_t agmm_rs_fused_gemm(agmm_worker_t *self, agmm_round_t *x,
                                 const agmm_rs_then_t *then)
{
    agmm_plan_t *p = x->p;
    agmm_trace_thread(p->trace, AGMM_TRACE_GEMM_WORKER, self->index);
    int lead = self->index == 0, puts = 0;
    int comm = (x->phases & AGMM_PHASE_COMM) != 0;
    agmm_worker_share_t s;
    if (!agmm_worker_share(self->index, x->gemm_workers, p->col_blocks, &s)) {
        if (!lead) /* another worker of each group covers its tiles */
            return end_worker(self, x, then, 0);
        AGMM_CHECK(send_rows(x, then, &puts));
        AGMM_CHECK(agmm_rs_check_all_rows(x));
        return end_worker(self, x, then, puts);
    }
    /* GEMM calls per owner's block (rows of the call sizes are prepared
     * in gemm_plan.c): one call over this worker's tiles of the block,
     * except for a peer's block when its puts overlap the next calls and
     * the engine's tile calls are cheap (oneDNN): then one call per tile,
     * so that the first put starts after one tile. The own block is one
     * call (nothing of it is sent), into c (own_in_c), unless `then`
     * sends its reduced tiles: then it is one call per tile too, each
     * sent as soon as it is computed and reduced, instead of all after
     * one call over the block (on a slow link the wire then idled for the
     * whole own block: docs/history/, "The link target").
     * Measured: docs/history/, "GEMM + reduce-scatter". With few
     * rows per owner (agmm_rs_whole_call) one call over every block
     * first, as the baseline's: then the tiles are handed on in the same
     * order, the own one summed from `part` like any source. */
    int tile_calls = p->engine->cheap_tile_calls && puts_overlap(x);
    int into_c = own_in_c(x);
    int gemm = (x->phases & AGMM_PHASE_GEMM) != 0; /* else comm-only */
    if (agmm_rs_whole_call(x, &s)) { /* few rows: the weight read once */
        AGMM_CHECK(agmm_rs_gemm_call(x, &s));
        into_c = gemm = 0; /* every partial in `part`, own included */
    }
    int rows_sent = !lead; /* worker 0 sends them once (send_rows) */
    for (int i = 1; i <= p->nranks; i++) {
        int q = agmm_source_order(p->rank, p->nranks, i); /* own last */
        int own = q == p->rank;
        if (own && !rows_sent) {
            AGMM_CHECK(send_rows(x, then, &puts));
            rows_sent = 1;
        }
        int64_t t0, t1;
        agmm_share_tiles(&s, p->tiles[q], &t0, &t1);
        int per_tile = tile_calls && (!own || then);
        if (!per_tile && t0 < t1 && gemm)
            AGMM_CHECK(gemm_tiles(x, &s, q, t0, t1, own && into_c));
        for (int64_t t = t0; t < t1; t++) {
            if (per_tile && gemm)
                AGMM_CHECK(gemm_tiles(x, &s, q, t, t + 1, own && into_c));
            if (!rows_sent) { /* ahead of the first tile it hands on */
                AGMM_CHECK(send_rows(x, then, &puts));
                rows_sent = 1;
            }
            AGMM_CHECK(tile_done(x, then, q, t, own && into_c));
            /* a peer's partial (C == 0), or `then`'s own reduced tile */
            puts |= comm && (own ? then != NULL : x->comm_workers == 0);
        }
    }
    /* Every source's count, including those this worker summed nothing
     * of (a call without rows here checks them only here). */
    if (lead) AGMM_CHECK(agmm_rs_check_all_rows(x));
    return end_worker(self, x, then, puts);
}

/* The comm worker's part: the peer partial tiles, every C-th, as they
 * are computed, up to its puts' quiet. */
agmm_status_t agmm_rs_fused_comm(agmm_worker_t *self, agmm_round_t *x)
{
    agmm_plan_t *p = x->p;
    agmm_trace_thread(p->trace, AGMM_TRACE_COMM_WORKER, self->index);
    if (!(x->phases & AGMM_PHASE_COMM)) return AGMM_OK; /* gemm-only part */
    uint64_t target = p->fused_rounds * (uint64_t)p->ngroups;
    int64_t k = 0;
    int puts = 0;
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(p->rank, p->nranks, i);
        for (int64_t t = 0; t < p->tiles[q]; t++, k++) {
            if (k % x->comm_workers != self->index) continue;
            int64_t g = p->tile_base[q] + t;
            agmm_wait_what_t what = {
                "partial tile (local GEMM)", p->rank, g, 0, 0, 0};
            AGMM_CHECK(agmm_signal_wait(p->world, &agmm_rs_ready(p)[g].value,
                                        target, agmm_plan_deadline(p), &what));
            AGMM_CHECK(agmm_rs_put_tile(x, q, t));
            puts = 1;
        }
    }
    return puts ? agmm_tp_quiet(p->world) : AGMM_OK;
}

static agmm_status_t gemm_worker(agmm_worker_t *self)
{
    return agmm_rs_fused_gemm(self, self->ctx, NULL);
}

static agmm_status_t comm_worker(agmm_worker_t *self)
{
    return agmm_rs_fused_comm(self, self->ctx);
}

/* The plan's tiles beyond this call's rows are not computed: their ready
 * counters are moved on to the round's target here, before any worker
 * starts (which orders the stores before their loads), so that a later
 * call with those rows finds them one round behind, like every other
 * tile. */
static void skip_ready(agmm_plan_t *p)
{
    uint64_t target = p->fused_rounds * (uint64_t)p->ngroups;
    for (int q = 0; q < p->nranks; q++)
        for (int64_t t = p->tiles[q]; t < p->tiles_max[q]; t++)
            atomic_store_explicit(&agmm_rs_ready(p)[p->tile_base[q] + t].value,
                                  target, memory_order_relaxed);
}

agmm_status_t agmm_rs_run_fused(agmm_round_t *round)
{
    skip_ready(round->p);
    AGMM_CHECK(agmm_round_run(round, gemm_worker, comm_worker));
    return agmm_rs_wait_absent(round, 0);
}

void agmm_rs_skip_ready(agmm_plan_t *p)
{
    skip_ready(p);
}

/* The threshold of agmm_rs_whole_call: written by a test before any
 * round, read by the GEMM workers (relaxed: no other data hangs on it). */
static _Atomic int64_t whole_rows = AGMM_RS_WHOLE_ROWS;

void agmm_rs_set_whole_rows(int64_t rows)
{
    atomic_store_explicit(&whole_rows, rows, memory_order_relaxed);
}

int agmm_rs_whole_call(const agmm_round_t *x, const agmm_worker_share_t *s)
{
    const agmm_plan_t *p = x->p;
    int64_t most = atomic_load_explicit(&whole_rows, memory_order_relaxed);
    if (!(x->phases & AGMM_PHASE_GEMM) || s->gr != 1 || p->k_gemm == 0)
        return 0;
    for (int q = 0; q < p->nranks; q++)
        if (p->m_local[q] > most) return 0;
    return 1;
}
