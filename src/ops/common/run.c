/* agmm_plan_run and agmm_plan_run_part: argument checks, the round's epoch,
 * the start of the round (posting receives, acknowledging the previous round
 * so peers may put again), the schedule, and AGMM_SCHEDULE_AUTO's timing. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "ops/common/plan_internal.h"
#include "trace/trace.h"

/* ack[r] = value on every peer: every worker of this rank has finished
 * reading the gathered rows of round `value`, so peers may overwrite them
 * (their puts of round value + 1 wait for ack >= value). */
static agmm_status_t send_acks(agmm_plan_t *p, uint64_t value)
{
    agmm_world_t *w = p->world;
    for (int q = 0; q < p->nranks; q++) {
        if (q == p->rank) continue;
        AGMM_CHECK(agmm_tp_signal(w, &p->signals, q,
                                  agmm_sig_off(p, SIG_ACK, p->rank), value));
        agmm_trace_publish(q, -1, value, AGMM_TSIG_ACK);
    }
    AGMM_CHECK(agmm_tp_quiet(w));
    p->last_ack_sent = value; /* what destroy waits for from every peer */
    return AGMM_OK;
}

/* A failure that only this rank saw: abort the world so that peers are
 * told at once instead of waiting out their timeout for our puts or acks.
 * Timeouts abort in the wait itself and ABORTED echoes another abort. */
static agmm_status_t abort_on_failure(agmm_plan_t *p, agmm_status_t st,
                                      const char *doing, uint64_t e)
{
    if (st == AGMM_OK || st == AGMM_ERR_ABORTED || st == AGMM_ERR_TIMEOUT)
        return st;
    char reason[460];
    snprintf(reason, sizeof reason, "rank %d failed to %s round %llu: %s",
             p->rank, doing, (unsigned long long)e, agmm_thread_error());
    agmm_world_abort_with(p->world, reason);
    return st;
}

/* When a round acknowledges the previous one: a transport with posted
 * receives (AGMM_TP_CAP_POSTED_RECEIVES: MPI) posts round e's receives
 * first and only then acks round e - 1, so every put of round e finds its
 * receive posted. Other transports (shm) ack at the end of each round
 * instead, which lets a peer start its puts sooner. */
static int acks_at_round_start(const agmm_plan_t *p)
{
    return agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES);
}

/* The start of round e on this rank, before any worker runs (see
 * acks_at_round_start). A failure here aborts the world: peers would
 * otherwise wait for our ack until their timeout. */
static agmm_status_t round_start(agmm_plan_t *p, agmm_tp_recv_set_t set,
                                 uint64_t e)
{
    agmm_world_t *w = p->world;
    if (!acks_at_round_start(p)) return AGMM_OK;
    agmm_status_t st = agmm_tp_round_begin(w, &p->signals, set, e);
    if (st == AGMM_OK && e > 1) st = send_acks(p, e - 1);
    return abort_on_failure(p, st, "start", e);
}

/* A bad argument on one rank of a live plan aborts the world with a reason
 * naming the rank and the argument: the peers' round would otherwise wait
 * for this rank until their timeout. (A NULL or destroyed plan has no
 * world to abort: the caller just gets the status.) */
static agmm_status_t bad_arg(agmm_plan_t *p, agmm_status_t st, const char *fn,
                             const char *what)
{
    agmm_error(st, "%s: %s", fn, what);
    char reason[300];
    snprintf(reason, sizeof reason, "rank %d called %s with %s", p->rank, fn,
             what);
    agmm_world_abort_with(p->world, reason);
    return st;
}

/* Enters the plan (busy flag, plan.c) on success: the caller leaves it. */
static agmm_status_t check_args(agmm_plan_t *p, const char *fn,
                                const void *a_local, const float *c)
{
    if (!p) return agmm_error(AGMM_ERR_INVALID_ARG, "%s: plan is NULL", fn);
    AGMM_CHECK(agmm_plan_enter(p, fn));
    agmm_status_t st = AGMM_OK;
    if (!c)
        st = bad_arg(p, AGMM_ERR_INVALID_ARG, fn, "c NULL");
    else if (!a_local && (p->desc.op == AGMM_OP_GEMM_RS
                              ? p->k_gemm > 0 /* a_local is [M, k_gemm] */
                              : p->m_local[p->rank] > 0))
        st = bad_arg(p, AGMM_ERR_INVALID_ARG, fn, "a_local NULL");
    else if (!p->weight_set)
        st = bad_arg(p, AGMM_ERR_BAD_STATE, fn,
                     "no weight (call agmm_plan_set_weight first)");
    if (st != AGMM_OK) agmm_plan_leave(p);
    return st;
}

/* One round of `schedule` (FUSED or BASELINE) running `phases`. */
static agmm_status_t round_run(agmm_plan_t *p, agmm_schedule_t schedule,
                               int phases, const void *a_local, float *c)
{
    /* Round e publishes e and waits for >= e: signals are never reset, so a
     * signal left from round e - 1 can never satisfy a wait of round e. */
    uint64_t e = ++p->epoch;
    agmm_round_t round = {
        p, a_local, c, e, p->desc.comm_workers, p->desc.gemm_workers, phases};
    uint64_t t_round = agmm_trace_round_begin(p->trace, schedule);
    agmm_status_t st = round_start(
        p, schedule == AGMM_SCHEDULE_FUSED ? AGMM_RSET_TILES : AGMM_RSET_SHARDS,
        e);
    int rs = p->desc.op == AGMM_OP_GEMM_RS;
    if (st == AGMM_OK && schedule == AGMM_SCHEDULE_FUSED)
        st = rs ? agmm_run_rs_fused(&round) : agmm_run_fused(&round);
    else if (st == AGMM_OK)
        st = rs ? agmm_run_rs_baseline(&round) : agmm_run_baseline(&round);
    if (st == AGMM_OK && !acks_at_round_start(p))
        st = abort_on_failure(p, send_acks(p, e), "acknowledge", e);
    agmm_trace_round_end(p->trace, t_round, e);
    return st;
}

static agmm_status_t run_entered(agmm_plan_t *p, agmm_schedule_t schedule,
                                 const void *a_local, float *c)
{
    if (schedule == AGMM_SCHEDULE_FUSED || schedule == AGMM_SCHEDULE_BASELINE)
        return round_run(p, schedule, AGMM_PHASE_ALL, a_local, c);
    if (schedule != AGMM_SCHEDULE_AUTO)
        return bad_arg(p, AGMM_ERR_INVALID_ARG, "run", "an invalid schedule");
    agmm_schedule_t s = agmm_auto_next(p);
    double t0 = agmm_now();
    AGMM_CHECK(round_run(p, s, AGMM_PHASE_ALL, a_local, c));
    return agmm_auto_record(p, s, agmm_now() - t0);
}

agmm_status_t agmm_plan_run(agmm_plan_t *p, agmm_schedule_t schedule,
                            const void *a_local, float *c)
{
    AGMM_CHECK(check_args(p, "run", a_local, c));
    agmm_status_t st = run_entered(p, schedule, a_local, c);
    agmm_plan_leave(p);
    return st;
}

static agmm_status_t part_entered(agmm_plan_t *p, agmm_part_t part,
                                  const void *a_local, float *c)
{
    /* A transport that posts this round's receives (MPI) would leave them
     * unmatched in a round without puts. Every rank decides alike. */
    if (part != AGMM_PART_COMM_ONLY &&
        agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "run_part: the gemm-only and monolithic parts need a "
                          "transport without posted receives (shm, not %s)",
                          agmm_world_transport_name(p->world));
    switch (part) {
    case AGMM_PART_COMM_ONLY:
        return round_run(p, AGMM_SCHEDULE_FUSED, AGMM_PHASE_COMM, a_local, c);
    case AGMM_PART_GEMM_ONLY:
        return round_run(p, AGMM_SCHEDULE_FUSED, AGMM_PHASE_GEMM, a_local, c);
    case AGMM_PART_MONOLITHIC:
        return round_run(p, AGMM_SCHEDULE_BASELINE, AGMM_PHASE_GEMM, a_local,
                         c);
    }
    return bad_arg(p, AGMM_ERR_INVALID_ARG, "run_part", "an invalid part");
}

agmm_status_t agmm_plan_run_part(agmm_plan_t *p, agmm_part_t part,
                                 const void *a_local, float *c)
{
    AGMM_CHECK(check_args(p, "run_part", a_local, c));
    agmm_status_t st = part_entered(p, part, a_local, c);
    agmm_plan_leave(p);
    return st;
}

void agmm_run_args_init(agmm_run_args_t *args)
{
    if (args) memset(args, 0, sizeof *args);
}

agmm_status_t agmm_plan_run_args(agmm_plan_t *p, const agmm_run_args_t *args)
{
    if (!args)
        return agmm_error(AGMM_ERR_INVALID_ARG, "run_args: args is NULL");
    if (args->m_rows || args->a_gathered || !args->c)
        return agmm_error(AGMM_ERR_UNSUPPORTED, "run_args: not yet");
    return agmm_plan_run(p, args->schedule, args->a_local, args->c[0]);
}

agmm_status_t agmm_plan_run_part_args(agmm_plan_t *p, agmm_part_t part,
                                      const agmm_run_args_t *args)
{
    if (!args || !args->c)
        return agmm_error(AGMM_ERR_INVALID_ARG, "run_part_args: args is NULL");
    return agmm_plan_run_part(p, part, args->a_local, args->c[0]);
}
