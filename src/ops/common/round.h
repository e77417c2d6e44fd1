/* One round of a plan as its workers see it, and the steps every
 * schedule takes (round.c: ack wait, put, the rows agreement, the abort
 * on a failure only this rank saw). */
#ifndef AGMM_OPS_ROUND_H
#define AGMM_OPS_ROUND_H

#include <stdint.h>

#include "ops/common/plan.h"

/* One round of a plan, as every worker of the rank sees it (read-only). */
typedef struct agmm_round {
    agmm_plan_t *p;
    const void *a; /* this rank's A (INT8: staged, stage.c) */
    /* INT8 operations whose scales do not travel in the rows: this rank's
     * A scales, one per row of a (a per-tensor scale expanded); else NULL. */
    const float *a_scale;
    void *c;         /* cs[0] */
    void *const *cs; /* this rank's outputs, one per weight (out_dtype) */
    uint64_t epoch;
    int comm_workers, gemm_workers;
    int phases; /* AGMM_PHASE_*: all for a real round */
} agmm_round_t;

/* Which phases of a schedule a round runs: both for a real round, one of
 * them for the benchmark parts (agmm_plan_run_part). */
enum { AGMM_PHASE_COMM = 1, AGMM_PHASE_GEMM = 2, AGMM_PHASE_ALL = 3 };

/* (round.c) The steps of a round every schedule takes.
 * wait_ack: wait until peer q has acknowledged round x->epoch - 1 (it no
 * longer reads what this rank put into its windows then), as every put of
 * round x->epoch must before it lands.
 * put: one put of round x->epoch to peer q: wait for q's ack, the fault
 * hook (fault.h), then `bytes` from `src` to q's receive window at
 * `dst_off` followed by its signal cell `sig_off` raised to the epoch
 * (release), traced as tiles [t0, t1) of kind `tsig` (AGMM_TSIG_*).
 * fail: a failure that only this rank saw (not a timeout or an abort,
 * which the wait reported already) aborts the world, so that peers are
 * told at once instead of waiting for our puts or acks until their
 * timeout; the reason names the rank and `doing`. Returns st. */
agmm_status_t agmm_round_wait_ack(const agmm_round_t *x, int q,
                                  double deadline);
agmm_status_t agmm_round_put(const agmm_round_t *x, int q, size_t dst_off,
                             const void *src, size_t bytes, size_t sig_off,
                             int64_t t0, int64_t t1, int tsig);
agmm_status_t agmm_world_fail(agmm_world_t *w, agmm_status_t st,
                              const char *doing);
/* The rows agreement of an operation with rows per call (round.c).
 * send_rows: this rank's rows cell on peer q raised to `rows` of round
 * x->epoch (agmm_rows_signal), after q's ack of the previous round.
 * check_rows: waits for src's rows cell of the round and compares its
 * count with `want`; another count (or an older round) is logged and
 * aborts the world with "rank R expected <what> <want> rows from rank S
 * in round E but rank S <verb> N (the ranks passed different m_rows)"
 * (AGMM_ERR_MISMATCH): the operation's `what` ("", "partials of its")
 * and `verb` ("has", "sends"). */
agmm_status_t agmm_round_send_rows(const agmm_round_t *x, int q, int64_t rows);
agmm_status_t agmm_round_check_rows(const agmm_round_t *x, int src,
                                    int64_t want, const char *what,
                                    const char *verb);

#endif
