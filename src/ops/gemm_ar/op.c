/* GEMM + all-reduce's entry in the operation table (op.h). Its
 * description, inner-dimension split, buffers and call sizes are
 * gemm-rs's (the reduce-scatter half is gemm-rs's: ops/gemm_rs/op.c, used
 * through its table entry); the window, the cells and the declared
 * receives add the reduced rows every owner sends every peer (ar.h). */
#include "common/log.h"
#include "ops/common/book.h"
#include "ops/gemm_ar/ar.h"
#include "ops/gemm_rs/tiles.h"

/* gemm-rs's, called through its table (a table entry must be a constant:
 * these wrappers name a function). */
static agmm_status_t ar_check_desc(const agmm_plan_desc_t *d)
{
    return agmm_op_gemm_rs.check_desc(d);
}

static int64_t ar_k_part(const agmm_plan_desc_t *d, int r)
{
    return agmm_op_gemm_rs.k_part(d, r);
}

static void ar_book(const agmm_plan_t *p, agmm_book_t *b)
{
    agmm_op_gemm_rs.book(p, b);
}

static int ar_row_counts(const agmm_plan_t *p, int64_t *rows, int n)
{
    return agmm_op_gemm_rs.row_counts(p, rows, n);
}

/* gemm-rs's cells, one per global tile, one per owner (ar.h). */
static int64_t ar_tile_cells(const agmm_plan_t *p)
{
    return agmm_op_gemm_rs.tile_cells(p) + p->total_tiles + p->nranks;
}

/* gemm-rs's window (its slots), then the reduced region [M_max, n] fp32. */
static uint64_t ar_window_bytes(const agmm_plan_t *p)
{
    return (uint64_t)agmm_ar_region(p) +
           (uint64_t)p->M_max * (uint64_t)p->desc.n * sizeof(float);
}

/* gemm-rs's receives, then every owner q's reduced rows: per tile (fused,
 * receive set TILES), all at once (baseline, SHARDS); for the plan's most
 * rows (a call with fewer puts the tiles beyond its rows, and the rows of
 * an owner without any, empty: bcast.c). */
static agmm_status_t ar_declare_puts(agmm_plan_t *p)
{
    AGMM_CHECK(agmm_op_gemm_rs.declare_puts(p));
    agmm_world_t *w = p->world;
    size_t row_bytes = (size_t)p->desc.n * sizeof(float);
    for (int q = 0; q < p->nranks; q++) {
        if (q == p->rank || p->m_max[q] == 0) continue;
        for (int64_t t = 0; t < p->tiles_max[q]; t++) {
            int64_t i0 = t * p->desc.tile_m;
            int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_max[q] - i0);
            AGMM_CHECK(agmm_tp_expect(
                w, &p->recv_win, q, agmm_ar_reduced_off(p, q, i0),
                (size_t)rows * row_bytes, &p->signals,
                agmm_ar_tile_sig(p, q, t), AGMM_RSET_TILES));
        }
        AGMM_CHECK(agmm_tp_expect(w, &p->recv_win, q,
                                  agmm_ar_reduced_off(p, q, 0),
                                  (size_t)p->m_max[q] * row_bytes, &p->signals,
                                  agmm_ar_rows_sig(p, q), AGMM_RSET_SHARDS));
    }
    return AGMM_OK;
}

/* A is every row of the call over this rank's part of k; C is every row
 * of the call. */
static void ar_call_rows(int rank, const int64_t *m, int64_t M, int64_t *a_rows,
                         int64_t *c_rows)
{
    (void)rank;
    (void)m;
    *a_rows = M;
    *c_rows = M;
}

const agmm_operation_t agmm_op_gemm_ar = {
    .kind = AGMM_OP_GEMM_AR,
    .name = "gemm-ar",
    .max_weights = 1,
    .check_desc = ar_check_desc,
    .k_part = ar_k_part,
    .splits_k = 1,
    .tile_cells = ar_tile_cells,
    .window_bytes = ar_window_bytes,
    /* 0: the window also holds gemm-rs's slots, where each peer gets its
     * own partials; only the reduced region is the same on every peer
     * (see docs/design.md, "GEMM + all-reduce"). */
    .replicated_window = 0,
    .book = ar_book,
    .accumulates = 1, /* the own block into c (gemm-rs's fused.c) */
    .row_counts = ar_row_counts,
    .declare_puts = ar_declare_puts,
    /* Rows per call: gemm-rs's (ops/gemm_rs/call.c: the rows of C each
     * rank reduces, agreed through the rows cells); the reduced rows
     * follow them (bcast.c). */
    .rows_per_call = 1,
    .set_rows = agmm_rs_set_rows,
    .call_rows = ar_call_rows,
    .fused = agmm_ar_run_fused,
    .baseline = agmm_ar_run_baseline,
};
