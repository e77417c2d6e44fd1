/* The steps of a round that every schedule of every operation takes (see
 * plan_internal.h): the wait for a peer's ack of the previous round, one
 * put with its signal, and the abort on a failure only this rank saw.
 * They run on whichever worker (or the round's caller) takes the step. */
#include <stdio.h>

#include "common/fault.h"
#include "common/log.h"
#include "ops/common/plan_internal.h"
#include "trace/trace.h"

agmm_status_t agmm_round_wait_ack(const agmm_round_t *x, int q, double deadline)
{
    agmm_plan_t *p = x->p;
    agmm_wait_what_t what = {"ack of round", q, (int64_t)x->epoch - 1, 0, 0, 0};
    return agmm_traced_wait(
        p->world, agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_ACK, q)),
        x->epoch - 1, deadline, &what, AGMM_TSIG_ACK);
}

agmm_status_t agmm_round_put(const agmm_round_t *x, int q, size_t dst_off,
                             const void *src, size_t bytes, size_t sig_off,
                             int64_t t0, int64_t t1, int tsig)
{
    agmm_plan_t *p = x->p;
    /* The peer may still read what we put there in the previous round. */
    AGMM_CHECK(agmm_round_wait_ack(x, q, agmm_plan_deadline(p)));
    AGMM_CHECK(agmm_fault_before_put(p->rank)); /* test hook, fault.h */
    uint64_t t_put = agmm_trace_clock();
    AGMM_CHECK(agmm_tp_put_signal(p->world, &p->recv_win, q, dst_off, src,
                                  bytes, &p->signals, sig_off, x->epoch));
    agmm_trace_put(t_put, q, t0, t1, bytes, x->epoch, tsig);
    return AGMM_OK;
}

agmm_status_t agmm_world_fail(agmm_world_t *w, agmm_status_t st,
                              const char *doing)
{
    if (st == AGMM_OK || st == AGMM_ERR_ABORTED || st == AGMM_ERR_TIMEOUT)
        return st;
    char reason[460];
    snprintf(reason, sizeof reason, "rank %d failed to %s: %s", w->rank, doing,
             agmm_thread_error());
    agmm_world_abort_with(w, reason);
    return st;
}
