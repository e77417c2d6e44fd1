/* The plan object: what every schedule shares (layout, windows, signals,
 * the prepared weights, conversion claims), the signal window's layout,
 * the inline queries of a plan, and plan.c's lifecycle helpers (the rows of
 * a call, the live registry, the busy flag). Internal to the ops layer.
 *
 * ops/common/ holds what an operation is built from and never names one,
 * each concern with its own header, included only where used: the plan
 * object (plan.h, plan.c), the descriptor (pd.h, pd.c), descriptions
 * (desc.h, desc.c), the default splits of k and of cores (split.c), the
 * geometry and memory booking (plan_book.h, plan_book.c, book.h, book.c),
 * the GEMM path (path.h: path_rules.c, path.c; path_probe.h:
 * path_probe.c, path_bf16w.c), the engine side of a plan (gemm_plan.h:
 * gemm_plan.c, gemm_load.c; gemm_info.c), int8 A staged with its scales
 * (stage.h, stage.c), the epilogue pass of finished rows
 * (epilogue_rows.h, epilogue_rows.c), a round and its steps (round.h,
 * round.c; the driver run.c), workers and the work partition (workers.h,
 * workers.c, schedule.h, schedule.c), conversion claims (claims.h,
 * claims.c), AGMM_SCHEDULE_AUTO (auto.h, auto.c) and the trace hookup
 * (plan_trace.c). Each operation is a folder of ops/ (ag_gemm/, gemm_rs/,
 * gemm_ar/), one agmm_operation_t (op.h) in list.c. */
#ifndef AGMM_OPS_PLAN_H
#define AGMM_OPS_PLAN_H

#include <stdatomic.h>
#include <stdint.h>

#include "agmm_ext.h" /* agmm.h, and agmm_part_t, agmm_blas_threads */
#include "common/util.h"
#include "gemm/engine.h"
#include "ops/common/op.h"
#include "ops/common/path.h"
#include "transport/transport.h"
#include "world/world.h"

/* One 64-bit counter on a cache line of its own. */
typedef struct agmm_padded_counter {
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t value;
    _Atomic uint32_t sleepers; /* signal cell layout: see signal.c */
} agmm_padded_counter_t;

/* Signal window layout: one cache line per cell.
 *   [0, tile_cells)               tile cells, raised by their source to e;
 *                                 the operation numbers them (its
 *                                 tile_cells entry: one per (source, tile)
 *                                 it receives)
 *   [tile_cells, +P)              bulk[src]: src's whole contribution
 *                                 (baseline)
 *   [tile_cells + P, +P)          ack[p]: p finished reading round e
 *   [tile_cells + 2P, +P)         rows[src]: the row count src's data
 *                                 of round e is laid out for, as
 *                                 agmm_rows_signal(e, rows) (operations
 *                                 with rows per call: ag-gemm src's own
 *                                 rows, gemm-rs the receiver's)
 * Every cell has exactly one writer: the rank named by its index. */
typedef enum { SIG_TILE, SIG_BULK, SIG_ACK, SIG_ROWS } agmm_sig_kind_t;

/* The receive sets of a plan (AGMM_TP_CAP_POSTED_RECEIVES): one per
 * schedule, so a round arms only the receives it will use. */
enum { AGMM_RSET_TILES = 0, AGMM_RSET_SHARDS = 1 };

/* Buffers an operation books for itself (op.h: book), by index. */
enum { AGMM_OP_BUFS = 4 };

struct agmm_plan {
    agmm_world_t *world;
    const agmm_operation_t *op;
    agmm_plan_desc_t desc; /* m_local, n_list, k_local, activations
                              point at m_max, n_w, k_part, activations
                              below */
    agmm_activation_t activations[AGMM_MAX_WEIGHTS]; /* desc.activations' */
    int rank, nranks;
    /* Rows of the current (or last) round: the call's m_rows for an
     * operation with rows per call (its set_rows, by the round's caller
     * before any worker starts; read-only in workers; row_off also read by
     * agmm_plan_row_offset from any thread, hence its atomic stores and
     * loads), else always the plan's (== m_max). */
    int64_t *m_local; /* [P] rows per rank */
    int64_t *row_off; /* [P + 1] first global row of each rank */
    int64_t *tiles;   /* [P] row tiles per rank */
    int64_t M;        /* total rows (atomic stores: agmm_plan_rows) */
    /* The plan's layout, for the most rows (desc.m_local): where each
     * source's rows sit in the receive window and g32 (win_off), and the
     * global tile numbers (tile_base, total_tiles). */
    int64_t *m_max;     /* [P] the plan's m_local */
    int64_t *tiles_max; /* [P] row tiles per rank at m_max */
    int64_t *win_max;   /* [P + 1] first row of each rank at m_max */
    /* [P + 1] first window / g32 row of each rank this round: win_max
     * unless the operation's set_rows closes the rows up. */
    int64_t *win_off;
    int64_t *tile_base; /* [P + 1] first global tile index of each rank */
    int64_t M_max;      /* sum of m_max */
    int64_t total_tiles;
    int64_t max_rows;  /* max m_max over ranks */
    int64_t max_tiles; /* max tiles_max over ranks */
    /* Columns: the weights' columns of C side by side, each weight in
     * whole column blocks of tile_n (weight i has blocks [blk_off[i],
     * blk_off[i + 1])); worker shares split these blocks. A gated weight
     * (bit i of glu) has n_w[i] columns of W, [gate | up], and n_w[i] / 2
     * of C (agmm_plan_out_cols): its block of C columns [c0, c1) is the
     * GEMM of W's columns [c0, c1) and [h + c0, h + c1) (gemm_plan.c). */
    int nw;             /* weights (1 unless desc.n_list) */
    int64_t *n_w;       /* [nw] columns of each weight */
    int64_t *blk_off;   /* [nw + 1] */
    int64_t col_blocks; /* sum over weights of ceil(n_i / tile_n) */
    size_t esize;       /* bytes per input element */
    /* A's rows as the schedules read them (the round's x->a): row_bytes
     * apart, k * esize, except INT8 rows of an operation whose scales
     * travel in the rows (op.h: scales_in_rows), which hold the k values
     * padded to 4 bytes, then the row's fp32 scale at scale_off (and
     * their A is staged: the shard copied into a_stage with its scales,
     * stage.c). */
    int int8;
    size_t row_bytes;
    size_t scale_off;   /* 0: the row holds no scale */
    void *a_stage;      /* booked when int8 (stage.c) */
    int64_t a_rows;     /* rows of this rank's A in the current call */
    int64_t tile_cells; /* tile signal cells (the operation's count) */
    int64_t *k_part;    /* [P] each rank's inner dimension (op.h: k_part) */
    int64_t k_gemm;     /* the engine's inner dimension: k_part[rank] */
    /* Fused rounds started (baseline rounds do not count): set by the
     * round's caller before its workers start, read-only in them. */
    uint64_t fused_rounds;
    /* The operation's own buffers (its book entry), in the arena. */
    void *op_buf[AGMM_OP_BUFS];

    /* The receive window (the operation's layout) and the signals. */
    agmm_win_t recv_win;
    agmm_win_t signals;

    /* The GEMM engine and its weights, prepared per column group of GEMM
     * workers and per weight within it (gemm_plan.c): the segments
     * seg[seg_off[cg]], ..., seg[seg_off[cg + 1] - 1] cover the columns of
     * group cg, one per weight the group touches. */
    const agmm_gemm_engine_t *engine;
    struct agmm_gemm_seg *seg; /* [seg_off[ngroups]] */
    int *seg_off;              /* [ngroups + 1] */
    int ngroups;
    void **scratch;            /* [gemm_workers]: each worker's own */
    size_t scratch_bytes;      /* of each */
    agmm_gemm_path_t path;     /* NATIVE or F32 (path.c: AUTO resolved) */
    agmm_path_choice_t choice; /* how */
    int int8_u8; /* INT8: A shifted to u8 (s8_as_u8), as measured (path.c) */
    agmm_dtype_t gemm_dtype; /* what the engine reads: dtype or fp32 */
    int native;              /* gemm_dtype == dtype: rows used in place */
    size_t gemm_esize;
    uint32_t weight_set; /* bit i: weight i loaded */
    /* The epilogue (agmm_plan_desc_t: bias, activation(s), out_dtype),
     * set at creation: act[i] weight i's activation mapped to the
     * engine's (desc.activations[i], else desc.activation), out_esize C's
     * element size, epilogue 1 when anything is to be done beyond the fp32
     * product (a bias, an activation or a 16-bit C). bias: [sum n_w] fp32,
     * weight i's at bias + agmm_plan_col_off(p, i) (booked when desc.bias,
     * filled by agmm_plan_set_bias; bit i of bias_set: weight i's given). */
    agmm_gemm_act_t act[AGMM_MAX_WEIGHTS]; /* by weight */
    uint32_t glu; /* bit i: weight i's is gated, act[i] its gate's */
    size_t out_esize;
    int epilogue;
    float *bias;
    uint32_t bias_set;
    /* Segments whose epilogue the engine refused (or would run with
     * oneDNN's reference kernel: gemm_plan.c) compute fp32 into each
     * worker's scratch at pass_off (pass_rows rows of the segment's
     * columns at most per engine call; gated: tile_m), then the pass. */
    size_t pass_off;
    int64_t pass_rows;
    float *g32; /* [M_max, k_gemm] fp32 rows (only when !native) */
    /* Per global tile, in this process: the epoch whose conversion into g32
     * is claimed / done (claims.c). */
    agmm_padded_counter_t *claimed;
    agmm_padded_counter_t *converted;
    /* How often each work item (global tile, column block) was computed,
     * summed over rounds: the schedule test checks it. */
    _Atomic uint32_t *item_count;
    /* Memory (plan_book.c): the two local allocations (the layout arrays,
     * then the booked arena) and the bytes the plan holds. */
    void *layout, *arena;
    uint64_t bytes_held;

    uint64_t epoch; /* rounds run; round e publishes and waits for e */
    /* The last ack value this rank sent for this plan (run.c), 0: none.
     * Rounds are collective and every failure aborts the world, so in a
     * world that is not aborted every rank sent the same: destroy waits
     * until each peer's ack cell holds it (no older ack is then in flight,
     * MPI messages from one sender being non-overtaking). */
    uint64_t last_ack_sent;
    /* 1 while set_weight, run or destroy runs on this plan (plan.c:
     * agmm_plan_enter / agmm_plan_leave). */
    _Atomic int busy;
    agmm_trace_t *trace; /* recording this plan's rounds, or NULL */
    /* AGMM_SCHEDULE_AUTO's state (auto.c): computed from allgathered round
     * times, so it is the same on every rank. */
    agmm_schedule_info_t autoinfo;
};

/* The offset of a signal cell in the signal window. */
static inline size_t agmm_sig_off(const agmm_plan_t *p, agmm_sig_kind_t kind,
                                  int64_t index)
{
    int64_t cell = index;
    if (kind == SIG_BULK) cell += p->tile_cells;
    if (kind == SIG_ACK) cell += p->tile_cells + p->nranks;
    if (kind == SIG_ROWS) cell += p->tile_cells + 2 * (int64_t)p->nranks;
    return (size_t)cell * AGMM_CACHE_LINE;
}

/* The rows cell's value for round e: the epoch in the high 32 bits (so a
 * wait for >= agmm_rows_signal(e, 0) is a wait for round e, and values only
 * grow), the source's rows this round in the low 32 (M <= INT_MAX). */
static inline uint64_t agmm_rows_signal(uint64_t e, int64_t rows)
{
    return (e << 32) | (uint64_t)rows;
}

/* One prepared weight segment: columns [c0, c1) of weight w (gemm_plan.c):
 * C = A @ W (prep), and, for an operation that accumulates, C += A @ W on
 * the same prepared weight (acc). */
typedef struct agmm_gemm_seg {
    agmm_gemm_prep_t *prep;
    agmm_gemm_prep_t *acc;
    /* 1: prep is the plain fp32 call and a pass does the epilogue (see
     * pass_off); decided by the estimate (the booking), before prepare. */
    int pass;
    int w;
    int64_t c0, c1; /* columns within weight w */
    int64_t j0, j1; /* the global column blocks it covers */
} agmm_gemm_seg_t;

/* The first global row of global tile g (M for g == total_tiles), in the
 * plan's layout (m_max). */
static inline int64_t agmm_global_tile_row(const agmm_plan_t *p, int64_t g)
{
    for (int src = 0; src < p->nranks; src++)
        if (g < p->tile_base[src + 1])
            return p->win_max[src] + (g - p->tile_base[src]) * p->desc.tile_m;
    return p->M_max;
}

/* The deadline of a wait that starts now (the plan's timeout, or the
 * world's). */
static inline double agmm_plan_deadline(const agmm_plan_t *p)
{
    return agmm_deadline(p->world, p->desc.timeout_s);
}

/* The deadline of a wait, starting now, for data whose sender first waits
 * for other ranks' (gemm-ar's reduced tiles and rows: the owner waits for
 * every partial): twice the timeout. When a rank stops, the owner's own
 * wait for it then expires first, and the run's message names the rank
 * that stopped rather than the owner waiting for it. */
static inline double agmm_plan_deadline_second_hop(const agmm_plan_t *p)
{
    double now = agmm_now();
    return now + 2.0 * (agmm_plan_deadline(p) - now);
}

/* Bytes between the rows the engine reads: the window's rows when read in
 * place (native), else g32's fp32 rows. */
static inline size_t agmm_plan_gemm_row_bytes(const agmm_plan_t *p)
{
    return p->native ? p->row_bytes : (size_t)p->k_gemm * p->gemm_esize;
}
/* The scales of the rows starting at `rows` when they travel in the rows
 * (scale_off), else NULL. */
static inline const float *agmm_plan_row_scales(const agmm_plan_t *p,
                                                const void *rows)
{
    return p->scale_off
               ? (const float *)(const void *)((const unsigned char *)rows +
                                               p->scale_off)
               : NULL;
}

/* The first column of weight i in the weights side by side (sum of n_w
 * before it): where its bias starts in p->bias. */
static inline int64_t agmm_plan_col_off(const agmm_plan_t *p, int i)
{
    int64_t off = 0;
    for (int j = 0; j < i; j++)
        off += p->n_w[j];
    return off;
}

/* Weight i's columns of C: n_w[i], or half of it for a gated weight. */
static inline int64_t agmm_plan_out_cols(const agmm_plan_t *p, int i)
{
    return p->glu >> i & 1u ? p->n_w[i] / 2 : p->n_w[i];
}

/* (plan.c) A call's rows (m_rows, NULL: the plan's most) into m_local,
 * tiles, row_off and M, closed up in rank order: the part of an
 * operation's set_rows every operation shares (win_off is its own). */
void agmm_plan_take_rows(agmm_plan_t *p, const int64_t *m_rows);

/* Is `p` a live plan (created, not destroyed)? */
int agmm_plan_is_live(const agmm_plan_t *p);

/* Start a call on `p` that must not overlap another one on the same plan
 * (set_weight, run, run_part, destroy): AGMM_ERR_BAD_STATE, logged with
 * `who`, if `p` is not live or another such call is in progress. */
agmm_status_t agmm_plan_enter(agmm_plan_t *p, const char *who);
void agmm_plan_leave(agmm_plan_t *p);
/* Test hook: is a call in progress on `p`? */
int agmm_plan_busy(const agmm_plan_t *p);

#endif
