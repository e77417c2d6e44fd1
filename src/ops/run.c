/* agmm_plan_run: argument checks, the round's epoch, the start of the round
 * (posting receives, acknowledging the previous round so peers may put
 * again), and the schedule. */
#include <stdio.h>

#include "common/log.h"
#include "ops/plan_internal.h"
#include "trace/trace.h"

/* The start of round e on this rank, before any worker runs:
 *   1. a two-sided transport posts the receives of this round's schedule
 *      (ops->round_begin; NULL on shm);
 *   2. ack[r] = e - 1 is raised on every peer: every worker of this rank
 *      finished reading the gathered rows of round e - 1 when the previous
 *      agmm_plan_run returned, so peers may overwrite them (their puts of
 *      round e wait for ack >= e - 1). Sending the ack only now, after 1,
 *      guarantees that every put of round e finds its receive posted.
 * A failure here aborts the world: peers would otherwise wait for our ack
 * until their timeout. */
static agmm_status_t round_start(agmm_plan_t *p, int group, uint64_t e)
{
    agmm_world_t *w = p->world;
    agmm_status_t st = AGMM_OK;
    if (w->ops->round_begin)
        st = w->ops->round_begin(w, &p->signals, group, e);
    for (int q = 0; st == AGMM_OK && e > 1 && q < p->nranks; q++)
        if (q != p->rank) {
            st = w->ops->signal(w, &p->signals, q,
                                agmm_sig_off(p, SIG_ACK, p->rank), e - 1);
            agmm_trace_publish(q, -1, e - 1, AGMM_TSIG_ACK);
        }
    if (st == AGMM_OK) st = w->ops->quiet(w);
    if (st != AGMM_OK && st != AGMM_ERR_ABORTED && st != AGMM_ERR_TIMEOUT) {
        char reason[460];
        snprintf(reason, sizeof reason, "rank %d failed to start round %llu: %s",
                 p->rank, (unsigned long long)e, agmm_thread_error());
        w->ops->abort(w, reason);
    }
    return st;
}

agmm_status_t agmm_plan_run(agmm_plan_t *p, agmm_schedule_t schedule,
                            const void *a_local, float *c)
{
    if (!p) return agmm_error(AGMM_ERR_INVALID_ARG, "run: plan is NULL");
    if (!agmm_plan_is_live(p))
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "run: the plan was destroyed or never made");
    if (!c || (!a_local && p->m_local[p->rank] > 0))
        return agmm_error(AGMM_ERR_INVALID_ARG, "run: %s is NULL",
                          c ? "a_local" : "c");
    if (!p->weight_set)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "run: no weight (call agmm_plan_set_weight first)");
    if (schedule != AGMM_SCHEDULE_FUSED && schedule != AGMM_SCHEDULE_BASELINE)
        return agmm_error(AGMM_ERR_INVALID_ARG, "run: schedule %d is not valid",
                          (int)schedule);

    /* Round e publishes e and waits for >= e: signals are never reset, so a
     * signal left from round e - 1 can never satisfy a wait of round e. */
    uint64_t e = ++p->epoch;
    agmm_round_t round = {p, a_local, c, e, p->desc.comm_workers,
                          p->desc.gemm_workers};
    uint64_t t_round = agmm_trace_round_begin(p->trace, schedule);
    agmm_status_t st = round_start(p, (int)schedule, e);
    if (st == AGMM_OK)
        st = schedule == AGMM_SCHEDULE_FUSED ? agmm_run_fused(&round)
                                             : agmm_run_baseline(&round);
    agmm_trace_round_end(p->trace, t_round, e);
    return st;
}
