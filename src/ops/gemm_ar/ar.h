/* GEMM + all-reduce (AGMM_OP_GEMM_AR): what its files share. op.c is its
 * entry in the operation table; fused.c and baseline.c its schedules;
 * bcast.c the owner's puts of its reduced rows to every peer and the
 * peers' copies of them into their C. The reduce-scatter half is
 * gemm-rs's (ops/gemm_rs/tiles.h): the same partials, slots, cells and
 * fixed-order reduction, so the owner's rows are bit for bit gemm-rs's.
 *
 * Layout on rank r (P ranks):
 *   `part` [M, n] fp32 and the ready counters: gemm-rs's (RS_PART,
 *     RS_READY).
 *   The receive window: gemm-rs's slots (P x [max_rows, n] fp32, source
 *     s's partial rows of r's part of C at slot s), then the reduced
 *     region [M_max, n] (fp32-sized; rows of out_dtype): owner q's
 *     finished rows (reduced, then the epilogue) at rows
 *     [win_max[q], win_max[q] + m_local[q]) (its own rows there unused;
 *     the plan's layout: a call with fewer rows (m_local[q] of this call,
 *     ops/gemm_rs/call.c) uses the first of q's rows, its tiles at the
 *     same places, while its C is closed up, row_off of the call).
 *   Signal cells (the operation's tile cells): gemm-rs's (src, tile)
 *     cells, then one per global tile g ("owner's reduced tile g is in my
 *     reduced region", raised to e by the owner, fused), then one per
 *     owner ("all of owner q's reduced rows", baseline).
 * Every cell has one writer: the source of a partial, the owner of a
 * reduced tile or of its rows. */
#ifndef AGMM_OPS_GEMM_AR_AR_H
#define AGMM_OPS_GEMM_AR_AR_H

#include "ops/common/plan.h"
#include "ops/common/round.h"

extern const agmm_operation_t agmm_op_gemm_rs; /* ops/gemm_rs/op.c */

/* One round as gemm-ar's workers see it (read-only): `own` is the round
 * with its c at this rank's rows of C (row_off[rank]), what gemm-rs's
 * steps write into; c is the whole [M, n] C. Every worker's ctx is &own,
 * the first member. */
typedef struct agmm_ar_round {
    agmm_round_t own;
    float *c; /* elements of out_dtype */
} agmm_ar_round_t;

/* The round of `round` with C split as above (c NULL when M == 0). */
void agmm_ar_round(const agmm_round_t *round, agmm_ar_round_t *out);

/* Bytes of gemm-rs's window (its slots): the reduced region starts there
 * (op.c: the window is gemm-rs's, then the region). */
static inline size_t agmm_ar_region(const agmm_plan_t *p)
{
    return (size_t)agmm_op_gemm_rs.window_bytes(p);
}

/* Byte offset of owner q's reduced row i (of q's part) in a peer's
 * window: rows of the finished values, out_dtype (the region is sized for
 * fp32, the widest). */
static inline size_t agmm_ar_reduced_off(const agmm_plan_t *p, int q, int64_t i)
{
    return agmm_ar_region(p) +
           (size_t)(p->win_max[q] + i) * (size_t)p->desc.n * p->out_esize;
}

/* The cell of owner q's reduced tile t (fused). gemm-ar's cells are the
 * last total_tiles + P of the plan's tile cells (op.c), whatever gemm-rs's
 * count before them. */
static inline size_t agmm_ar_tile_sig(const agmm_plan_t *p, int q, int64_t t)
{
    return agmm_sig_off(p, SIG_TILE,
                        p->tile_cells - p->total_tiles - p->nranks +
                            p->tile_base[q] + t);
}

/* The cell of all of owner q's reduced rows (baseline). */
static inline size_t agmm_ar_rows_sig(const agmm_plan_t *p, int q)
{
    return agmm_sig_off(p, SIG_TILE, p->tile_cells - p->nranks + q);
}

/* (bcast.c) put_tile: this rank's reduced tile t (in x->c) to every peer,
 * each after its ack of the previous round, raising its cell to the
 * epoch; the caller quiets before the round ends. copy_tiles: the peers'
 * reduced tiles, the k-th of them (owners in rotated order from rank + 1,
 * each owner's tiles in order) when k % count == index: wait for its cell
 * (acquire), copy it from the window into x->c. put_rows / copy_rows: the
 * same for all of this rank's rows at once and every owner's rows
 * (baseline), put_rows quieting itself. */
agmm_status_t agmm_ar_put_tile(const agmm_ar_round_t *x, int64_t t);
agmm_status_t agmm_ar_copy_tiles(const agmm_ar_round_t *x, int index,
                                 int count);
agmm_status_t agmm_ar_put_rows(const agmm_ar_round_t *x);
agmm_status_t agmm_ar_copy_rows(const agmm_ar_round_t *x);

/* Rows per call on a transport with posted receives (MPI): the receives
 * of every owner's reduced tiles and rows are declared for the plan's most
 * rows (op.c), and each must complete once per round. send_absent: this
 * rank's reduced tiles of the plan beyond the call's, as 0-byte puts to
 * every peer (fused; the caller quiets); wait_absent: the peers' (fused,
 * after the round's workers joined). put_rows / copy_rows put and wait
 * for an empty bulk put when the call gives the owner no rows. Nothing
 * on other transports. */
agmm_status_t agmm_ar_send_absent(const agmm_ar_round_t *x);
agmm_status_t agmm_ar_wait_absent(const agmm_ar_round_t *x);

/* The schedules (fused.c, baseline.c): one round on this rank. */
agmm_status_t agmm_ar_run_fused(agmm_round_t *round);
agmm_status_t agmm_ar_run_baseline(agmm_round_t *round);

#endif
