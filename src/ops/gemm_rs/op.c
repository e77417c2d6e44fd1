/* GEMM + reduce-scatter's entry in the operation table (op.h): its
 * description checks, geometry, buffers, receive declarations, calls and
 * schedules. */
#include "common/log.h"
#include "ops/common/book.h"
#include "ops/common/schedule.h"
#include "ops/gemm_rs/tiles.h"

/* k_local's checks (after k and nranks were checked). */
static agmm_status_t rs_check_desc(const agmm_plan_desc_t *d)
{
    if (!d->k_local) return AGMM_OK;
    int64_t sum = 0;
    for (int r = 0; r < d->nranks; r++) {
        if (d->k_local[r] < 0 || d->k_local[r] > d->k)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: k_local[%d] = %lld (allowed 0..k = %lld)",
                              r, (long long)d->k_local[r], (long long)d->k);
        sum += d->k_local[r]; /* each <= k <= INT_MAX: no overflow */
    }
    if (sum != d->k)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: k_local adds up to %lld but k = %lld (the "
                          "parts must add up to k)",
                          (long long)sum, (long long)d->k);
    return AGMM_OK;
}

/* k_local[r], or k split as evenly as possible (agmm_k_split). */
static int64_t rs_k_part(const agmm_plan_desc_t *d, int r)
{
    return d->k_local ? d->k_local[r] : agmm_k_split(d->k, d->nranks, r);
}

/* One cell per (source, owner's tile): (src, t) at src * max_tiles + t. */
static int64_t rs_tile_cells(const agmm_plan_t *p)
{
    return (int64_t)p->nranks * p->max_tiles;
}

/* [P][max_rows, n] fp32: source s's partial rows of this rank's part of C
 * at slot s (its own slot unused: the own partial stays in `part`). */
static uint64_t rs_window_bytes(const agmm_plan_t *p)
{
    return (uint64_t)p->nranks * (uint64_t)p->max_rows * (uint64_t)p->desc.n *
           sizeof(float);
}

static void rs_book(const agmm_plan_t *p, agmm_book_t *b)
{
    agmm_plan_t *w = (agmm_plan_t *)p; /* the pointers to fill */
    /* Zeroed: with k_gemm == 0 it stays the (zero) partial. */
    agmm_book_local(b, "partial", p->M_max * p->desc.n, sizeof(float),
                    AGMM_CACHE_LINE, &w->op_buf[RS_PART]);
    agmm_book_local(b, "ready counters", AGMM_MAX(p->total_tiles, 1),
                    sizeof(agmm_padded_counter_t), AGMM_CACHE_LINE,
                    &w->op_buf[RS_READY]);
    /* A 16-bit C: the owner's rows are summed in fp32 here, then the
     * epilogue writes C (tiles.h: agmm_rs_sum_out). */
    if (p->desc.out_dtype != AGMM_DTYPE_FP32)
        agmm_book_local(b, "fp32 sums", p->m_max[p->rank] * p->desc.n,
                        sizeof(float), AGMM_CACHE_LINE, &w->op_buf[RS_SUM]);
    else
        w->op_buf[RS_SUM] = NULL;
}

static int add_count(int64_t *rows, int n, int64_t m)
{
    if (m <= 0) return n;
    for (int i = 0; i < n; i++)
        if (rows[i] == m) return n;
    rows[n] = m;
    return n + 1;
}

/* The fused schedule also calls each worker's share of each owner's block
 * in one call (fused.c): at most nranks * G more counts. */
static int rs_row_counts(const agmm_plan_t *p, int64_t *rows, int n)
{
    int G = p->desc.gemm_workers;
    for (int q = 0; q < p->nranks; q++)
        for (int g = 0; g < G; g++) {
            agmm_worker_share_t s;
            if (!agmm_worker_share(g, G, p->col_blocks, &s)) continue;
            int64_t t0, t1;
            agmm_share_tiles(&s, p->tiles[q], &t0, &t1);
            n = add_count(rows, n,
                          agmm_global_tile_row(p, p->tile_base[q] + t1) -
                              agmm_global_tile_row(p, p->tile_base[q] + t0));
        }
    return n;
}

/* Every put this rank receives, declared once per plan for a transport
 * with posted receives (MPI): per (source, own tile) for the fused
 * schedule (receive set TILES), per source for the baseline (SHARDS), for
 * the plan's most rows (a call with fewer sends fewer bytes, and empty
 * puts for the rest: call.c). */
static agmm_status_t rs_declare_puts(agmm_plan_t *p)
{
    agmm_world_t *w = p->world;
    int r = p->rank;
    size_t row_bytes = (size_t)p->desc.n * sizeof(float);
    for (int s = 0; s < p->nranks; s++) {
        if (s == r || p->m_max[r] == 0) continue;
        for (int64_t t = 0; t < p->tiles_max[r]; t++) {
            int64_t i0 = t * p->desc.tile_m;
            int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_max[r] - i0);
            AGMM_CHECK(
                agmm_tp_expect(w, &p->recv_win, s, agmm_rs_slot_off(p, s, i0),
                               (size_t)rows * row_bytes, &p->signals,
                               agmm_rs_tile_sig(p, s, t), AGMM_RSET_TILES));
        }
        AGMM_CHECK(agmm_tp_expect(w, &p->recv_win, s, agmm_rs_slot_off(p, s, 0),
                                  (size_t)p->m_max[r] * row_bytes, &p->signals,
                                  agmm_sig_off(p, SIG_BULK, s),
                                  AGMM_RSET_SHARDS));
    }
    return AGMM_OK;
}

/* A is every row over this rank's part of k; C is this rank's rows. */
static void rs_call_rows(int rank, const int64_t *m, int64_t M, int64_t *a_rows,
                         int64_t *c_rows)
{
    *a_rows = M;
    *c_rows = m[rank];
}

const agmm_operation_t agmm_op_gemm_rs = {
    .kind = AGMM_OP_GEMM_RS,
    .name = "gemm-rs",
    .max_weights = 1,
    .check_desc = rs_check_desc,
    .k_part = rs_k_part,
    .splits_k = 1,
    .tile_cells = rs_tile_cells,
    .window_bytes = rs_window_bytes,
    .replicated_window = 0, /* each peer gets its own partials */
    .book = rs_book,
    .accumulates = 1,      /* the own block into c (fused.c) */
    .epilogue_in_gemm = 0, /* once, after the reduction (tiles.h) */
    .row_counts = rs_row_counts,
    .declare_puts = rs_declare_puts,
    .rows_per_call = 1,
    .set_rows = agmm_rs_set_rows,
    .call_rows = rs_call_rows,
    .fused = agmm_rs_run_fused,
    .baseline = agmm_rs_run_baseline,
};
