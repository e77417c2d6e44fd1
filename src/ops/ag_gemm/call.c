/* All-gather + GEMM, per call: the rows of this call (agmm_run_args_t.m_rows)
 * and how the ranks agree on them, and the gathered A handed back.
 *
 * Rows per call. The plan is laid out for its most rows (desc.m_local =
 * m_max): the window and g32 hold M_max rows, and each source's tiles have
 * fixed signal cells (tile_base). In a call with fewer rows the output rows
 * (row_off, of C and a_gathered) close up, and so do the rows in the window
 * and g32 (win_off = row_off), except on a transport with posted receives
 * (MPI), whose receives are declared at the plan's places (win_max): there
 * each source's rows start at its place, leaving gaps. Puts of round e
 * land only after the receiver's ack of round e - 1, so a layout that
 * changes from round to round is never written under a reader. Every rank
 * passes the same m_rows; nothing is exchanged up front. Instead each rank
 * raises its rows cell on every peer at the start of its puts, to
 * agmm_rows_signal(e, rows): the epoch in the high half, its own row count in
 * the low half. Before a GEMM worker uses any row of a source (after its first
 * tile or bulk signal, or before the baseline's native all-gather starts), it
 * compares that cell with its own count: a peer that sends another count
 * than this rank was told aborts the world, naming both ranks, so no row
 * is ever computed from a disagreeing layout. The sender raises the cell
 * only after the peer's ack of round e - 1 (as for its tiles), so the peer
 * has finished checking round e - 1's value. Every tile of the plan's
 * layout is signalled each round, those beyond the call's rows empty
 * (fused.c), so a peer waiting for one it expected wakes and finds the
 * mismatch.
 *
 * On a transport with posted receives (MPI), the receives are declared
 * once for the most rows: the empty tiles are 0-byte messages, the last
 * one of a source short, and the receiver waits for them all before its
 * round ends (agmm_ag_wait_absent), so each persistent receive completes
 * once per round. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ops/ag_gemm/ag_gemm.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "trace/trace.h"

void agmm_ag_set_rows(agmm_plan_t *p, const int64_t *m_rows)
{
    agmm_plan_take_rows(p, m_rows);
    /* Where the rows go: closed up like the output where puts may land
     * anywhere (shm: the window then holds one contiguous block, so the
     * GEMM is one call over all sources, as for a plan of exactly these
     * rows); the declared places with posted receives (MPI). */
    const int64_t *w = agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES)
                           ? p->win_max
                           : p->row_off;
    for (int r = 0; r <= p->nranks; r++)
        p->win_off[r] = w[r];
}

void agmm_ag_copy_gathered(agmm_plan_t *p, const void *a, void *out,
                           float *out_scale)
{
    size_t row_bytes = p->row_bytes;
    size_t k = (size_t)p->desc.k, out_row = k * p->esize;
    unsigned char *dst = out;
    for (int src = 0; src < p->nranks; src++) {
        int64_t rows = p->m_local[src];
        if (rows == 0) continue;
        const unsigned char *from =
            src == p->rank
                ? a
                : p->recv_win.local + (size_t)p->win_off[src] * row_bytes;
        unsigned char *to = dst + (size_t)p->row_off[src] * out_row;
        if (!p->scale_off) { /* the rows as they are */
            memcpy(to, from, (size_t)rows * row_bytes);
            continue;
        }
        /* INT8: the values, and the scales when asked (stage.c's rows). */
        for (int64_t i = 0; i < rows; i++) {
            const unsigned char *row = from + (size_t)i * row_bytes;
            memcpy(to + (size_t)i * out_row, row, k);
            if (out_scale)
                memcpy(out_scale + p->row_off[src] + i, row + p->scale_off,
                       sizeof(float));
        }
    }
}

agmm_status_t agmm_ag_send_rows(agmm_round_t *x, int first, int stride)
{
    agmm_plan_t *p = x->p;
    int r = p->rank;
    for (int i = 1 + first; i < p->nranks; i += stride) {
        int q = agmm_source_order(r, p->nranks, i);
        AGMM_CHECK(agmm_round_send_rows(x, q, p->m_local[r]));
    }
    return AGMM_OK;
}

agmm_status_t agmm_ag_check_rows(agmm_round_t *x, int src)
{
    agmm_plan_t *p = x->p;
    if (src == p->rank || !(x->phases & AGMM_PHASE_COMM)) return AGMM_OK;
    return agmm_round_check_rows(x, src, p->m_local[src], "", "has");
}

agmm_status_t agmm_ag_wait_absent(agmm_round_t *x)
{
    agmm_plan_t *p = x->p;
    if (!agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES) ||
        !(x->phases & AGMM_PHASE_COMM))
        return AGMM_OK;
    double deadline = agmm_plan_deadline(p);
    for (int src = 0; src < p->nranks; src++) {
        if (src == p->rank) continue;
        for (int64_t t = p->tiles[src]; t < p->tiles_max[src]; t++) {
            agmm_wait_what_t what = {"empty tile", src, t, 0, 0, 0};
            int via = agmm_tp_forwarder(p->world, &p->recv_win, src);
            what.via_set = via >= 0;
            what.via = via;
            AGMM_CHECK(agmm_signal_wait(
                p->world,
                agmm_win_signal(
                    &p->signals,
                    agmm_sig_off(p, SIG_TILE, p->tile_base[src] + t)),
                x->epoch, deadline, &what));
        }
    }
    return AGMM_OK;
}
