/* Internal to the model (src/model/): the plan's layout as the model sees it
 * (rows, tiles and k parts per rank, each GEMM worker's columns) and the
 * cost of one step (a GEMM call, a copy, a wire), shared by the schedules
 * (ag.c, rs.c), the transports (net.c) and the prediction (predict.c).
 * Built once per agmm_model_predict call; read-only afterwards. */
#ifndef AGMM_MODEL_MODEL_H
#define AGMM_MODEL_MODEL_H

#include <stdint.h>

#include "agmm_model.h"

/* One GEMM worker's columns: `cols` in `nseg` weight segments (one engine
 * call each per block of rows), and its row group (`rg` of `gr`). */
typedef struct mdl_share {
    int busy;     /* 0: this worker has no column block (idle) */
    int64_t cols; /* columns over every weight */
    int nseg;     /* weight segments (calls per block of rows) */
    int64_t seg_cols[AGMM_MAX_WEIGHTS];
    int rg, gr; /* row group of the worker, row groups */
} mdl_share_t;

typedef struct mdl_layout {
    const agmm_model_machine_t *m;
    const agmm_plan_desc_t *d;
    int P;                /* ranks */
    int R;                /* ranks per host */
    int64_t *rows;        /* [P] rows of each rank (its shard, its part of C) */
    int64_t *tiles;       /* [P] ceil(rows / tile_m) */
    int64_t *row_off;     /* [P] first global row */
    int64_t *kpart;       /* [P] gemm-rs/ar: the inner dimension part */
    int64_t M;            /* all rows */
    int64_t tmax;         /* most tiles of any rank */
    int64_t n_tot;        /* columns over every weight */
    double row_bytes;     /* ag-gemm: one row of A in its dtype */
    double out_row_bytes; /* gemm-rs/ar: one fp32 row of C (n columns) */
    int G, C;             /* GEMM and comm workers per rank */
    int ngroups;          /* column groups (workers with columns / gr) */
    int cheap_calls;      /* oneDNN: a call per tile costs no weight pack */
    int converts;       /* rows converted before the GEMM (16-bit, f32 path) */
    int uniform;        /* every rank has the same rows (and k part) */
    double cpu;         /* >= 1: threads' work slowed by shared cores */
    mdl_share_t *share; /* [G] */
} mdl_layout_t;

agmm_status_t mdl_layout_build(const agmm_model_machine_t *m,
                               const agmm_plan_desc_t *d, mdl_layout_t *L);
void mdl_layout_free(mdl_layout_t *L);

/* agmm_model_predict choosing how: MDL_AUTO (what it does), MDL_FULL
 * (every rank simulated) or MDL_FAST (the symmetric fast path wherever
 * every rank has the same rows and k part); the unit test compares them. */
enum { MDL_AUTO = 0, MDL_FULL = 1, MDL_FAST = 2 };
agmm_status_t mdl_predict(const agmm_model_machine_t *m,
                          const agmm_plan_desc_t *d, int mode,
                          agmm_model_result_t *out);

/* Rows of tile t of rank r (the last may be short; 0 beyond). */
int64_t mdl_tile_rows(const mdl_layout_t *L, int r, int64_t t);

/* Seconds of one GEMM block: `rows` rows of inner dimension `k` over
 * worker share `s` (one call per segment): sum over segments of call_us +
 * 2 rows cols k / rate(rows), each at least the segment's weight bytes
 * (mdl_weight_bytes) over dram_gbs when that is > 0. 0 for 0 rows. */
double mdl_gemm_s(const mdl_layout_t *L, const mdl_share_t *s, int64_t rows,
                  int64_t k);
/* Bytes of the prepared weight one call of inner dimension `k` over
 * `cols` columns reads, by d's weight_dtype, engine and path: a quantized
 * weight's packed values with their group scales and zero points
 * (agmm_wq_packed_bytes), agmm's bf16-weight kernel's packed blocks
 * (engine wq, weight_dtype same), else k x cols elements of what the
 * engine reads (fp32 on the f32 path or for fp32, else the dtype's). */
double mdl_weight_bytes(const agmm_plan_desc_t *d, int64_t k, int64_t cols);
/* GFLOP/s of one call of `rows` rows: the machine's rates interpolated
 * linearly in log(rows), clamped to the first and last. */
double mdl_rate(const agmm_model_machine_t *m, int64_t rows);

/* Seconds to copy / convert / reduce `bytes` on one thread (slowed, as
 * the GEMM, by shared cores: L->cpu). */
double mdl_copy_s(const mdl_layout_t *L, double bytes);
double mdl_convert_s(const mdl_layout_t *L, double bytes);
double mdl_reduce_s(const mdl_layout_t *L, double bytes);
/* Seconds on a wire: bytes * 8 / link_gbps (0 without a link). */
double mdl_wire_s(const mdl_layout_t *L, double bytes);
/* The per-round overhead: round_us + peer_us * (P - 1), seconds. */
double mdl_round_s(const mdl_layout_t *L);
/* Half of tile_us, seconds: what a fused schedule charges the putting
 * thread per signalled tile put, and the waiting thread per wait on a
 * tile (the other half). Not slowed by shared cores (as msg_us). */
double mdl_tile_half_s(const mdl_layout_t *L);

#endif
