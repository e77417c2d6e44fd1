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
 *     (every G-th), which it would otherwise wait for at the join, before
 *     its puts' quiet (gemm-rs's before_quiet), so the copies overlap its
 *     own reduced tiles' last bytes on a wire.
 *   comm worker c: gemm-rs's puts of peer partial tiles, then every C-th
 *     peer reduced tile: waits for its cell >= e (acquire), copies it from
 *     the reduced region into C. It is idle once its puts are done, so the
 *     copies overlap the GEMM workers' own block and reductions.
 *   GEMM worker 0, ahead of the first tile it hands on: gemm-rs's rows
 *     cells (this call's rows of each peer, ops/gemm_rs/call.c) and, on
 *     MPI, the empty partial tiles beyond the call's, then its own reduced
 *     tiles of the plan beyond the call's as empty puts to every peer; at its
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
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"
#include "ops/gemm_ar/ar.h"
#include "ops/gemm_rs/tiles.h"
#include "trace/trace.h"

/* What gemm-ar adds to gemm-rs's fused workers (ops/gemm_rs/tiles.h):
 * each own tile, once reduced, put to every peer; GEMM worker 0's own
 * reduced tiles of the plan beyond the call's as empty puts (MPI), after
 * gemm-rs's rows cells and empty partial tiles. Their waits are for the
 * peers' acks of the previous round only, as every put's. */
static agmm_status_t own_tile(const void *ar, int64_t t)
{
    return agmm_ar_put_tile(ar, t);
}

static agmm_status_t send_absent(const void *ar)
{
    return agmm_ar_send_absent(ar);
}

/* With C == 0, GEMM worker `worker`'s share of the peers' reduced tiles
 * (every G-th), before its puts' quiet: the copies overlap the wire's
 * last bytes (the own reduced tiles still crossing it) instead of
 * following them (on the emulated link 0.25 ms a round: "The link
 * case's last half millisecond", docs/history/). */
static agmm_status_t copy_share(const void *ctx, int worker)
{
    const agmm_ar_round_t *ar = ctx;
    const agmm_round_t *x = &ar->own;
    if (!(x->phases & AGMM_PHASE_COMM) || x->comm_workers > 0) return AGMM_OK;
    return agmm_ar_copy_tiles(ar, worker, x->gemm_workers);
}

/* gemm-rs's GEMM worker with the steps above. */
static agmm_status_t gemm_worker(agmm_worker_t *self)
{
    const agmm_ar_round_t *ar = self->ctx;
    agmm_round_t *x = (agmm_round_t *)&ar->own;
    const agmm_rs_then_t then = {ar, own_tile, send_absent, copy_share};
    return agmm_rs_fused_gemm(self, x, &then);
}

/* gemm-rs's comm worker (the peer partial tiles), then every C-th peer
 * reduced tile. */
static agmm_status_t comm_worker(agmm_worker_t *self)
{
    const agmm_ar_round_t *ar = self->ctx;
    agmm_round_t *x = (agmm_round_t *)&ar->own;
    AGMM_CHECK(agmm_rs_fused_comm(self, x));
    if (!(x->phases & AGMM_PHASE_COMM)) return AGMM_OK; /* gemm-only part */
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
