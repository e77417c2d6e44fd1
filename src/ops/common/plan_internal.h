/* The plan: what every schedule shares (layout, windows, signals, the
 * converted weight, conversion claims). Internal to the ops layer.
 *
 * ops/common/ holds what an operation is built from (plan lifecycle, the
 * round driver, workers, the work partition, the engine side of a plan,
 * AGMM_SCHEDULE_AUTO); ops/ag_gemm/ the all-gather + GEMM schedules
 * (fused.c, baseline.c) and their input rows (rows.c); ops/gemm_rs/ the
 * GEMM + reduce-scatter schedules (fused.c, baseline.c, tiles.c). This
 * header declares them all; files in ops/common/ never include an op's
 * folder. */
#ifndef AGMM_OPS_PLAN_INTERNAL_H
#define AGMM_OPS_PLAN_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "agmm_ext.h" /* agmm.h, and agmm_part_t, agmm_blas_threads */
#include "common/util.h"
#include "gemm/engine.h"
#include "transport/transport.h"
#include "world/world.h"

/* One 64-bit counter on a cache line of its own. */
typedef struct agmm_padded_counter {
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t value;
    _Atomic uint32_t sleepers; /* signal cell layout: see signal.c */
} agmm_padded_counter_t;

/* Signal window layout: one cache line per cell.
 *   [0, tile_cells)               tile cells, raised by their source to e:
 *                                 all-gather: (src, t) at tile_base[src] + t
 *                                 gemm-rs: (src, t) at src * max_tiles + t,
 *                                 t a tile of the owner (this rank's rows)
 *   [tile_cells, +P)              bulk[src]: src's whole shard / partial
 *                                 rows (baseline)
 *   [tile_cells + P, +P)          ack[p]: p finished reading round e
 *   [tile_cells + 2P, +P)         rows[src] (all-gather): src's rows in
 *                                 round e, as agmm_rows_signal(e, rows)
 * Every cell has exactly one writer: the rank named by its index. */
typedef enum { SIG_TILE, SIG_BULK, SIG_ACK, SIG_ROWS } agmm_sig_kind_t;

/* The receive sets of a plan (AGMM_TP_CAP_POSTED_RECEIVES): one per
 * schedule, so a round arms only the receives it will use. */
enum { AGMM_RSET_TILES = 0, AGMM_RSET_SHARDS = 1 };

struct agmm_plan {
    agmm_world_t *world;
    agmm_plan_desc_t desc; /* desc.m_local points at m_local below */
    int rank, nranks;
    /* Rows of the current (or last) round, all-gather: the call's m_rows
     * (run.c, set by the round's caller before any worker starts, read-only
     * in workers; row_off also read by agmm_plan_row_offset from any thread,
     * hence its atomic stores and loads). Output rows of C and a_gathered
     * follow row_off. gemm-rs: always the plan's (== m_max). */
    int64_t *m_local;   /* [P] rows per rank */
    int64_t *row_off;   /* [P + 1] first global row of each rank */
    int64_t *tiles;     /* [P] row tiles per rank */
    int64_t M;          /* total rows (atomic stores: agmm_plan_rows) */
    /* The plan's layout, for the most rows (desc.m_local): where each
     * source's rows sit in the receive window and g32 (win_off), and the
     * tile signal cells and per-tile counters (tile_base, total_tiles). */
    int64_t *m_max;     /* [P] the plan's m_local */
    int64_t *tiles_max; /* [P] row tiles per rank at m_max */
    int64_t *win_max;   /* [P + 1] first row of each rank at m_max */
    /* [P + 1] first window / g32 row of each rank this round (call.c):
     * win_max on a transport with posted receives (their places are
     * declared), else row_off (rows close up: one contiguous block). */
    int64_t *win_off;
    int64_t *tile_base; /* [P + 1] first global tile index of each rank */
    int64_t M_max;      /* sum of m_max */
    int64_t total_tiles;
    /* Columns: the weights' columns side by side, each weight in whole
     * column blocks of tile_n (weight i has blocks [blk_off[i],
     * blk_off[i + 1])); worker shares split these blocks. */
    int nw;             /* weights (1 unless desc.n_list) */
    int64_t *n_w;       /* [nw] columns of each weight */
    int64_t *blk_off;   /* [nw + 1] */
    int64_t col_blocks; /* sum over weights of ceil(n_i / tile_n) */
    size_t esize;       /* bytes per input element */
    int64_t tile_cells; /* tile signal cells (see the layout above) */
    /* gemm-rs (desc.op == AGMM_OP_GEMM_RS); all-gather: k_local = NULL. */
    int64_t *k_local;  /* [P] inner-dimension part of each rank */
    int64_t k_gemm;    /* the engine's inner dimension: k, or k_local[rank] */
    int64_t max_rows;  /* max m_local: rows of one source's receive slot */
    int64_t max_tiles; /* max tiles: tile cells per source */
    float *part;       /* [M, n] this rank's partial A_r @ W_r (gemm-rs) */
    /* Per global tile (gemm-rs): column groups that finished it, summed
     * over fused rounds (the f-th fused round completes it at
     * f * ngroups). Incremented by GEMM workers (acq_rel), waited on by
     * comm workers (acquire). */
    agmm_padded_counter_t *ready;
    /* Fused gemm-rs rounds started (baseline rounds do not count): set by
     * the round's caller before its workers start, read-only in them. */
    uint64_t rs_fused_rounds;

    /* The receive window. all-gather: [M, k] in desc.dtype; rank r's rows
     * are unused on rank r (local rows are read from a_local). gemm-rs:
     * [P][max_rows, n] fp32: source s's partial rows of this rank's part
     * of C at slot s (its own slot unused: own partial stays in `part`). */
    agmm_win_t gathered;
    agmm_win_t signals;

    /* The GEMM engine and its weights, prepared per column group of GEMM
     * workers and per weight within it (gemm_plan.c): the segments
     * seg[seg_off[cg]], ..., seg[seg_off[cg + 1] - 1] cover the columns of
     * group cg, one per weight the group touches. */
    const agmm_gemm_engine_t *engine;
    struct agmm_gemm_seg *seg; /* [seg_off[ngroups]] */
    int *seg_off;              /* [ngroups + 1] */
    int ngroups;
    void **scratch;          /* [gemm_workers]: each worker's own */
    agmm_dtype_t gemm_dtype; /* what the engine reads: dtype or fp32 */
    int native;              /* gemm_dtype == dtype: rows used in place */
    size_t gemm_esize;
    uint32_t weight_set; /* bit i: weight i loaded */
    float *g32; /* [M, k] fp32 rows (only when !native) */
    /* Per global tile, in this process: the epoch whose conversion into g32
     * is claimed / done. A worker that needs a tile claims it with a CAS on
     * `claimed` (so it is converted once per round, by one thread) and
     * publishes `converted` with release; others wait on it (acquire). */
    agmm_padded_counter_t *claimed;
    agmm_padded_counter_t *converted;
    /* How often each work item (global tile, column block) was computed,
     * summed over rounds: the schedule test checks it. */
    _Atomic uint32_t *item_count;

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

/* One prepared weight segment: columns [c0, c1) of weight w (gemm_plan.c). */
typedef struct agmm_gemm_seg {
    agmm_gemm_prep_t *prep;
    int w;
    int64_t c0, c1;  /* columns within weight w */
    int64_t j0, j1;  /* the global column blocks it covers */
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

/* (ag_gemm/rows.c) Tiles [t0, t1) of source rank `src` in the engine's input
 * dtype for round `epoch`: in place (native dtype) or converted into g32 (once
 * per tile per round). `a_local` is this rank's shard; with `in_window`, local
 * rows in the native dtype are copied into the window (once per tile per round)
 * so that every source's rows are contiguous there, as in g32. Returns a
 * pointer with leading dimension k, elements of p->gemm_esize bytes. */
agmm_status_t agmm_plan_gemm_rows(agmm_plan_t *p, int src, int64_t t0,
                                  int64_t t1, const void *a_local,
                                  uint64_t epoch, int in_window,
                                  const void **rows);

/* The engine side of the plan (gemm_plan.c): prepare the engine for the
 * plan's column groups and row counts, load a weight, free. */
agmm_status_t agmm_plan_engine_init(agmm_plan_t *p);
agmm_status_t agmm_plan_engine_load(agmm_plan_t *p, const void *w);
void agmm_plan_engine_free(agmm_plan_t *p);

/* C rows [r0, r0 + m) (global rows, of c) over the columns of worker share
 * s, from m rows `a` in gemm_dtype (leading dimension k). One weight
 * (gemm-rs). */
struct agmm_worker_share;
agmm_status_t agmm_plan_gemm(agmm_plan_t *p, const struct agmm_worker_share *s,
                             int64_t r0, int64_t m, const void *a, float *c);
/* The same for every weight: c[i] is weight i's output ([M, n_i]). */
agmm_status_t agmm_plan_gemm_all(agmm_plan_t *p,
                                 const struct agmm_worker_share *s, int64_t r0,
                                 int64_t m, const void *a, float *const *c);
/* Load weight i (every segment of it). */
agmm_status_t agmm_plan_engine_load_i(agmm_plan_t *p, int i, const void *w);

/* Count the items (tiles [t0,t1) of src) x (column blocks [j0,j1)). */
void agmm_plan_count_items(agmm_plan_t *p, int src, int64_t t0, int64_t t1,
                           int64_t j0, int64_t j1);

/* Test hook: how often item (global tile, block) was computed. */
uint32_t agmm_plan_item_count(const agmm_plan_t *p, int64_t global_tile,
                              int64_t col_block);

/* FNV-1a over the description fields every rank must agree on (desc.c). */
uint64_t agmm_plan_desc_hash(const agmm_plan_desc_t *d);
/* gemm-rs: rank r's part of the inner dimension (desc.c): k_local[r], or
 * k split as evenly as possible, the first k % nranks ranks one more. */
int64_t agmm_plan_k_part(const agmm_plan_desc_t *d, int r);

/* Is `p` a live plan (created, not destroyed)? */
int agmm_plan_is_live(const agmm_plan_t *p);

/* Start a call on `p` that must not overlap another one on the same plan
 * (set_weight, run, run_part, destroy): AGMM_ERR_BAD_STATE, logged with
 * `who`, if `p` is not live or another such call is in progress. */
agmm_status_t agmm_plan_enter(agmm_plan_t *p, const char *who);
void agmm_plan_leave(agmm_plan_t *p);
/* Test hook: is a call in progress on `p`? */
int agmm_plan_busy(const agmm_plan_t *p);

/* One round of a plan, as every worker of the rank sees it (read-only). */
typedef struct agmm_round {
    agmm_plan_t *p;
    const void *a; /* this rank's shard */
    float *c;      /* this rank's output (gemm-rs; all-gather: cs[0]) */
    float *const *cs; /* all-gather: one output per weight */
    uint64_t epoch;
    int comm_workers, gemm_workers;
    int phases; /* AGMM_PHASE_*: all for a real round */
} agmm_round_t;

/* (run.c) Wait until peer q has acknowledged round x->epoch - 1 (it no
 * longer reads what this rank put into its windows then), as every put of
 * round x->epoch must before it lands. */
agmm_status_t agmm_round_wait_ack(const agmm_round_t *x, int q, double deadline);

/* Which phases of a schedule a round runs: both for a real round, one of
 * them for the benchmark parts (agmm_plan_run_part). */
enum { AGMM_PHASE_COMM = 1, AGMM_PHASE_GEMM = 2, AGMM_PHASE_ALL = 3 };

/* All-gather per-call rows and the gathered A (ag_gemm/call.c).
 * set_rows: the call's rows (m_rows, NULL: the plan's most) into m_local,
 * row_off, tiles, M and win_off, by the round's caller before any worker
 * starts. copy_gathered: gather(A) of the round just run into `out`
 * ([M, k] in dtype), by the caller after its workers joined and before it
 * acknowledges the round. */
void agmm_ag_set_rows(agmm_plan_t *p, const int64_t *m_rows);
void agmm_ag_copy_gathered(agmm_plan_t *p, const void *a_local, void *out);
/* The rows cells (ag_gemm/call.c). send: raise rows[rank] to
 * agmm_rows_signal(e, m_local[rank]) on the peers i = first, first + stride,
 * ... of the rotated order (i >= 1), each after its ack of round e - 1.
 * check: wait for src's rows cell of round e and compare it with this
 * rank's m_local[src]; a difference aborts the world naming both ranks
 * (AGMM_ERR_MISMATCH) before any row of src is used. */
agmm_status_t agmm_ag_send_rows(agmm_round_t *x, int first, int stride);
agmm_status_t agmm_ag_check_rows(agmm_round_t *x, int src);
/* Posted receives (MPI) only: wait for the tiles peers send empty in a
 * round with fewer rows than the plan's most (see call.c). */
agmm_status_t agmm_ag_wait_absent(agmm_round_t *x);

/* Schedules (ag_gemm/fused.c, ag_gemm/baseline.c): run one round on this
 * rank. */
agmm_status_t agmm_run_fused(agmm_round_t *round);
agmm_status_t agmm_run_baseline(agmm_round_t *round);
/* gemm-rs (gemm_rs/fused.c, gemm_rs/baseline.c). */
agmm_status_t agmm_run_rs_fused(agmm_round_t *round);
agmm_status_t agmm_run_rs_baseline(agmm_round_t *round);
/* gemm-rs receive declarations for a transport with posted receives
 * (gemm_rs/tiles.c), called once by plan_create. */
agmm_status_t agmm_rs_declare_puts(agmm_plan_t *p);

/* AGMM_SCHEDULE_AUTO (auto.c): the schedule the next auto round runs, and
 * recording its time (collective while measuring: allgathers the slowest
 * rank's time). */
agmm_schedule_t agmm_auto_next(agmm_plan_t *p);
agmm_status_t agmm_auto_record(agmm_plan_t *p, agmm_schedule_t ran,
                               double seconds);

#endif
