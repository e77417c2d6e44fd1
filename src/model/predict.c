/* agmm_model_predict: one round of the fused and of the baseline schedule,
 * each simulated twice (as it runs, and with every GEMM call taking no
 * time: the communication alone), and what bounds it.
 *
 * Which ranks are simulated: every rank, unless every rank has the same
 * rows and k part; then the world is invariant under the rotation by one
 * rank (shm, link: nothing is shared between ranks) or by one host (MPI:
 * the ranks of a host share its NIC), and a representative group (a rank,
 * a host) with every put to another rank delivered to its image stands
 * for the world (round.h). Exactly for ag-gemm; gemm-rs and gemm-ar sum in
 * rank order 0..P-1, which no rotation keeps, so they simulate every rank
 * up to FULL_PUTS puts and past it the first and the last group, keeping
 * the slower (docs/model.md, "Which ranks are simulated"). */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "model/round.h"

/* Cells beyond this many per round are refused (an uneven world that
 * large would take minutes and gigabytes). */
enum { MAX_CELLS = 1 << 26 };

static void round_free(mdl_round_t *x)
{
    for (int i = 0; x->th && i < x->nth; i++)
        free(x->th[i].side);
    free(x->th);
    free(x->cells);
    free(x->wire);
    free(x->msgs);
    free(x->last_arrival);
    sim_free(&x->sim);
}

static agmm_status_t round_init(mdl_round_t *x, const mdl_layout_t *L,
                                int fused, int nogemm, int S, int base)
{
    memset(x, 0, sizeof *x);
    x->L = L;
    x->fused = fused;
    x->nogemm = nogemm;
    x->S = S;
    x->base = base;
    x->hosts_sim = (S + L->R - 1) / L->R;
    x->next = L->d->op == AGMM_OP_AG_GEMM ? mdl_ag_next : mdl_rs_next;
    int64_t tm = L->tmax ? L->tmax : 1;
    x->per_rank = (int64_t)K_KINDS * L->P * tm;
    if ((double)x->per_rank * S > MAX_CELLS)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "model: %d ranks with uneven rows need %g cells "
                          "(at most %d): give every rank the same rows",
                          L->P, (double)x->per_rank * S, (int)MAX_CELLS);
    x->per = L->G + L->C;
    x->nth = S * x->per;
    x->cells = malloc((size_t)(x->per_rank * S) * sizeof *x->cells);
    x->th = calloc((size_t)x->nth, sizeof *x->th);
    /* wire [S * P], deliv [S], egress, ingress [hosts_sim], relay [S] */
    size_t nres = (size_t)S * L->P + 2 * (size_t)S + 2 * (size_t)x->hosts_sim;
    x->wire = calloc(nres, sizeof *x->wire);
    x->last_arrival = calloc((size_t)S, sizeof(double));
    if (!x->cells || !x->th || !x->wire || !x->last_arrival) {
        round_free(x);
        return agmm_error(AGMM_ERR_NO_MEMORY, "model: out of memory");
    }
    x->deliv = x->wire + (size_t)S * L->P;
    x->relay = x->deliv + S;
    x->egress = x->relay + S;
    x->ingress = x->egress + x->hosts_sim;
    for (int64_t c = 0; c < x->per_rank * S; c++) {
        int ck = (int)((c % x->per_rank) / ((int64_t)L->P * tm));
        x->cells[c] = (sim_cell_t){-1, 1, 0, -1, 0, 0};
        if (ck == K_READY) x->cells[c].need = L->ngroups;
        if (ck == K_JOIN) x->cells[c].need = L->G + L->C;
    }
    for (int i = 0; i < x->nth; i++) {
        thr_t *th = &x->th[i];
        th->sr = i / x->per;
        th->rank = x->base + th->sr;
        th->idx = i % x->per;
        th->gemm = th->idx < L->G;
        if (!th->gemm) th->idx -= L->G;
        th->next_waiter = -1;
    }
    return AGMM_OK;
}

static double max_d(double a, double b)
{
    return a > b ? a : b;
}

/* The result of one schedule's rounds: x as it ran, y without GEMM time. */
static void collect(const mdl_round_t *x, const mdl_round_t *y,
                    agmm_model_sched_t *out, int *slowest)
{
    const mdl_layout_t *L = x->L;
    double over = mdl_round_s(L), end = -1, comm = 0;
    int sr = 0;
    const thr_t *crit = NULL;
    for (int i = 0; i < x->nth; i++)
        if (x->th[i].end > end) {
            end = x->th[i].end;
            crit = &x->th[i];
            sr = crit->sr;
        }
    for (int i = 0; i < y->nth; i++)
        comm = max_d(comm, y->th[i].end);
    memset(out, 0, sizeof *out);
    out->time_s = end + over;
    out->comm_s = comm;
    for (int i = 0; i < x->nth; i++) {
        const thr_t *th = &x->th[i];
        if (th->sr == sr) out->gemm_s = max_d(out->gemm_s, th->gemm_s);
        out->busy_s[AGMM_MODEL_BOUND_GEMM] =
            max_d(out->busy_s[AGMM_MODEL_BOUND_GEMM], th->gemm_s);
        for (int k = AGMM_MODEL_BOUND_COPY; k <= AGMM_MODEL_BOUND_OVERHEAD; k++)
            out->busy_s[k] = max_d(out->busy_s[k], th->busy[k]);
    }
    int nwire = L->m->transport == AGMM_MODEL_LINK ? x->S * L->P : 0;
    for (int i = 0; i < nwire; i++)
        out->busy_s[AGMM_MODEL_BOUND_LINK] =
            max_d(out->busy_s[AGMM_MODEL_BOUND_LINK], x->wire[i].busy);
    for (int i = 0; i < x->hosts_sim; i++)
        out->busy_s[AGMM_MODEL_BOUND_LINK] =
            max_d(out->busy_s[AGMM_MODEL_BOUND_LINK],
                  max_d(x->egress[i].busy, x->ingress[i].busy));
    for (int i = 0; i < x->S; i++) {
        out->busy_s[AGMM_MODEL_BOUND_RELAY] =
            max_d(out->busy_s[AGMM_MODEL_BOUND_RELAY], x->relay[i].busy);
        out->busy_s[AGMM_MODEL_BOUND_COPY] =
            max_d(out->busy_s[AGMM_MODEL_BOUND_COPY], x->deliv[i].busy);
    }
    out->busy_s[AGMM_MODEL_BOUND_OVERHEAD] += over;
    out->exposed_s = max_d(out->time_s - out->gemm_s, 0);
    /* The bound: GEMM while the workers wait little. Otherwise, per kind,
     * the larger of its most loaded resource's busy time (a queue that
     * delays what others wait for: a comm worker's copies hold back its
     * later puts, which its receivers see as late tiles) and what the
     * critical thread (the last to end) waited for on it plus spent on it
     * (a latency shows only there); the largest kind bounds. A wait on a
     * GEMM's count (gemm-rs's ready) counts for GEMM. */
    out->bound = AGMM_MODEL_BOUND_GEMM;
    if (out->exposed_s > 0.1 * out->time_s && crit) {
        double most = crit->waited[AGMM_MODEL_BOUND_GEMM];
        for (int k = AGMM_MODEL_BOUND_LINK; k < AGMM_MODEL_BOUND_COUNT; k++) {
            double c = max_d(out->busy_s[k],
                             crit->waited[k] + crit->busy[k] +
                                 (k == AGMM_MODEL_BOUND_OVERHEAD ? over : 0));
            if (c > most) {
                most = c;
                out->bound = (agmm_model_bound_t)k;
            }
        }
    }
    *slowest = sr;
}

/* Run one schedule as it runs and without GEMM time, simulating world
 * ranks base .. base + S - 1; the slower of earlier runs is kept. */
static agmm_status_t schedule(const mdl_layout_t *L, int fused, int S, int base,
                              agmm_model_sched_t *out, agmm_model_result_t *res)
{
    mdl_round_t x, y;
    AGMM_CHECK(round_init(&x, L, fused, 0, S, base));
    agmm_status_t st = round_init(&y, L, fused, 1, S, base);
    if (st != AGMM_OK) {
        round_free(&x);
        return st;
    }
    st = mdl_round_run(&x);
    if (st == AGMM_OK) st = mdl_round_run(&y);
    agmm_model_sched_t got;
    int sr;
    if (st == AGMM_OK) {
        collect(&x, &y, &got, &sr);
        res->events += x.sim.events + y.sim.events;
    }
    if (st == AGMM_OK && got.time_s > out->time_s) {
        *out = got;
        if (fused) {
            res->last_arrival_s = x.last_arrival[sr];
            res->gemm_before_last_s = 0;
            for (int i = 0; i < x.nth; i++) {
                const thr_t *th = &x.th[i];
                if (th->sr == sr && th->gemm)
                    res->gemm_before_last_s = max_d(
                        res->gemm_before_last_s, th->gemm_s - th->gemm_after);
            }
        }
    }
    round_free(&x);
    round_free(&y);
    return st;
}

/* Past this many puts of a round (P^2 tiles) gemm-rs and gemm-ar take the
 * symmetric fast path, which for them approximates (docs/model.md). */
static const double FULL_PUTS = 1 << 17;

agmm_status_t mdl_predict(const agmm_model_machine_t *m,
                          const agmm_plan_desc_t *desc, int mode,
                          agmm_model_result_t *out)
{
    if (!out) return agmm_error(AGMM_ERR_INVALID_ARG, "model: out is NULL");
    memset(out, 0, sizeof *out);
    AGMM_CHECK(agmm_model_check(m, desc));
    mdl_layout_t L;
    AGMM_CHECK(mdl_layout_build(m, desc, &L));
    int P = L.P, S = P, rs = desc->op != AGMM_OP_AG_GEMM;
    int fast = mode == MDL_FAST ||
               (mode == MDL_AUTO &&
                (!rs || (double)P * P * (double)L.tmax > FULL_PUTS));
    if (fast && L.uniform)
        S = m->transport == AGMM_MODEL_MPI ? (m->hosts > 1 ? L.R : P) : 1;
    /* ag-gemm: any representative group is exact; gemm-rs/ar: their sums
     * run in rank order 0..P-1, so the first and the last group differ
     * most: both are simulated and the slower kept. */
    int bases[2] = {P - S, 0}, nb = rs && S < P ? 2 : 1;
    out->fused.time_s = out->baseline.time_s = -1;
    agmm_status_t st = AGMM_OK;
    for (int i = 0; i < nb && st == AGMM_OK; i++) {
        st = schedule(&L, 1, S, bases[i], &out->fused, out);
        if (st == AGMM_OK)
            st = schedule(&L, 0, S, bases[i], &out->baseline, out);
    }
    if (st == AGMM_OK) out->ratio = out->fused.time_s / out->baseline.time_s;
    mdl_layout_free(&L);
    return st;
}

agmm_status_t agmm_model_predict(const agmm_model_machine_t *m,
                                 const agmm_plan_desc_t *desc,
                                 agmm_model_result_t *out)
{
    return mdl_predict(m, desc, MDL_AUTO, out);
}
