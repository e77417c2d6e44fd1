/* Conversion claims (claims.h: agmm_plan_claim_tiles): the GEMM
 * workers of one rank share the work of bringing tiles into the engine's
 * input (converting them to fp32 into g32, or copying them beside the
 * others), so that each tile is filled once per round, by one thread,
 * whichever worker needs it first.
 *
 * Memory order: the claim (CAS on claimed[g], relaxed) only elects the
 * filler; the rows are published by converted[g] (agmm_signal_publish:
 * release, and it wakes a sleeping waiter) and read after an acquire of it
 * (the check below or the wait). Values are epochs and only grow, so a
 * claim of round e - 1 never satisfies round e. */
#include "ops/common/claims.h"
#include "common/log.h"
#include "ops/common/plan.h"

agmm_status_t agmm_plan_claim_tiles(agmm_plan_t *p, int64_t g0, int64_t g1,
                                    uint64_t epoch, agmm_tile_fill_fn fill,
                                    void *ctx, int src, int64_t base)
{
    /* Pass 1: fill every tile nobody has claimed for this round yet. */
    int pending = 0;
    for (int64_t g = g0; g < g1; g++) {
        if (atomic_load_explicit(&p->converted[g].value,
                                 memory_order_acquire) >= epoch)
            continue;
        uint64_t seen =
            atomic_load_explicit(&p->claimed[g].value, memory_order_relaxed);
        if (seen >= epoch || !atomic_compare_exchange_strong_explicit(
                                 &p->claimed[g].value, &seen, epoch,
                                 memory_order_relaxed, memory_order_relaxed)) {
            pending = 1; /* another worker fills it */
            continue;
        }
        fill(ctx, g);
        agmm_signal_publish(&p->converted[g].value, epoch);
    }
    /* Pass 2: wait for the tiles other workers of this rank fill. */
    for (int64_t g = g0; pending && g < g1; g++) {
        agmm_wait_what_t what = {"conversion of tile", src, g - base, 0, 0, 0};
        AGMM_CHECK(agmm_signal_wait(p->world, &p->converted[g].value, epoch,
                                    agmm_plan_deadline(p), &what));
    }
    return AGMM_OK;
}
