/* All-gather + GEMM's entry in the operation table (op.h): its geometry,
 * its receive declarations, its calls and its schedules. */
#include "common/log.h"
#include "ops/ag_gemm/ag_gemm.h"

/* Every rank multiplies over the whole inner dimension. */
static int64_t ag_k_part(const agmm_plan_desc_t *d, int r)
{
    (void)r;
    return d->k;
}

/* One cell per (source, tile): (src, t) at tile_base[src] + t. */
static int64_t ag_tile_cells(const agmm_plan_t *p)
{
    return p->total_tiles;
}

/* [M, k] in the input dtype: every source's rows at win_max[src] (rank r's
 * own rows are unused on rank r: local rows are read from a_local, except
 * where the fused schedule copies them beside the others). */
static uint64_t ag_window_bytes(const agmm_plan_t *p)
{
    return (uint64_t)p->M_max * (uint64_t)p->row_bytes;
}

/* Tell a transport with posted receives every put this rank will receive,
 * once per plan (agmm_tp_expect): each remote tile for the fused schedule
 * (receive set TILES), each remote shard for the baseline (SHARDS) unless
 * the transport gathers shards natively. A round arms only the receive
 * set of its schedule (run.c). */
static agmm_status_t ag_declare_puts(agmm_plan_t *p)
{
    agmm_world_t *w = p->world;
    int native = agmm_tp_has(w, AGMM_TP_CAP_NATIVE_ALLGATHER);
    size_t row_bytes = p->row_bytes;
    for (int src = 0; src < p->nranks; src++) {
        if (src == p->rank) continue;
        for (int64_t t = 0; t < p->tiles_max[src]; t++) {
            int64_t row = t * p->desc.tile_m;
            int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_max[src] - row);
            AGMM_CHECK(
                agmm_tp_expect(w, &p->recv_win, src,
                               (size_t)(p->win_max[src] + row) * row_bytes,
                               (size_t)rows * row_bytes, &p->signals,
                               agmm_sig_off(p, SIG_TILE, p->tile_base[src] + t),
                               AGMM_RSET_TILES));
        }
        if (native || p->m_max[src] == 0) continue;
        AGMM_CHECK(agmm_tp_expect(
            w, &p->recv_win, src, (size_t)p->win_max[src] * row_bytes,
            (size_t)p->m_max[src] * row_bytes, &p->signals,
            agmm_sig_off(p, SIG_BULK, src), AGMM_RSET_SHARDS));
    }
    return AGMM_OK;
}

/* A is this rank's rows of the call; C is every row. */
static void ag_call_rows(int rank, const int64_t *m, int64_t M, int64_t *a_rows,
                         int64_t *c_rows)
{
    *a_rows = m[rank];
    *c_rows = M;
}

const agmm_operation_t agmm_op_ag_gemm = {
    .kind = AGMM_OP_AG_GEMM,
    .name = "ag-gemm",
    .max_weights = AGMM_MAX_WEIGHTS,
    .k_part = ag_k_part,
    .tile_cells = ag_tile_cells,
    .window_bytes = ag_window_bytes,
    .replicated_window = 1,
    .scales_in_rows = 1,
    .declare_puts = ag_declare_puts,
    .rows_per_call = 1,
    .returns_a = 1,
    .epilogue_in_gemm = 1, /* each tile's call writes its rows of C */
    .set_rows = agmm_ag_set_rows,
    .copy_a = agmm_ag_copy_gathered,
    .call_rows = ag_call_rows,
    .fused = agmm_ag_run_fused,
    .baseline = agmm_ag_run_baseline,
};
