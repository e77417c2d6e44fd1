/* AGMM_SCHEDULE_AUTO: pick the faster of the fused and the baseline
 * schedule for this plan on this machine by measuring them.
 *
 * The plan's first 2 x AGMM_AUTO_TRIALS auto rounds alternate fused and
 * baseline (fused first). Each is a real round with a correct result; its
 * time is the slowest rank's (an allgather of every rank's time), so every
 * rank records the same numbers and makes the same decision. After the
 * trials auto keeps the schedule with the lower best round (the minimum is
 * the least noisy statistic on a shared machine; a tie goes to fused) and
 * stops measuring. Why not a model: the two differ by the link's speed
 * against the GEMM's and by how well the tiled GEMM coalesces, which only a
 * measurement on the machine shows (docs/performance.md). */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ops/common/auto.h"
#include "ops/common/plan.h"

const char *agmm_schedule_name(agmm_schedule_t s)
{
    switch (s) {
    case AGMM_SCHEDULE_FUSED:
        return "fused";
    case AGMM_SCHEDULE_BASELINE:
        return "baseline";
    case AGMM_SCHEDULE_AUTO:
        return "auto";
    }
    return "invalid";
}

agmm_status_t agmm_plan_schedule_info(const agmm_plan_t *p,
                                      agmm_schedule_info_t *info)
{
    if (!p || !info)
        return agmm_error(AGMM_ERR_INVALID_ARG, "schedule_info: NULL argument");
    if (!agmm_plan_is_live(p))
        return agmm_error(
            AGMM_ERR_BAD_STATE,
            "schedule_info: the plan was destroyed or never made");
    *info = p->autoinfo;
    if (info->trials == 0 && !info->reason[0])
        snprintf(info->reason, sizeof info->reason, "no auto round yet");
    return AGMM_OK;
}

agmm_schedule_t agmm_auto_next(agmm_plan_t *p)
{
    agmm_schedule_info_t *a = &p->autoinfo;
    if (!a->decided &&
        (size_t)p->nranks * sizeof(double) > AGMM_ALLGATHER_MAX) {
        a->decided = 1;
        a->pick = AGMM_SCHEDULE_FUSED;
        snprintf(a->reason, sizeof a->reason,
                 "%d ranks are too many to gather round times in one "
                 "allgather: fused, unmeasured",
                 p->nranks);
    }
    if (a->decided) {
        a->last = a->pick;
        return a->pick;
    }
    a->last = a->trials % 2 ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED;
    snprintf(a->reason, sizeof a->reason,
             "measuring: auto round %d of %d alternates fused and baseline, "
             "then keeps the faster",
             a->trials + 1, 2 * AGMM_AUTO_TRIALS);
    return a->last;
}

agmm_status_t agmm_auto_record(agmm_plan_t *p, agmm_schedule_t ran,
                               double seconds)
{
    agmm_schedule_info_t *a = &p->autoinfo;
    if (a->decided) return AGMM_OK;
    /* agmm_auto_next() decided already when nranks doubles don't fit. */
    double all[AGMM_ALLGATHER_MAX / sizeof(double)];
    double slowest = seconds;
    AGMM_CHECK(agmm_world_allgather(p->world, &seconds, all, sizeof seconds));
    for (int r = 0; r < p->nranks; r++)
        if (all[r] > slowest) slowest = all[r];
    double us = slowest * 1e6;
    double *best = ran == AGMM_SCHEDULE_FUSED ? &a->fused_us : &a->baseline_us;
    if (*best == 0 || us < *best) *best = us;
    if (++a->trials < 2 * AGMM_AUTO_TRIALS) return AGMM_OK;

    a->decided = 1;
    double f = a->fused_us, b = a->baseline_us;
    a->pick = f <= b ? AGMM_SCHEDULE_FUSED : AGMM_SCHEDULE_BASELINE;
    double fast = f <= b ? f : b, slow = f <= b ? b : f;
    snprintf(a->reason, sizeof a->reason,
             "measured fused %.3f ms, baseline %.3f ms (best of %d rounds "
             "each, slowest rank): %s is %.1f%% faster",
             f * 1e-3, b * 1e-3, AGMM_AUTO_TRIALS, agmm_schedule_name(a->pick),
             slow > 0 ? 100.0 * (slow - fast) / slow : 0.0);
    return AGMM_OK;
}
