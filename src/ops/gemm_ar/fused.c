/* The fused GEMM + all-reduce schedule: gemm-rs's fused schedule
 * (ops/gemm_rs/fused.c: peers' partial tiles first, in rotated order, each
 * put to its owner while the next computes; the own block last, summed in
 * the fixed source order 0..P-1), and each reduced own tile put to every
 * peer as soon as it is complete; peers copy the reduced tiles from their
 * window into their C as they arrive.
 *
 * Who writes what, round e, on rank r (P ranks, G GEMM workers in
 * ngroups column groups, C comm workers); the steps of gemm-rs are its
 * own (see its header comment), x->c being this rank's rows of C:
 *   GEMM worker g: gemm-rs's loop over the owners' blocks, except that
 *     the own block, too, is one GEMM call per tile when the peers' blocks
 *     are (cheap tile calls whose puts overlap): each own tile sums the
 *     sources before r into c, then accumulates the own partial, then is
 *     counted, so its reduced tile goes out while the next computes.
 *     The worker whose increment completes own tile t (the last column
 *     group) reduces it into c (gemm-rs's step), applies the plan's
 *     epilogue to it once, row by row after the last addition (the sum's
 *     `finish`: bias, activation, out_dtype; peers receive the finished
 *     values, in out_dtype), then puts it from c to every peer
 *     (agmm_ar_put_tile: waiting each peer's ack >= e-1, raising its
 *     reduced cell of (r, t) to e). The reducing worker puts it itself:
 *     the rows are in its cache; on MPI or the emulated link the
 *     transport moves the bytes while the next own tile computes, and on
 *     shm the put is this thread's copy either way, so a hand-off to a
 *     comm worker would add only a signal and a wake-up.
 *     With C == 0 it then copies its share of the peers' reduced tiles
 *     (every G-th), which it would otherwise wait for at the join.
 *   comm worker c: gemm-rs's puts of peer partial tiles, then every C-th
 *     peer reduced tile: waits for its cell >= e (acquire), copies it from
 *     the reduced region into C. It is idle once its puts are done, so the
 *     copies overlap the GEMM workers' own block and reductions.
 *   GEMM worker 0, before its own block: gemm-rs's rows cells (this
 *     call's rows of each peer, ops/gemm_rs/call.c) and, on MPI, the
 *     empty partial tiles beyond the call's, then its own reduced tiles
 *     of the plan beyond the call's as empty puts to every peer; at its
 *     end it checks every source's rows cell (each reduction checks its
 *     own sources first). The owner checks every peer's count of its rows
 *     before it reduces (so puts) any tile: a peer that counts other
 *     rows for it never waits for a reduced tile that will not come
 *     without the abort reaching it.
 *   Puts are quieted by each putting thread before the round ends (c's
 *     own rows must not change until then: nothing writes them again).
 *   Every copy is done before the workers join, so run.c's ack of round e
 *     (after the join) also says "done reading the reduced region": an
 *     owner's round e+1 put into it waits for that ack.
 *
 * No deadlock: every wait of round e except acks (of round e-1, sent
 * unconditionally) is for a partial tile, which every rank puts before it
 * waits for anything of round e, or for a reduced tile, which its owner
 * puts after waiting only for partials.
 *
 * Benchmark parts: comm-only (no GEMM phase) keeps every put, reduction
 * and copy (of stale partials); gemm-only (no COMM) computes every tile
 * and nobody puts, waits, reduces or copies. */
#include "common/log.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"
#include "ops/gemm_ar/ar.h"
#include "ops/gemm_rs/tiles.h"
#include "trace/trace.h"

/* gemm-rs's tile_done, with the owner's reduced tile then put to every
 * peer. */
static agmm_status_t tile_done(const agmm_ar_round_t *ar, int q, int64_t t,
                               int into_c)
{
    agmm_round_t *x = (agmm_round_t *)&ar->own;
    agmm_plan_t *p = x->p;
    int64_t g = p->tile_base[q] + t;
    uint64_t target = p->fused_rounds * (uint64_t)p->ngroups;
    uint64_t now = atomic_fetch_add_explicit(&agmm_rs_ready(p)[g].value, 1,
                                             memory_order_acq_rel) +
                   1;
    if (now != target) return AGMM_OK;
    if (!(x->phases & AGMM_PHASE_COMM)) return AGMM_OK; /* gemm-only part */
    if (q == p->rank) {
        agmm_rs_sum_t sum = {.t0 = t,
                             .t1 = t + 1,
                             .s0 = into_c ? p->rank + 1 : 0,
                             .s1 = p->nranks,
                             .c1 = p->desc.n,
                             .first = !into_c,
                             .finish = 1}; /* the epilogue, before it is sent */
        AGMM_CHECK(agmm_rs_reduce(x, &sum));
        return agmm_ar_put_tile(ar, t);
    }
    if (x->comm_workers == 0) return agmm_rs_put_tile(x, q, t);
    agmm_signal_publish(&agmm_rs_ready(p)[g].value, target);
    return AGMM_OK;
}

/* GEMM worker 0, before its own block (or at once without a share):
 * gemm-rs's rows cells and empty partial tiles (agmm_rs_send_call_rows),
 * then this rank's reduced tiles of the plan beyond the call's as empty
 * puts (MPI). Their waits are for the peers' acks of the previous round
 * only, as every put's. */
static agmm_status_t send_rows(const agmm_ar_round_t *ar, int *puts)
{
    agmm_round_t *x = (agmm_round_t *)&ar->own;
    AGMM_CHECK(agmm_rs_send_call_rows(x, puts));
    return agmm_ar_send_absent(ar);
}

static agmm_status_t gemm_worker(agmm_worker_t *self)
{
    const agmm_ar_round_t *ar = self->ctx;
    agmm_round_t *x = (agmm_round_t *)&ar->own;
    agmm_plan_t *p = x->p;
    agmm_trace_thread(p->trace, AGMM_TRACE_GEMM_WORKER, self->index);
    int comm = (x->phases & AGMM_PHASE_COMM) != 0;
    int lead = self->index == 0;
    agmm_worker_share_t s;
    int puts = 0;
    if (!agmm_worker_share(self->index, x->gemm_workers, p->col_blocks, &s)) {
        if (lead) { /* gemm-rs's steps of worker 0, without a share */
            AGMM_CHECK(send_rows(ar, &puts));
            AGMM_CHECK(agmm_rs_check_all_rows(x));
        }
    } else {
        /* gemm-rs's calls (its fused.c, gemm_worker). */
        int tile_calls = p->engine->cheap_tile_calls && agmm_rs_puts_overlap(x);
        int into_c = agmm_rs_own_in_c(x);
        int gemm = (x->phases & AGMM_PHASE_GEMM) != 0; /* else comm-only */
        if (agmm_rs_whole_call(x, &s)) { /* few rows: gemm-rs's fused.c */
            AGMM_CHECK(agmm_rs_gemm_call(x, &s));
            into_c = gemm = 0; /* every partial in `part`, own included */
        }
        for (int i = 1; i <= p->nranks; i++) {
            int q = agmm_source_order(p->rank, p->nranks, i); /* own last */
            int own = q == p->rank;
            if (own && lead) AGMM_CHECK(send_rows(ar, &puts));
            int64_t t0, t1;
            agmm_share_tiles(&s, p->tiles[q], &t0, &t1);
            /* Unlike gemm-rs, the own block is one call per tile too when
             * tile calls are: its reduced tiles are sent, each as soon as
             * it is computed and reduced, instead of all after one call
             * over the block (on a slow link the wire then idled for the
             * whole own block: docs/performance.md, "The link target"). */
            int per_tile = tile_calls;
            if (!per_tile && t0 < t1 && gemm)
                AGMM_CHECK(agmm_rs_gemm_tiles(x, &s, q, t0, t1, own && into_c));
            for (int64_t t = t0; t < t1; t++) {
                if (per_tile && gemm)
                    AGMM_CHECK(
                        agmm_rs_gemm_tiles(x, &s, q, t, t + 1, own && into_c));
                AGMM_CHECK(tile_done(ar, q, t, own && into_c));
                /* a peer's partial (C == 0) or, maybe, the own reduced
                 * tile to every peer */
                puts |= comm && (own || x->comm_workers == 0);
            }
        }
        /* Every source's count (gemm-rs's fused.c: a call without rows
         * here checks them only here). */
        if (lead) AGMM_CHECK(agmm_rs_check_all_rows(x));
    }
    if (puts) AGMM_CHECK(agmm_tp_quiet(p->world));
    if (comm && x->comm_workers == 0)
        return agmm_ar_copy_tiles(ar, self->index, x->gemm_workers);
    return AGMM_OK;
}

static agmm_status_t comm_worker(agmm_worker_t *self)
{
    const agmm_ar_round_t *ar = self->ctx;
    const agmm_round_t *x = &ar->own;
    agmm_plan_t *p = x->p;
    agmm_trace_thread(p->trace, AGMM_TRACE_COMM_WORKER, self->index);
    if (!(x->phases & AGMM_PHASE_COMM)) return AGMM_OK; /* gemm-only part */
    /* gemm-rs's comm worker (its fused.c): the peer partial tiles. */
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
            AGMM_CHECK(agmm_rs_put_tile((agmm_round_t *)x, q, t));
            puts = 1;
        }
    }
    if (puts) AGMM_CHECK(agmm_tp_quiet(p->world));
    return agmm_ar_copy_tiles(ar, self->index, x->comm_workers);
}

agmm_status_t agmm_ar_run_fused(agmm_round_t *round)
{
    agmm_ar_round_t ar;
    agmm_ar_round(round, &ar);
    agmm_rs_skip_ready(round->p); /* gemm-rs's: tiles beyond the call's */
    AGMM_CHECK(agmm_round_run(&ar.own, gemm_worker, comm_worker));
    /* MPI: the empty partial and reduced tiles (gemm-rs's call.c, bcast.c) */
    AGMM_CHECK(agmm_rs_wait_absent(&ar.own, 0));
    return agmm_ar_wait_absent(&ar);
}
