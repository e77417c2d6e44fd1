/* The round driver: agmm_plan_run(_args) and agmm_plan_run_part(_args):
 * argument checks (the common ones, and what the operation's table says it
 * takes), the round's epoch, the start of the round (posting receives,
 * acknowledging the previous round so peers may put again), the
 * operation's schedule, the acks, and AGMM_SCHEDULE_AUTO's timing. */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "ops/common/auto.h"
#include "ops/common/plan.h"
#include "ops/common/round.h"
#include "ops/common/stage.h"
#include "trace/trace.h"

/* ack[r] = value on every peer: every worker of this rank has finished
 * reading what peers put into its receive window in round `value`, so
 * they may overwrite it (their puts of round value + 1 wait for
 * ack >= value). */
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

/* A failure of this rank in round e (see agmm_world_fail). */
static agmm_status_t abort_on_failure(agmm_plan_t *p, agmm_status_t st,
                                      const char *doing, uint64_t e)
{
    char what[64];
    snprintf(what, sizeof what, "%s round %llu", doing, (unsigned long long)e);
    return agmm_world_fail(p->world, st, what);
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

/* The output pointers of a call: every weight's C (NULL allowed only when
 * the call has no rows). */
static int outputs_ok(const agmm_plan_t *p, const agmm_run_args_t *a, int64_t M)
{
    if (M == 0) return 1;
    if (!a->c) return 0;
    for (int i = 0; i < p->nw; i++)
        if (!a->c[i]) return 0;
    return 1;
}

/* m_rows: nranks counts, each within the plan's most rows for that rank.
 * Writes the offending rank to *bad. */
static int rows_ok(const agmm_plan_t *p, const int64_t *m, int *bad)
{
    for (int r = 0; r < p->nranks; r++)
        if (m[r] < 0 || m[r] > p->m_max[r]) {
            *bad = r;
            return 0;
        }
    return 1;
}

/* INT8's A scales: given (one per row of A, or one), finite, >= 0;
 * nothing else takes them. Writes what is wrong into what (empty: fine). */
static void scales_ok(const agmm_plan_t *p, const agmm_run_args_t *a,
                      int64_t a_rows, char *what, size_t len)
{
    what[0] = 0;
    if (!p->int8) {
        if (a->a_scale || a->a_gathered_scale)
            snprintf(what, len, "a_scale on a %s plan (only int8 takes scales)",
                     agmm_dtype_name(p->desc.dtype));
        return;
    }
    if (a->a_gathered_scale && !a->a_gathered) {
        snprintf(what, len, "a_gathered_scale without a_gathered");
        return;
    }
    /* No rows: nothing is read, so nothing is needed. */
    if (a_rows == 0) return;
    int64_t n = p->desc.a_scale == AGMM_SCALE_TENSOR ? 1 : a_rows;
    if (!a->a_scale) {
        snprintf(what, len, "a_scale NULL (an int8 plan takes A's scales)");
        return;
    }
    for (int64_t i = 0; i < n; i++)
        if (!(a->a_scale[i] >= 0 && a->a_scale[i] <= FLT_MAX)) {
            snprintf(what, len, "a_scale[%lld] = %g (allowed: finite, >= 0)",
                     (long long)i, (double)a->a_scale[i]);
            return;
        }
}

/* Enters the plan (busy flag, plan.c) on success: the caller leaves it.
 * Applies the call's rows (the operation's set_rows) once the arguments
 * are good. */
static agmm_status_t check_args(agmm_plan_t *p, const char *fn,
                                const agmm_run_args_t *a)
{
    if (!p) return agmm_error(AGMM_ERR_INVALID_ARG, "%s: plan is NULL", fn);
    AGMM_CHECK(agmm_plan_enter(p, fn));
    const agmm_operation_t *op = p->op;
    agmm_status_t st = AGMM_OK;
    int bad = 0;
    const int64_t *m = a->m_rows ? a->m_rows : p->m_max;
    int64_t M = 0, a_rows = 0, c_rows = 0;
    char what[160];
    if (a->m_rows && !op->rows_per_call) {
        snprintf(what, sizeof what,
                 "m_rows on a %s plan (it takes no per-call rows)", op->name);
        st = bad_arg(p, AGMM_ERR_UNSUPPORTED, fn, what);
    } else if (a->m_rows && !rows_ok(p, a->m_rows, &bad)) {
        snprintf(what, sizeof what,
                 "m_rows[%d] = %lld (allowed 0..%lld, the plan's "
                 "m_local[%d])",
                 bad, (long long)a->m_rows[bad], (long long)p->m_max[bad], bad);
        st = bad_arg(p, AGMM_ERR_INVALID_ARG, fn, what);
    }
    for (int r = 0; st == AGMM_OK && r < p->nranks; r++)
        M += m[r];
    if (st == AGMM_OK) op->call_rows(p->rank, m, M, &a_rows, &c_rows);
    if (st != AGMM_OK) {
    } else if (a->a_gathered && !op->returns_a) {
        snprintf(what, sizeof what,
                 "a_gathered on a %s plan (it returns no gathered A)",
                 op->name);
        st = bad_arg(p, AGMM_ERR_UNSUPPORTED, fn, what);
    } else if (!outputs_ok(p, a, c_rows))
        st = bad_arg(p, AGMM_ERR_INVALID_ARG, fn, "c NULL");
    else if (!a->a_local && a_rows * p->k_gemm > 0) /* A: [a_rows, k_gemm] */
        st = bad_arg(p, AGMM_ERR_INVALID_ARG, fn, "a_local NULL");
    else if (scales_ok(p, a, a_rows, what, sizeof what), what[0])
        st = bad_arg(p, AGMM_ERR_INVALID_ARG, fn, what);
    else if (p->weight_set != (1u << p->nw) - 1)
        st = bad_arg(p, AGMM_ERR_BAD_STATE, fn,
                     p->nw > 1 ? "a weight not set (call "
                                 "agmm_plan_set_weight_i for every weight)"
                               : "no weight (call agmm_plan_set_weight first)");
    else if (p->desc.bias && p->bias_set != (1u << p->nw) - 1)
        st = bad_arg(p, AGMM_ERR_BAD_STATE, fn,
                     "a bias not set (the plan has desc.bias: call "
                     "agmm_plan_set_bias for every weight)");
    if (st != AGMM_OK) {
        agmm_plan_leave(p);
        return st;
    }
    if (op->set_rows) op->set_rows(p, a->m_rows);
    p->a_rows = a_rows; /* for the staging of the round's A */
    return AGMM_OK;
}

/* One round of `schedule` (FUSED or BASELINE) running `phases`. */
static agmm_status_t round_run(agmm_plan_t *p, agmm_schedule_t schedule,
                               int phases, const agmm_run_args_t *a)
{
    /* Round e publishes e and waits for >= e: signals are never reset, so a
     * signal left from round e - 1 can never satisfy a wait of round e. */
    uint64_t e = ++p->epoch;
    static void *const none[1] = {NULL};
    void *const *cs = a->c ? a->c : none;
    agmm_round_t round = {p,
                          a->a_local,
                          NULL,
                          cs[0],
                          cs,
                          e,
                          p->desc.comm_workers,
                          p->desc.gemm_workers,
                          phases};
    agmm_plan_stage_a(p, a->a_local, a->a_scale, p->a_rows, &round.a,
                      &round.a_scale);
    uint64_t t_round = agmm_trace_round_begin(p->trace, schedule);
    agmm_status_t st = round_start(
        p, schedule == AGMM_SCHEDULE_FUSED ? AGMM_RSET_TILES : AGMM_RSET_SHARDS,
        e);
    int fused = schedule == AGMM_SCHEDULE_FUSED;
    if (fused) p->fused_rounds++; /* before the workers start */
    if (st == AGMM_OK)
        st = abort_on_failure(
            p, fused ? p->op->fused(&round) : p->op->baseline(&round), "run",
            e);
    /* Before the acks: peers may overwrite the window once they have them. */
    if (st == AGMM_OK && a->a_gathered && phases == AGMM_PHASE_ALL)
        p->op->copy_a(p, round.a, a->a_gathered, a->a_gathered_scale);
    if (st == AGMM_OK && !acks_at_round_start(p))
        st = abort_on_failure(p, send_acks(p, e), "acknowledge", e);
    agmm_trace_round_end(p->trace, t_round, e);
    return st;
}

static agmm_status_t run_entered(agmm_plan_t *p, const agmm_run_args_t *a)
{
    agmm_schedule_t schedule = a->schedule;
    if (schedule == AGMM_SCHEDULE_FUSED || schedule == AGMM_SCHEDULE_BASELINE)
        return round_run(p, schedule, AGMM_PHASE_ALL, a);
    if (schedule != AGMM_SCHEDULE_AUTO)
        return bad_arg(p, AGMM_ERR_INVALID_ARG, "run", "an invalid schedule");
    agmm_schedule_t s = agmm_auto_next(p);
    double t0 = agmm_now();
    AGMM_CHECK(round_run(p, s, AGMM_PHASE_ALL, a));
    return agmm_auto_record(p, s, agmm_now() - t0);
}

void agmm_run_args_init(agmm_run_args_t *args)
{
    if (args) memset(args, 0, sizeof *args);
}

agmm_status_t agmm_plan_run_args(agmm_plan_t *p, const agmm_run_args_t *args)
{
    if (!args) return agmm_error(AGMM_ERR_INVALID_ARG, "run: args is NULL");
    AGMM_CHECK(check_args(p, "run", args));
    agmm_status_t st = run_entered(p, args);
    agmm_plan_leave(p);
    return st;
}

agmm_status_t agmm_plan_run(agmm_plan_t *p, agmm_schedule_t schedule,
                            const void *a_local, void *c)
{
    agmm_run_args_t a = {schedule, a_local, &c, NULL, NULL, NULL, NULL};
    return agmm_plan_run_args(p, &a);
}

static agmm_status_t part_entered(agmm_plan_t *p, agmm_part_t part,
                                  const agmm_run_args_t *a)
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
        return round_run(p, AGMM_SCHEDULE_FUSED, AGMM_PHASE_COMM, a);
    case AGMM_PART_GEMM_ONLY:
        return round_run(p, AGMM_SCHEDULE_FUSED, AGMM_PHASE_GEMM, a);
    case AGMM_PART_MONOLITHIC:
        return round_run(p, AGMM_SCHEDULE_BASELINE, AGMM_PHASE_GEMM, a);
    }
    return bad_arg(p, AGMM_ERR_INVALID_ARG, "run_part", "an invalid part");
}

agmm_status_t agmm_plan_run_part_args(agmm_plan_t *p, agmm_part_t part,
                                      const agmm_run_args_t *args)
{
    if (!args)
        return agmm_error(AGMM_ERR_INVALID_ARG, "run_part: args is NULL");
    AGMM_CHECK(check_args(p, "run_part", args));
    agmm_status_t st = part_entered(p, part, args);
    agmm_plan_leave(p);
    return st;
}

agmm_status_t agmm_plan_run_part(agmm_plan_t *p, agmm_part_t part,
                                 const void *a_local, void *c)
{
    agmm_run_args_t a = {
        AGMM_SCHEDULE_FUSED, a_local, &c, NULL, NULL, NULL, NULL};
    return agmm_plan_run_part_args(p, part, &a);
}
