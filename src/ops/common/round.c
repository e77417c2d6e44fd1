/* The steps of a round that every schedule of every operation takes (see
 * round.h): the wait for a peer's ack of the previous round, one
 * put with its signal, the rows agreement of a call with its own rows,
 * and the abort on a failure only this rank saw.
 * They run on whichever worker (or the round's caller) takes the step. */
#include <stdio.h>

#include "common/fault.h"
#include "common/log.h"
#include "ops/common/plan.h"
#include "ops/common/round.h"
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

agmm_status_t agmm_round_send_rows(const agmm_round_t *x, int q, int64_t rows)
{
    agmm_plan_t *p = x->p;
    AGMM_CHECK(agmm_round_wait_ack(x, q, agmm_plan_deadline(p)));
    return agmm_tp_signal(p->world, &p->signals, q,
                          agmm_sig_off(p, SIG_ROWS, p->rank),
                          agmm_rows_signal(x->epoch, rows));
}

agmm_status_t agmm_round_check_rows(const agmm_round_t *x, int src,
                                    int64_t want, const char *what,
                                    const char *verb)
{
    agmm_plan_t *p = x->p;
    _Atomic uint64_t *cell =
        agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_ROWS, src));
    agmm_wait_what_t wait = {
        "row count of round", src, (int64_t)x->epoch, 0, 0, 1};
    AGMM_CHECK(agmm_signal_wait(p->world, cell, agmm_rows_signal(x->epoch, 0),
                                agmm_plan_deadline(p), &wait));
    uint64_t v = atomic_load_explicit(cell, memory_order_acquire);
    int64_t theirs = (int64_t)(v & 0xffffffffu);
    if ((v >> 32) == x->epoch && theirs == want) return AGMM_OK;
    char reason[300];
    snprintf(reason, sizeof reason,
             "rank %d expected %s%s%lld rows from rank %d in round %llu but "
             "rank %d %s %lld (the ranks passed different m_rows)",
             p->rank, what, *what ? " " : "", (long long)want, src,
             (unsigned long long)x->epoch, src, verb,
             (v >> 32) == x->epoch ? (long long)theirs : -1LL);
    agmm_error(AGMM_ERR_MISMATCH, "%s", reason);
    agmm_world_abort_with(p->world, reason);
    return AGMM_ERR_MISMATCH;
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
