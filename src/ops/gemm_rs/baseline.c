/* The gemm-rs baseline: no overlap. The GEMM workers compute the whole
 * partial C = A_r @ W_r (one call per worker share over all M rows, as a
 * threaded BLAS would); then one bulk put per peer of that peer's rows
 * (rotated order, after its ack of the previous round), raising bulk[r]
 * on it; then the reduction of this rank's rows in the same fixed order
 * as the fused schedule (sources 0..P-1) and the same epilogue after each
 * row's last addition (the sum's `finish`), so both give the same bits.
 * On MPI this is puts + sum as well, not MPI_Reduce_scatter: the same
 * receive machinery as the fused schedule, and the same summation order
 * (MPI's would be its own).
 *
 * Rows per call (call.c): the row groups share out the call's tiles, as a
 * plan of exactly those rows does; before each bulk put the caller raises
 * its rows cell on the peer (and puts even no rows where the peer posted
 * a receive for them: MPI), and after the reduction checks every source's
 * count and waits for the empty bulk puts it did not reduce.
 *
 * The monolithic benchmark part (phases without COMM) is the GEMM alone.
 *
 * Threads: the GEMM workers (and idle comm workers) join before the puts,
 * which GEMM worker 0's thread (the caller's) issues, waits for (quiet)
 * and follows with the reduction. */
#include "common/log.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"
#include "ops/gemm_rs/tiles.h"
#include "trace/trace.h"

/* The global tile (the plan's layout) of the call's i-th tile, counting
 * the call's tiles of rank 0, then of rank 1, ...; the plan's end past
 * the last. */
static int64_t call_tile(const agmm_plan_t *p, int64_t i)
{
    for (int q = 0; q < p->nranks; i -= p->tiles[q], q++)
        if (i < p->tiles[q]) return p->tile_base[q] + i;
    return p->total_tiles;
}

agmm_status_t agmm_rs_gemm_call(agmm_round_t *x, const agmm_worker_share_t *s)
{
    agmm_plan_t *p = x->p;
    /* The row group's share of the call's tiles, as a plan of exactly
     * these rows shares them (its rows are contiguous: call.c). */
    int64_t tiles = 0, c0, c1;
    for (int q = 0; q < p->nranks; q++)
        tiles += p->tiles[q];
    agmm_share_tiles(s, tiles, &c0, &c1);
    if (c0 >= c1) return AGMM_OK;
    int64_t g0 = call_tile(p, c0), g1 = call_tile(p, c1);
    const void *a;
    uint64_t t_conv = agmm_trace_clock();
    AGMM_CHECK(agmm_rs_rows(x, g0, g1, &a));
    int64_t r0 = agmm_rs_tile_row(p, g0), r1 = agmm_rs_tile_row(p, g1);
    uint64_t t_gemm = agmm_trace_clock();
    AGMM_CHECK(agmm_plan_gemm(p, s, r0, r1 - r0, a,
                              x->a_scale ? x->a_scale + r0 : NULL,
                              agmm_rs_part(p)));
    agmm_trace_gemm(t_conv, t_gemm, -1, g0, g1, s->j0, s->j1, r1 - r0);
    return AGMM_OK;
}

static agmm_status_t gemm_worker(agmm_worker_t *self)
{
    agmm_round_t *x = self->ctx;
    agmm_plan_t *p = x->p;
    agmm_trace_thread(p->trace, AGMM_TRACE_GEMM_WORKER, self->index);
    agmm_worker_share_t s;
    if (!agmm_worker_share(self->index, x->gemm_workers, p->col_blocks, &s))
        return AGMM_OK;
    return agmm_rs_gemm_call(x, &s);
}

static agmm_status_t idle_worker(agmm_worker_t *self)
{
    agmm_round_t *x = self->ctx;
    agmm_trace_thread(x->p->trace, AGMM_TRACE_COMM_WORKER, self->index);
    return AGMM_OK;
}

/* Bulk puts of every peer's rows of `part`, then the own reduction. */
static agmm_status_t scatter_reduce(agmm_round_t *x)
{
    agmm_plan_t *p = x->p;
    agmm_world_t *w = p->world;
    int r = p->rank;
    size_t row_bytes = (size_t)p->desc.n * sizeof(float);
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(r, p->nranks, i);
        AGMM_CHECK(agmm_rs_send_rows(x, q)); /* this call's rows (call.c) */
        /* Nothing of C is q's: no put, unless q posted a receive for it
         * (its plan has rows: an empty put, call.c). */
        if (p->m_local[q] == 0 &&
            !(p->m_max[q] > 0 && agmm_tp_has(w, AGMM_TP_CAP_POSTED_RECEIVES)))
            continue;
        AGMM_CHECK(agmm_round_put(
            x, q, agmm_rs_slot_off(p, r, 0),
            agmm_rs_part(p) + (size_t)p->row_off[q] * (size_t)p->desc.n,
            (size_t)p->m_local[q] * row_bytes, agmm_sig_off(p, SIG_BULK, r), 0,
            p->tiles[q], AGMM_TSIG_SHARD));
    }
    AGMM_CHECK(agmm_tp_quiet(w));
    agmm_rs_sum_t all = {.t1 = p->tiles[r],
                         .s1 = p->nranks,
                         .c1 = p->desc.n,
                         .first = 1,
                         .bulk = 1,
                         .finish = 1}; /* the epilogue, as fused */
    AGMM_CHECK(agmm_rs_reduce(x, &all));
    AGMM_CHECK(agmm_rs_check_all_rows(x)); /* also with no rows here */
    return agmm_rs_wait_absent(x, 1);
}

agmm_status_t agmm_rs_run_baseline(agmm_round_t *round)
{
    AGMM_CHECK(agmm_round_run(round, gemm_worker, idle_worker));
    if (!(round->phases & AGMM_PHASE_COMM)) return AGMM_OK; /* monolithic */
    /* Runs on the round's caller after its workers joined: a failure here
     * aborts the world in the round driver (run.c), as a worker's would. */
    return scatter_reduce(round);
}
