/* The engine of one simulated round (round.h): threads run their
 * generators' actions, wait on cells and are woken by their raises; the
 * events are the threads' resumptions, the raises of cells and net.c's
 * messages in flight. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "model/round.h"

int64_t mdl_cell(const mdl_round_t *x, int sr, int ck, int a, int64_t t)
{
    const mdl_layout_t *L = x->L;
    return (int64_t)sr * x->per_rank +
           ((int64_t)ck * L->P + a) * (L->tmax ? L->tmax : 1) + t;
}

void mdl_side(mdl_round_t *x, thr_t *th, const act_t *a)
{
    if (th->nside == th->side_cap) {
        /* Compact, then grow. */
        if (th->side_head) {
            memmove(th->side, th->side + th->side_head,
                    (size_t)(th->nside - th->side_head) * sizeof(act_t));
            th->nside -= th->side_head;
            th->side_head = 0;
        }
        if (th->nside == th->side_cap) {
            int cap = th->side_cap ? 2 * th->side_cap : 16;
            act_t *s = realloc(th->side, (size_t)cap * sizeof *s);
            if (!s) {
                x->oom = 1;
                return;
            }
            th->side = s;
            th->side_cap = cap;
        }
    }
    th->side[th->nside++] = *a;
}

static void push(mdl_round_t *x, double t, int type, int a, int64_t b)
{
    if (sim_push(&x->sim, t, type, a, b)) x->oom = 1;
}

static void wake(mdl_round_t *x, thr_t *th, int cause)
{
    th->waited[cause] += x->sim.now - th->wait_t0;
    th->state = 0;
    push(x, x->sim.now, MDL_EV_RESUME, (int)(th - x->th), 0);
}

void mdl_raise(mdl_round_t *x, int64_t c, int cause)
{
    sim_cell_t *cell = &x->cells[c];
    if (cell->got < cell->need) cell->got++;
    if (cell->got < cell->need || cell->t >= 0) return;
    cell->t = x->sim.now;
    cell->cause = (int8_t)cause;
    /* A remote tile or partial: the last one's arrival at its rank. */
    int64_t tm = x->L->tmax ? x->L->tmax : 1;
    int sr = (int)(c / x->per_rank);
    if ((c % x->per_rank) / ((int64_t)x->L->P * tm) == K_TILE &&
        x->sim.now > x->last_arrival[sr])
        x->last_arrival[sr] = x->sim.now;
    for (int32_t w = cell->waiter; w >= 0;) {
        thr_t *th = &x->th[w];
        w = th->next_waiter;
        wake(x, th, cause);
    }
    cell->waiter = -1;
}

void mdl_put_done(mdl_round_t *x, int t, int cause)
{
    thr_t *th = &x->th[t];
    th->outstanding--;
    if (th->outstanding == 0 && th->state == 4) {
        wake(x, th, cause);
        return;
    }
    if (th->outstanding == 0 && th->state == 2) {
        th->waited[cause] += x->sim.now - th->wait_t0;
        th->state = 3;
        th->end = x->sim.now;
    }
}

static void block_on(mdl_round_t *x, thr_t *th, sim_cell_t *cell)
{
    th->wait_gen++;
    th->wait_cell = cell;
    th->state = 1;
    th->wait_t0 = x->sim.now;
    th->next_waiter = cell->waiter;
    cell->waiter = (int32_t)(th - x->th);
}

/* The next action of th: its follow-ups first, then its generator's. */
static int next_action(mdl_round_t *x, thr_t *th, act_t *a)
{
    if (th->side_head < th->nside) {
        *a = th->side[th->side_head++];
        if (th->side_head == th->nside) th->side_head = th->nside = 0;
        return 1;
    }
    return x->next(x, th, a);
}

/* Run th from the simulation's time until it blocks, ends or its clock
 * runs ahead (then an event resumes it). */
static void run_thread(mdl_round_t *x, thr_t *th)
{
    while (th->state == 0 && !x->oom) {
        if (th->clock > x->sim.now) {
            push(x, th->clock, MDL_EV_RESUME, (int)(th - x->th), 0);
            return;
        }
        th->clock = x->sim.now;
        act_t a;
        if (!next_action(x, th, &a)) {
            if (th->outstanding > 0) {
                th->state = 2;
                th->wait_t0 = x->sim.now;
            } else {
                th->state = 3;
                th->end = th->clock;
            }
            return;
        }
        sim_cell_t *cell = NULL;
        if (a.kind == A_WAIT || a.kind == A_CLAIM || a.kind == A_COUNT)
            cell = &x->cells[mdl_cell(x, th->sr, a.ck, a.a, a.t)];
        switch (a.kind) {
        case A_BUSY:
            if (a.cat == AGMM_MODEL_BOUND_GEMM) {
                if (x->nogemm) break;
                th->gemm_s += a.dur;
                th->gemm_after += a.dur;
            }
            th->busy[a.cat] += a.dur;
            th->clock += a.dur;
            break;
        case A_WAIT:
            if (a.ck == K_TILE) th->gemm_after = 0;
            th->timed_out = 0;
            if (cell->t >= 0) break;
            if (a.dur > 0 && a.dur <= x->sim.now) {
                th->timed_out = 1;
                break;
            }
            block_on(x, th, cell);
            if (a.dur > 0)
                push(x, a.dur, MDL_EV_TIMEOUT, (int)(th - x->th), th->wait_gen);
            break;
        case A_CLAIM:
            if (cell->t >= 0) break;
            if (cell->claimed) {
                block_on(x, th, cell);
                break;
            }
            cell->claimed = 1;
            th->busy[AGMM_MODEL_BOUND_COPY] += a.dur;
            th->clock += a.dur;
            push(x, th->clock, MDL_EV_RAISE, AGMM_MODEL_BOUND_COPY,
                 mdl_cell(x, th->sr, a.ck, a.a, a.t));
            break;
        case A_COUNT:
            th->hit = cell->got + 1 == cell->need;
            mdl_raise(x, mdl_cell(x, th->sr, a.ck, a.a, a.t),
                      AGMM_MODEL_BOUND_GEMM);
            break;
        case A_PUT:
            mdl_net_put(x, th, &a);
            /* A signalled tile put (only the fused schedules put K_TILE
             * and K_RED): its release store and wake, after the bytes
             * (the cell is raised when they are there), half of tile_us. */
            if (a.ck == K_TILE || a.ck == K_RED) {
                double h = mdl_tile_half_s(x->L);
                th->busy[AGMM_MODEL_BOUND_OVERHEAD] += h;
                th->clock += h;
            }
            break;
        case A_NOP:
            break;
        case A_QUIET:
            if (th->outstanding > 0) {
                th->state = 4;
                th->wait_t0 = x->sim.now;
            }
            break;
        case A_YIELD:
            push(x, x->sim.now, MDL_EV_RESUME, (int)(th - x->th), 0);
            return;
        }
    }
}

/* A timed wait's deadline: off the cell's waiters, resumed, timed out
 * (unless that wait already ended: a later one has another number). */
static void timeout(mdl_round_t *x, thr_t *th, int64_t gen)
{
    if (th->state != 1 || th->wait_gen != gen) return;
    int32_t me = (int32_t)(th - x->th), *link = &th->wait_cell->waiter;
    while (*link >= 0 && *link != me)
        link = &x->th[*link].next_waiter;
    if (*link == me) *link = th->next_waiter;
    th->timed_out = 1;
    wake(x, th, AGMM_MODEL_BOUND_COPY);
}

agmm_status_t mdl_round_run(mdl_round_t *x)
{
    for (int i = 0; i < x->nth; i++)
        push(x, 0, MDL_EV_RESUME, i, 0);
    sim_ev_t e;
    while (!x->oom && sim_pop(&x->sim, &e)) {
        if (e.type == MDL_EV_RESUME) {
            thr_t *th = &x->th[e.a];
            if (th->state == 0) run_thread(x, th);
        } else if (e.type == MDL_EV_RAISE) {
            mdl_raise(x, e.b, e.a);
        } else if (e.type == MDL_EV_TIMEOUT) {
            timeout(x, &x->th[e.a], e.b);
        } else {
            mdl_net_event(x, &e);
        }
    }
    if (x->oom)
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "model: out of memory during the simulation");
    for (int i = 0; i < x->nth; i++)
        if (x->th[i].state != 3)
            return agmm_error(AGMM_ERR_BAD_STATE,
                              "model: thread %d of rank %d never finished (a "
                              "wait nobody raises)",
                              x->th[i].idx, x->th[i].rank);
    return AGMM_OK;
}
