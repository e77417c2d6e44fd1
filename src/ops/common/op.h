/* The operation table: what ops/common needs to know of one operation,
 * the way the transport has its ops table (transport.h) and oneDNN its list
 * of implementations. Each operation fills one agmm_operation_t in its own
 * folder (ops/ag_gemm/op.c, ops/gemm_rs/op.c); the list of operations is
 * ops/list.c. ops/common reaches an operation only through this table
 * (agmm_operation), never by its name or its folder.
 *
 * Every entry runs on the thread that owns the plan (create, set_weight,
 * run's caller), except the schedules, which start the round's workers.
 * Entries marked optional may be NULL. */
#ifndef AGMM_OPS_OP_H
#define AGMM_OPS_OP_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

struct agmm_plan;
struct agmm_round;
struct agmm_book;

typedef struct agmm_operation {
    agmm_op_t kind;
    const char *name; /* "ag-gemm": agmm_op_name, the CLI's --op */
    /* Weights one plan may have (n_weights): AGMM_MAX_WEIGHTS or 1. */
    int max_weights;
    /* Optional: the checks of the fields only this operation reads (after
     * the common ones passed); logs and returns the first failure. */
    agmm_status_t (*check_desc)(const agmm_plan_desc_t *d);
    /* Rank r's part of the inner dimension: the k its GEMM runs over and
     * its A's columns (every rank's k for an operation that gathers rows;
     * a split of k for one that reduces partials). Pure, any thread. */
    int64_t (*k_part)(const agmm_plan_desc_t *d, int r);
    /* 1: the ranks' parts are a split of k (rank r's are the columns after
     * the parts of ranks 0..r-1: agmm_plan_desc_k_part); 0: every rank's
     * part is all of k. */
    int splits_k;
    /* The tile signal cells of the plan's signal window (plan.h:
     * the cells before bulk[]), from the plan's geometry. */
    int64_t (*tile_cells)(const struct agmm_plan *p);
    /* Bytes of the receive window. */
    uint64_t (*window_bytes)(const struct agmm_plan *p);
    /* 1: every peer receives the same rows at the same places, so the
     * transport may pass one put on to several peers (agmm_tp_replicate). */
    int replicated_window;
    /* 1: INT8 A scales travel inside the rows (each row's fp32 scale
     * after its values, so a tile's put carries them under its signal);
     * 0: they stay with the rank (its own A only). */
    int scales_in_rows;
    /* Optional: books this operation's own local buffers (book.h), each
     * into a pointer of the plan's op_buf[]; the same on every call for
     * the same geometry (the estimate and the allocation both call it). */
    void (*book)(const struct agmm_plan *p, struct agmm_book *b);
    /* 1: the epilogue (bias, activation, out_dtype: agmm_plan_desc_t) is
     * on its GEMM calls (the engine's attributes, or a pass right after
     * each call: gemm_plan.c), which write the user's C; 0: its calls
     * make fp32 and the operation applies agmm_plan_epilogue_rows itself
     * (epilogue_rows.h), e.g. once after a reduction. An operation that
     * accumulates (below) keeps it 0: a bias or activation must not be
     * applied to a partial. */
    int epilogue_in_gemm;
    /* 1: its schedules also add a product to C (agmm_plan_gemm_acc): every
     * segment gets a second prepared call with the accumulate attribute,
     * sharing the segment's weight. */
    int accumulates;
    /* Optional: more row counts its schedules call the engine with
     * (appended to rows[0..n), at most nranks * gemm_workers more);
     * returns the new count (gemm_plan.c prepares them all). */
    int (*row_counts)(const struct agmm_plan *p, int64_t *rows, int n);
    /* Optional, for transports with posted receives: declare every put
     * this rank receives (agmm_tp_expect), once per plan. */
    agmm_status_t (*declare_puts)(struct agmm_plan *p);

    /* Calls. rows_per_call: takes agmm_run_args_t.m_rows (set_rows then
     * applies them before the workers start); returns_a: takes
     * a_gathered (copy_a fills it after the workers joined, before the
     * round is acknowledged). */
    int rows_per_call, returns_a;
    void (*set_rows)(struct agmm_plan *p, const int64_t *m_rows);
    void (*copy_a)(struct agmm_plan *p, const void *a_local, void *out,
                   float *out_scale);
    /* Rows of rank `rank`'s A ([a_rows, k_part]) and C ([c_rows, n]) in a
     * call whose rows are `m` (nranks counts) summing to M. Pure (the
     * descriptor's query, pd.c, calls it without a plan). */
    void (*call_rows)(int rank, const int64_t *m, int64_t M, int64_t *a_rows,
                      int64_t *c_rows);
    /* The two schedules: one round on this rank. */
    agmm_status_t (*fused)(struct agmm_round *round);
    agmm_status_t (*baseline)(struct agmm_round *round);
} agmm_operation_t;

/* The operation of `kind`, or NULL for a value no operation has
 * (ops/list.c). */
const agmm_operation_t *agmm_operation(agmm_op_t kind);

#endif
