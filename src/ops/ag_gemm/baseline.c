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
#include "ops/common/plan_internal.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"
#include "trace/trace.h"

/* Bulk puts to peers i = first, first + stride, ... (in rotated order). */
static agmm_status_t put_bulk(agmm_round_t *x, int first, int stride)
{
    agmm_plan_t *p = x->p;
    agmm_world_t *w = p->world;
    int r = p->rank;
    size_t row_bytes = (size_t)p->desc.k * p->esize;
    size_t bytes = (size_t)p->m_local[r] * row_bytes;
    size_t off = (size_t)p->row_off[r] * row_bytes;
    double deadline = agmm_deadline(w, p->desc.timeout_s);
    if (agmm_tp_has(w, AGMM_TP_CAP_NATIVE_ALLGATHER)) {
        /* The transport's own all-gather (MPI_Iallgatherv on MPI): what an
         * MPI user writes today. One thread per rank takes part; it then
         * raises this rank's bulk signals itself (release), so the GEMM
         * workers wait exactly as with puts. No ack wait: a peer's rows
         * land in our window only once we entered the collective, i.e.
         * after we finished reading the previous round. */
        if (first != 0) return AGMM_OK;
        AGMM_CHECK(agmm_fault_before_put(r)); /* test hook, fault.h */
        AGMM_CHECK(agmm_tp_allgather_rows(w, &p->gathered, x->a, row_bytes,
                                          p->m_local, p->row_off, deadline));
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
            memcpy(p->gathered.local + off, x->a, bytes);
        /* The local shard is in place: GEMM workers wait for it as for any
         * other (release; our own bulk cell has only us as writer). */
        AGMM_CHECK(agmm_tp_signal(w, &p->signals, r,
                                  agmm_sig_off(p, SIG_BULK, r), x->epoch));
    }
    for (int i = 1 + first; i < p->nranks; i += stride) {
        int q = (r + i) % p->nranks;
        agmm_wait_what_t what = {"ack of round", q, (int64_t)x->epoch - 1};
        AGMM_CHECK(agmm_traced_wait(
            w, agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_ACK, q)),
            x->epoch - 1, deadline, &what, AGMM_TSIG_ACK));
        AGMM_CHECK(agmm_fault_before_put(r)); /* test hook, fault.h */
        uint64_t t_put = agmm_trace_clock();
        AGMM_CHECK(agmm_tp_put_signal(w, &p->gathered, q, off, x->a, bytes,
                                      &p->signals, agmm_sig_off(p, SIG_BULK, r),
                                      x->epoch));
        agmm_trace_put(t_put, q, 0, p->tiles[r], bytes, x->epoch,
                       AGMM_TSIG_SHARD);
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
    for (int src = 0; comm && src < p->nranks; src++) {
        if (p->m_local[src] == 0) continue;
        agmm_wait_what_t what = {"shard", src, -1};
        AGMM_CHECK(agmm_traced_wait(
            p->world,
            agmm_win_signal(&p->signals, agmm_sig_off(p, SIG_BULK, src)),
            x->epoch, agmm_deadline(p->world, p->desc.timeout_s), &what,
            AGMM_TSIG_SHARD));
    }
    agmm_worker_share_t s;
    if (!agmm_worker_share(self->index, x->gemm_workers, p->col_blocks, &s))
        return AGMM_OK;
    /* Rows [r0, r1) of the gathered matrix, whole tiles, for this row
     * group; converted (shared claims) into one contiguous fp32 block. */
    int64_t tiles_total = p->total_tiles, g0, g1;
    agmm_share_tiles(&s, tiles_total, &g0, &g1);
    if (g0 == g1) return AGMM_OK;
    uint64_t t_conv = agmm_trace_clock();
    for (int src = 0; src < p->nranks; src++) {
        int64_t t0 = AGMM_MAX(g0 - p->tile_base[src], 0);
        int64_t t1 = AGMM_MIN(g1 - p->tile_base[src], p->tiles[src]);
        if (t0 >= t1) continue;
        const void *unused;
        AGMM_CHECK(
            agmm_plan_gemm_rows(p, src, t0, t1, x->a, x->epoch, 0, &unused));
        agmm_plan_count_items(p, src, t0, t1, s.j0, s.j1);
    }
    /* Global rows are contiguous in g32 (or, read in place, in the
     * window). */
    int64_t r0 = agmm_global_tile_row(p, g0), r1 = agmm_global_tile_row(p, g1);
    const unsigned char *a =
        p->native ? p->gathered.local : (const unsigned char *)p->g32;
    a += (size_t)r0 * (size_t)p->desc.k * p->gemm_esize;
    uint64_t t_gemm = agmm_trace_clock();
    AGMM_CHECK(agmm_plan_gemm(p, &s, r0, r1 - r0, a, x->c));
    agmm_trace_gemm(t_conv, t_gemm, -1, g0, g1, s.j0, s.j1, r1 - r0);
    return AGMM_OK;
}

agmm_status_t agmm_run_baseline(agmm_round_t *round)
{
    return agmm_round_run(round, gemm_worker, comm_worker);
}
