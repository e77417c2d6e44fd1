/* agmm_plan_run: argument checks, the round's epoch, the schedule, and the
 * end-of-round acknowledgements that make the next round's puts safe. */
#include "common/log.h"
#include "ops/plan_internal.h"
#include "trace/trace.h"

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
    agmm_status_t st = schedule == AGMM_SCHEDULE_FUSED
                           ? agmm_run_fused(&round)
                           : agmm_run_baseline(&round);
    if (st != AGMM_OK) return st;

    /* Every worker of this rank has finished reading the gathered rows of
     * round e: tell each peer it may overwrite its rows for round e + 1
     * (its comm workers wait for ack >= e before their first put to us). */
    agmm_world_t *w = p->world;
    for (int q = 0; q < p->nranks; q++) {
        if (q == p->rank) continue;
        AGMM_CHECK(w->ops->signal(w, &p->signals, q,
                                  agmm_sig_off(p, SIG_ACK, p->rank), e));
        agmm_trace_publish(q, -1, e, AGMM_TSIG_ACK);
    }
    st = w->ops->quiet(w);
    agmm_trace_round_end(p->trace, t_round, e);
    return st;
}
