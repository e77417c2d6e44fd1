/* The non-overlapped baseline: all-gather every shard with one bulk put per
 * peer (or the transport's native all-gather: MPI_Allgatherv on MPI), wait
 * for all of them, then one GEMM over the gathered matrix (split over the
 * same GEMM workers by columns, as a threaded BLAS would).
 * It shares the plan's windows and epochs with the fused schedule, so the
 * two can alternate round by round. With `phases` lacking COMM (the
 * monolithic benchmark part) nobody puts or waits: the GEMM runs over the
 * rows already in place. */
#include <string.h>

#include "common/fault.h"
#include "common/log.h"
#include "ops/ag_gemm/ag_gemm.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"
#include "trace/trace.h"

/* Bulk puts to peers i = first, first + stride, ... (in rotated order). */
static agmm_status_t put_bulk(agmm_round_t *x, int first, int stride)
{
    agmm_plan_t *p = x->p;
    agmm_world_t *w = p->world;
    int r = p->rank;
    size_t row_bytes = p->row_bytes;
    size_t bytes = (size_t)p->m_local[r] * row_bytes;
    size_t off = (size_t)p->win_off[r] * row_bytes;
    /* This call's row count to every peer (ag_gemm/call.c). */
    AGMM_CHECK(agmm_ag_send_rows(x, first, stride));
    if (agmm_tp_has(w, AGMM_TP_CAP_NATIVE_ALLGATHER)) {
        /* The transport's own all-gather (MPI_Iallgatherv on MPI): what an
         * MPI user writes today. One thread per rank takes part; it then
         * raises this rank's bulk signals itself (release), so the GEMM
         * workers wait exactly as with puts. No ack wait: a peer's rows
         * land in our window only once we entered the collective, i.e.
         * after we finished reading the previous round. */
        if (first != 0) return AGMM_OK;
        /* Every rank's count agreed before the collective relies on it. */
        for (int src = 0; src < p->nranks; src++)
            AGMM_CHECK(agmm_ag_check_rows(x, src));
        AGMM_CHECK(agmm_fault_before_put(r)); /* test hook, fault.h */
        AGMM_CHECK(agmm_tp_allgather_rows(w, &p->recv_win, x->a, row_bytes,
                                          p->m_local, p->win_off,
                                          agmm_plan_deadline(p)));
        /* agmm_signal_publish, not a bare store: a GEMM worker may be
         * asleep on the cell in the kernel (futex) and must be woken, not
         * left to its 20 ms re-check. */
        for (int src = 0; src < p->nranks; src++)
            agmm_signal_publish(
                agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_BULK, src)),
                x->epoch);
        return AGMM_OK;
    }
    /* Rows the engine reads in place (its native dtype) are read from the
     * window, so the local shard joins the gathered matrix too (converted
     * inputs land in g32 instead). */
    if (first == 0) {
        if (p->native && bytes > 0)
            memcpy(p->recv_win.local + off, x->a, bytes);
        /* The local shard is in place: GEMM workers wait for it as for any
         * other (release; our own bulk cell has only us as writer). */
        AGMM_CHECK(agmm_tp_signal(w, &p->signals, r,
                                  agmm_sig_off(p, SIG_BULK, r), x->epoch));
    }
    for (int i = 1 + first; i < p->nranks; i += stride) {
        int q = agmm_source_order(r, p->nranks, i);
        if (!agmm_tp_put_direct(w, &p->recv_win, q)) continue; /* forwarded */
        AGMM_CHECK(agmm_round_put(x, q, off, x->a, bytes,
                                  agmm_sig_off(p, SIG_BULK, r), 0, p->tiles[r],
                                  AGMM_TSIG_SHARD));
    }
    return agmm_tp_quiet(w);
}

static agmm_status_t comm_worker(agmm_worker_t *self)
{
    agmm_round_t *x = self->ctx;
    agmm_trace_thread(x->p->trace, AGMM_TRACE_COMM_WORKER, self->index);
    if (!(x->phases & AGMM_PHASE_COMM)) return AGMM_OK;
    return put_bulk(x, self->index, x->comm_workers);
}

static agmm_status_t gemm_worker(agmm_worker_t *self)
{
    agmm_round_t *x = self->ctx;
    agmm_plan_t *p = x->p;
    agmm_trace_thread(p->trace, AGMM_TRACE_GEMM_WORKER, self->index);
    int comm = x->phases & AGMM_PHASE_COMM;
    if (comm && x->comm_workers == 0)
        AGMM_CHECK(put_bulk(x, self->index, x->gemm_workers));
    /* Everything arrives before any GEMM starts: that is the baseline. */
    /* Every rank raises its bulk cell, rows or none (this rank's own once
     * its rows are in place): then the source's count is checked (its
     * rows cell came first), before any row is used. */
    for (int src = 0; comm && src < p->nranks; src++) {
        agmm_wait_what_t what = {"shard", src, -1, 0, 0, 0};
        AGMM_CHECK(agmm_traced_wait(
            p->world,
            agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_BULK, src)),
            x->epoch, agmm_plan_deadline(p), &what, AGMM_TSIG_SHARD));
        AGMM_CHECK(agmm_ag_check_rows(x, src));
    }
    agmm_worker_share_t s;
    if (!agmm_worker_share(self->index, x->gemm_workers, p->col_blocks, &s))
        return AGMM_OK;
    /* Tiles [g0, g1) of the plan's layout for this row group, this call's
     * rows of them converted (shared claims) into g32, or read in place
     * from the window; then one GEMM per block of rows that is contiguous
     * both there and in the output (one block when the call has the
     * plan's rows). */
    int64_t g0, g1, tm = p->desc.tile_m;
    agmm_share_tiles(&s, p->total_tiles, &g0, &g1);
    const unsigned char *base =
        p->native ? p->recv_win.local : (const unsigned char *)p->g32;
    size_t row_bytes = agmm_plan_gemm_row_bytes(p);
    int64_t v0 = 0, v1 = 0, c0 = 0; /* pending block: window rows, C row */
    int64_t bt0 = g0, bt1 = g0;     /* its global tiles */
    uint64_t t_conv = agmm_trace_clock();
    for (int src = 0; src <= p->nranks; src++) {
        int64_t t0 = 0, t1 = 0;
        if (src < p->nranks) {
            t0 = AGMM_MAX(g0 - p->tile_base[src], 0);
            t1 = AGMM_MIN(g1 - p->tile_base[src], p->tiles[src]);
        }
        if (src < p->nranks && t0 >= t1) continue;
        int64_t w0 = 0, c = 0;
        if (src < p->nranks) {
            const void *unused;
            AGMM_CHECK(
                agmm_ag_gemm_rows(p, src, t0, t1, x->a, x->epoch, 0, &unused));
            agmm_plan_count_items(p, src, t0, t1, s.j0, s.j1);
            w0 = p->win_off[src] + t0 * tm;
            c = p->row_off[src] + t0 * tm;
            if (v1 > v0 && w0 == v1 && c == c0 + (v1 - v0)) { /* extend */
                v1 = p->win_off[src] + AGMM_MIN(t1 * tm, p->m_local[src]);
                bt1 = p->tile_base[src] + t1;
                continue;
            }
        }
        if (v1 > v0) { /* flush the pending block */
            uint64_t t_gemm = agmm_trace_clock();
            const unsigned char *a = base + (size_t)v0 * row_bytes;
            AGMM_CHECK(agmm_plan_gemm_all(p, &s, c0, v1 - v0, a,
                                          agmm_plan_row_scales(p, a), x->cs));
            agmm_trace_gemm(t_conv, t_gemm, -1, bt0, bt1, s.j0, s.j1, v1 - v0);
            t_conv = agmm_trace_clock();
        }
        if (src == p->nranks) break;
        v0 = w0;
        v1 = p->win_off[src] + AGMM_MIN(t1 * tm, p->m_local[src]);
        c0 = c;
        bt0 = p->tile_base[src] + t0;
        bt1 = p->tile_base[src] + t1;
    }
    return AGMM_OK;
}

agmm_status_t agmm_ag_run_baseline(agmm_round_t *round)
{
    return agmm_round_run(round, gemm_worker, comm_worker);
}
