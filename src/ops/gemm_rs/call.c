/* GEMM + reduce-scatter, per call: the rows of this call
 * (agmm_run_args_t.m_rows) and how the ranks agree on them.
 *
 * Rows per call. The plan is laid out for its most rows (desc.m_local =
 * m_max): `part` and g32 hold M_max rows, the receive window one slot of
 * max_rows rows per source, and every (source, owner's tile) and every
 * global tile (tile_base: ready counters, conversion claims) has fixed
 * cells. A call's rows are closed up like a plan made for exactly them:
 * A, `part` and g32 hold the call's rows in rank order (row_off; win_off
 * follows it), so each GEMM call reads and writes the rows a plan of
 * these rows would (agmm_rs_tile_row), and the schedules share out the
 * call's tiles (tiles[]) the same way. The window's slots do not move:
 * owner q's tile t always lands at row t * tile_m of the source's slot.
 *
 * Agreement. Every rank passes the same m_rows; nothing is exchanged up
 * front. Instead each source s raises its rows cell on every peer q, once
 * per round, after q's ack of round e - 1 (as for its puts, so q has
 * finished checking round e - 1's value), to agmm_rows_signal(e, rows):
 * rows = the rows of q's part of C whose partials s sends this round (what
 * s was told q has). Before the owner q sums anything of s (and, for every
 * source, before its round ends), it compares that with its own count: a
 * source that sends another count than q was told aborts the world,
 * naming both ranks, so no row is ever reduced from a disagreeing layout
 * (a source that sends fewer tiles would otherwise leave q waiting for
 * one that never comes).
 *
 * On a transport with posted receives (MPI), the receives are declared
 * once for the most rows (op.c): a source puts every tile of the owner's
 * plan layout, those beyond the call's rows as 0-byte messages, the last
 * one of the call short, and the baseline's bulk put even with no rows;
 * the owner waits for them all before its round ends
 * (agmm_rs_wait_absent), so each persistent receive completes once per
 * round. */
#include <stdio.h>

#include "common/log.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/gemm_rs/tiles.h"
#include "trace/trace.h"

void agmm_rs_set_rows(agmm_plan_t *p, const int64_t *m_rows)
{
    agmm_plan_take_rows(p, m_rows);
    /* g32 holds A's rows as they are in this call: closed up. */
    for (int r = 0; r <= p->nranks; r++)
        p->win_off[r] = p->row_off[r];
}

/* Does the round use the rows cells? Only when the operation takes rows
 * per call and the round communicates. */
static int rows_cells(const agmm_round_t *x)
{
    return x->p->op->rows_per_call && (x->phases & AGMM_PHASE_COMM);
}

agmm_status_t agmm_rs_send_rows(agmm_round_t *x, int q)
{
    agmm_plan_t *p = x->p;
    if (!rows_cells(x) || q == p->rank) return AGMM_OK;
    return agmm_round_send_rows(x, q, p->m_local[q]);
}

agmm_status_t agmm_rs_send_absent(agmm_round_t *x, int q)
{
    agmm_plan_t *p = x->p;
    if (!agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES) ||
        !(x->phases & AGMM_PHASE_COMM) || q == p->rank)
        return AGMM_OK;
    for (int64_t t = p->tiles[q]; t < p->tiles_max[q]; t++)
        AGMM_CHECK(agmm_round_put(
            x, q, agmm_rs_slot_off(p, p->rank, t * p->desc.tile_m),
            agmm_rs_part(p), 0, agmm_rs_tile_sig(p, p->rank, t), t, t + 1,
            AGMM_TSIG_TILE));
    return AGMM_OK;
}

agmm_status_t agmm_rs_check_rows(agmm_round_t *x, int src)
{
    agmm_plan_t *p = x->p;
    if (src == p->rank || !rows_cells(x)) return AGMM_OK;
    return agmm_round_check_rows(x, src, p->m_local[p->rank], "partials of its",
                                 "sends");
}

agmm_status_t agmm_rs_check_all_rows(agmm_round_t *x)
{
    for (int src = 0; src < x->p->nranks; src++)
        AGMM_CHECK(agmm_rs_check_rows(x, src));
    return AGMM_OK;
}

/* Waits for cell `cell` of source s to reach the round (an absent put). */
static agmm_status_t wait_absent(agmm_round_t *x, int s, int64_t t, size_t cell,
                                 double deadline)
{
    agmm_plan_t *p = x->p;
    agmm_wait_what_t what = {
        t < 0 ? "empty partial rows" : "empty tile", s, t, 0, 0, 0};
    int via = agmm_tp_forwarder(p->world, &p->recv_win, s);
    what.via_set = via >= 0;
    what.via = via;
    return agmm_signal_wait(p->world, agmm_win_signal(&p->signals, cell),
                            x->epoch, deadline, &what);
}

agmm_status_t agmm_rs_wait_absent(agmm_round_t *x, int bulk)
{
    agmm_plan_t *p = x->p;
    int r = p->rank;
    if (!agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES) ||
        !(x->phases & AGMM_PHASE_COMM))
        return AGMM_OK;
    double deadline = agmm_plan_deadline(p);
    for (int s = 0; s < p->nranks; s++) {
        if (s == r) continue;
        /* The bulk put is declared when the plan gives this rank rows; the
         * reduction waited for it when the call does. */
        if (bulk && p->m_local[r] == 0 && p->m_max[r] > 0)
            AGMM_CHECK(
                wait_absent(x, s, -1, agmm_sig_off(p, SIG_BULK, s), deadline));
        for (int64_t t = p->tiles[r]; !bulk && t < p->tiles_max[r]; t++)
            AGMM_CHECK(
                wait_absent(x, s, t, agmm_rs_tile_sig(p, s, t), deadline));
    }
    return AGMM_OK;
}
