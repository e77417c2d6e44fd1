/* GEMM + reduce-scatter (AGMM_OP_GEMM_RS): what its files share. op.c is
 * its entry in the operation table (geometry, buffers, receive
 * declarations, calls); fused.c and baseline.c its schedules; tiles.c the
 * rows of A_r a GEMM call reads, the put of one finished partial tile to
 * its owner and the owner's fixed-order reduction; call.c the rows of a
 * call (agmm_run_args_t.m_rows) and how the ranks agree on them.
 *
 * The epilogue (bias, activation, out_dtype) is applied once per element,
 * by the owner, after the reduction (agmm_rs_sum_t.finish), never to a
 * partial.
 *
 * Layout on rank r: `part` [M, n] fp32 (its buffer RS_PART) holds r's partial
 * A_r @ W_r for every row of C; the receive window (p->recv_win) holds, at
 * slot s, source s's partial rows of r's part of C ([max_rows, n] fp32).
 * Tile t of owner q is rows [t * tile_m, ...) of q's part (global rows
 * row_off[q] + ..., agmm_rs_tile_row); its global tile index is
 * tile_base[q] + t (the plan's layout: fixed whatever the call's rows). */
#ifndef AGMM_OPS_GEMM_RS_TILES_H
#define AGMM_OPS_GEMM_RS_TILES_H

#include "ops/common/plan.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/common/workers.h"

/* The operation's buffers (plan op_buf[], booked by op.c). */
enum { RS_PART = 0, RS_READY = 1, RS_SUM = 2 };

/* This rank's partial A_r @ W_r, [M, n] fp32. */
static inline float *agmm_rs_part(const agmm_plan_t *p)
{
    return p->op_buf[RS_PART];
}

/* Per global tile: column groups that finished it, summed over fused
 * rounds (the f-th fused round completes it at f * ngroups). Incremented
 * by GEMM workers (acq_rel), waited on by comm workers (acquire). */
static inline agmm_padded_counter_t *agmm_rs_ready(const agmm_plan_t *p)
{
    return p->op_buf[RS_READY];
}

/* Where the owner's reduction (and its own GEMM into c) writes this
 * round's fp32 sums, [m_local[rank], n]: the user's C itself when it is
 * fp32, else RS_SUM (booked only for a 16-bit out_dtype), which the
 * epilogue then writes into C (agmm_rs_sum_t.finish). */
static inline float *agmm_rs_sum_out(const agmm_round_t *x)
{
    return x->p->op_buf[RS_SUM] ? (float *)x->p->op_buf[RS_SUM] : (float *)x->c;
}

/* Byte offset of (source src, row i of the owner's part) in the owner's
 * receive window. */
static inline size_t agmm_rs_slot_off(const agmm_plan_t *p, int src, int64_t i)
{
    return ((size_t)src * (size_t)p->max_rows + (size_t)i) * (size_t)p->desc.n *
           sizeof(float);
}

/* The signal cell of (source src, owner's tile t) in the owner's window. */
static inline size_t agmm_rs_tile_sig(const agmm_plan_t *p, int src, int64_t t)
{
    return agmm_sig_off(p, SIG_TILE, (int64_t)src * p->max_tiles + t);
}

/* The call's first row (of A, `part` and g32) of global tile g:
 * row_off[q] + t * tile_m for tile t of owner q, capped at the end of q's
 * rows (a tile beyond the call's rows is empty), so rows of tiles [g0, g1)
 * are rows [agmm_rs_tile_row(g0), agmm_rs_tile_row(g1)). With the plan's
 * rows it is agmm_global_tile_row. */
static inline int64_t agmm_rs_tile_row(const agmm_plan_t *p, int64_t g)
{
    for (int q = 0; q < p->nranks; q++)
        if (g < p->tile_base[q + 1])
            return p->row_off[q] +
                   AGMM_MIN((g - p->tile_base[q]) * p->desc.tile_m,
                            p->m_local[q]);
    return p->row_off[p->nranks];
}

/* Rows per call (call.c), on the round's caller before the workers start:
 * this call's rows (NULL: the plan's), closed up in rank order (m_local,
 * row_off, tiles, M, win_off). The operation table's set_rows. */
void agmm_rs_set_rows(agmm_plan_t *p, const int64_t *m_rows);

/* The rows agreement (call.c; only for an operation with rows per call,
 * in a round that communicates, else they do nothing). send_rows: raises
 * this rank's rows cell on q (after q's ack of the previous round) to the
 * rows of q's part it sends partials of. check_rows: waits for src's rows
 * cell of the round and compares it with this rank's own rows; another
 * count aborts the world naming src (AGMM_ERR_MISMATCH). check_all_rows:
 * every source's. agmm_rs_reduce checks its sources itself. */
agmm_status_t agmm_rs_send_rows(agmm_round_t *x, int q);
agmm_status_t agmm_rs_check_rows(agmm_round_t *x, int src);
agmm_status_t agmm_rs_check_all_rows(agmm_round_t *x);

/* Posted receives (MPI) declared for the plan's most rows (call.c):
 * send_absent puts to q an empty message for each of q's tiles of the
 * plan beyond the call's (fused); wait_absent waits for every declared
 * receive the round's reduction did not (the tiles beyond the call's, or
 * with `bulk` the baseline's put when this rank has no rows). Nothing on
 * other transports. */
agmm_status_t agmm_rs_send_absent(agmm_round_t *x, int q);
agmm_status_t agmm_rs_wait_absent(agmm_round_t *x, int bulk);

/* Rows of A_r (in x->a) for global tiles [g0, g1) in the engine's input
 * dtype, leading dimension k_gemm: in place, or converted into g32 once
 * per tile per round (claims shared by this rank's GEMM workers). */
agmm_status_t agmm_rs_rows(agmm_round_t *x, int64_t g0, int64_t g1,
                           const void **rows);

/* Put finished partial tile t of owner q (q != rank) from `part` into q's
 * slot for this rank, then raise its cell to the epoch (after waiting for
 * q's ack of the previous round: q no longer reduces from the slot). */
agmm_status_t agmm_rs_put_tile(agmm_round_t *x, int q, int64_t t);

/* One step of the owner's reduction: sources [s0, s1) of its tiles
 * [t0, t1), columns [c0, c1), into agmm_rs_sum_out(x), the first source copied
 * (first) or every one added. The sum of an element is s_0 + s_1 + ... +
 * s_{P-1}, left to right in fp32, whatever order the tiles arrived in; a
 * schedule may cut it into steps (and let the GEMM add the own partial in
 * between: the accumulate attribute adds the finished product once, the same
 * addition), as long as the steps come in source order; on ranks 0 and 1 it
 * may start from the own partial (own_in_out), since s_1 + s_0 is s_0 + s_1
 * bit for bit. */
typedef struct agmm_rs_sum {
    int64_t t0, t1; /* the owner's tiles */
    int s0, s1;     /* sources; this rank's own partial is read from `part`
                     * (unless own_in_out) */
    int64_t c0, c1; /* columns */
    int first;      /* c = the first source, then += (else += all) */
    int own_in_out; /* this rank's own partial is in agmm_rs_sum_out
                     * already (its GEMM wrote it there): not added */
    int bulk;       /* wait for each source's bulk cell, not its tile cells */
    int finish;     /* the last step (s1 = P): the tiles are then complete;
                     * apply the plan's epilogue (bias, activation,
                     * out_dtype) once, from agmm_rs_sum_out into the
                     * user's C (agmm_plan_epilogue_rows) */
} agmm_rs_sum_t;

/* Checks each peer's rows (agmm_rs_check_rows), waits for its tile cells
 * of the step (or, with `bulk`, its bulk cell), then sums as above. With
 * `finish` the epilogue follows each row's last addition while the row is
 * still in cache (one pass over the sums instead of two; the same
 * operations in the same order as a pass afterwards, so the same bits);
 * a step that adds nothing or covers part of the columns applies it to
 * its rows after its additions. Called by the thread that completes the
 * tiles' reduction, so tile t's epilogue overlaps the other tiles' work. */
agmm_status_t agmm_rs_reduce(agmm_round_t *x, const agmm_rs_sum_t *sum);

/* fused.c's workers, shared with gemm-ar's fused schedule
 * (ops/gemm_ar/fused.c), which adds to them what `then` holds (NULL:
 * gemm-rs's own round). fused_gemm: a GEMM worker's whole part of the
 * round, up to its puts' quiet; with `then` the own block is one call
 * per tile when the peers' blocks are, each own tile, once reduced (its
 * epilogue applied), goes to own_tile, GEMM worker 0 calls send_absent
 * after its rows cells, and every GEMM worker calls before_quiet (with
 * its index) once its tiles are handed on, before it waits for its puts
 * to complete (so what it does there overlaps their last bytes on a
 * wire). fused_comm: a comm worker's puts of the peers' partial tiles,
 * up to their quiet. skip_ready: the ready counters of the plan's tiles
 * beyond the call's moved on to the round's target, before the round's
 * workers start. */
typedef struct agmm_rs_then {
    const void *ctx;
    agmm_status_t (*own_tile)(const void *ctx, int64_t t);
    agmm_status_t (*send_absent)(const void *ctx);
    agmm_status_t (*before_quiet)(const void *ctx, int worker);
} agmm_rs_then_t;
agmm_status_t agmm_rs_fused_gemm(agmm_worker_t *self, agmm_round_t *x,
                                 const agmm_rs_then_t *then);
agmm_status_t agmm_rs_fused_comm(agmm_worker_t *self, agmm_round_t *x);
void agmm_rs_skip_ready(agmm_plan_t *p);

/* (baseline.c) The baseline's GEMM: this worker's share of every tile of
 * the call (its row group's, over its columns) in one call into `part`. */
agmm_status_t agmm_rs_gemm_call(agmm_round_t *x, const agmm_worker_share_t *s);

/* Rows per owner at or below which the fused schedules make that one call
 * too, instead of one call per owner's block: a call of few rows streams
 * the whole weight for little arithmetic, so P calls read it P times
 * (measured at 8 rows per owner, K_r = 2048, N = 4096, bf16: fused 1.87x
 * the baseline with a call per block; docs/history/, "The
 * tensor-parallel layer"). */
enum { AGMM_RS_WHOLE_ROWS = 64 };

/* (fused.c) Does this round's fused GEMM phase make the one call? When it
 * computes (GEMM phase), the worker covers every row (one row group, so
 * the call's tiles are the ones it hands on) and no owner has more rows
 * than the threshold (AGMM_RS_WHOLE_ROWS). The own partial is then read
 * from `part` like any source (not accumulated into c). set_whole_rows: a
 * test's threshold for this process (-1: never; the forked ranks of a
 * test inherit it), so both ways of the fused GEMM phase are tested. */
int agmm_rs_whole_call(const agmm_round_t *x, const agmm_worker_share_t *s);
void agmm_rs_set_whole_rows(int64_t rows);

/* The schedules (fused.c, baseline.c): one round on this rank. */
agmm_status_t agmm_rs_run_fused(agmm_round_t *round);
agmm_status_t agmm_rs_run_baseline(agmm_round_t *round);

#endif
