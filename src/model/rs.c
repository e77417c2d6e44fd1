/* gemm-rs's and gemm-ar's threads in the model (round.h), as
 * ops/gemm_rs/fused.c, baseline.c and ops/gemm_ar/ run them on rank r:
 *   fused, GEMM worker g: owners q = r+1, ..., r (own block last); per
 *     peer's block one call per tile (cheap calls and the puts overlap:
 *     comm workers, the link or MPI) or one call over its tiles; the own
 *     block one call, from rank 2 on after summing the partials of the
 *     ranks before r over its columns (gemm-ar: per tile as the peers'
 *     blocks, each tile's sum before its call); after each tile the
 *     column groups' ready count;
 *     the worker completing it puts the partial (no comm workers), or
 *     reduces its own tile (the ranks after r, on ranks 0 and 1 every
 *     other rank, all n columns) and, for
 *     gemm-ar, puts the reduced tile to every peer. With at most 64 rows
 *     per owner (and one row group) one call over all M rows first, every
 *     slot summed by the reduction. gemm-ar without comm workers: then the
 *     k-th peer reduced tile's copy into C by GEMM worker k % G.
 *   fused, comm worker c: every C-th peer partial tile in the order they
 *     are computed: wait its ready count, put it; gemm-ar: then every
 *     C-th peer reduced tile's copy.
 *   baseline: each worker one call over its rows of all M; join; worker 0
 *     puts each peer its rows of the partial (one bulk put each), quiets,
 *     sums its rows over sources 0..P-1; gemm-ar: bulk put of the sum to
 *     every peer, quiet, copy of every owner's rows into C. */
#include "model/round.h"

enum { WHOLE_ROWS = 64 }; /* AGMM_RS_WHOLE_ROWS (ops/gemm_rs/tiles.h) */

static void side(mdl_round_t *x, thr_t *th, act_t a)
{
    mdl_side(x, th, &a);
}

static int ar(const mdl_round_t *x)
{
    return x->L->d->op == AGMM_OP_GEMM_AR;
}

static double out_bytes(const mdl_layout_t *L, int64_t rows)
{
    return (double)rows * (double)L->n_tot *
           (double)agmm_dtype_size(L->d->out_dtype);
}

/* The A rows of owner q's tiles [t0, t1) converted to fp32 when the
 * engine does not read the dtype: once per tile per round, by whichever
 * worker claims it first. */
static void claims(mdl_round_t *x, thr_t *th, int q, int64_t t0, int64_t t1)
{
    const mdl_layout_t *L = x->L;
    for (int64_t t = t0; L->converts && t < t1; t++) {
        double bytes =
            (double)mdl_tile_rows(L, q, t) * (double)L->kpart[th->rank] * 2.0;
        side(x, th,
             (act_t){.kind = A_CLAIM,
                     .ck = K_CLAIM,
                     .a = q,
                     .t = t,
                     .dur = mdl_convert_s(L, bytes)});
    }
}

static void gemm(mdl_round_t *x, thr_t *th, int64_t rows)
{
    const mdl_layout_t *L = x->L;
    if (rows <= 0 || L->kpart[th->rank] <= 0) return;
    side(x, th,
         (act_t){.kind = A_BUSY,
                 .cat = AGMM_MODEL_BOUND_GEMM,
                 .dur = mdl_gemm_s(L, &L->share[th->idx], rows,
                                   L->kpart[th->rank])});
}

static void reduce(mdl_round_t *x, thr_t *th, double bytes)
{
    side(x, th,
         (act_t){.kind = A_BUSY,
                 .cat = AGMM_MODEL_BOUND_REDUCE,
                 .dur = mdl_reduce_s(x->L, bytes)});
}

static void wait_cell(mdl_round_t *x, thr_t *th, int ck, int a, int64_t t)
{
    side(x, th, (act_t){.kind = A_WAIT, .ck = ck, .a = a, .t = t});
}

/* A fused wait on a peer's signalled tile (a partial, a reduced tile):
 * the wait, then its half of tile_us (round.c charges the putting half). */
static void wait_tile(mdl_round_t *x, thr_t *th, int ck, int a, int64_t t)
{
    wait_cell(x, th, ck, a, t);
    side(x, th,
         (act_t){.kind = A_BUSY,
                 .cat = AGMM_MODEL_BOUND_OVERHEAD,
                 .dur = mdl_tile_half_s(x->L)});
}

static void put(mdl_round_t *x, thr_t *th, int q, int ck, int64_t t,
                double bytes)
{
    side(x, th,
         (act_t){.kind = A_PUT,
                 .q = q,
                 .ck = ck,
                 .a = th->rank,
                 .t = t,
                 .bytes = bytes});
}

static int whole_call(const mdl_round_t *x, const mdl_share_t *s, int r)
{
    const mdl_layout_t *L = x->L;
    if (s->gr != 1 || L->kpart[r] == 0) return 0;
    for (int q = 0; q < L->P; q++)
        if (L->rows[q] > WHOLE_ROWS) return 0;
    return 1;
}

/* Does rank r's own GEMM add onto the sources before it (fused.c's
 * sums_before_gemm)? From rank 2 on; ranks 0 and 1 write their own
 * partial into c first and add every peer's after. */
static int sums_before(int r)
{
    return r > 1;
}

/* The worker completing own tile t: the sum of the sources its GEMM did
 * not add onto (into_c: the own partial is in c; else every source, the
 * own from `part`), all n columns, then gemm-ar's puts of the reduced
 * tile. */
static void own_tile_done(mdl_round_t *x, thr_t *th, int64_t t, int into_c)
{
    const mdl_layout_t *L = x->L;
    int r = th->rank;
    int64_t rows = mdl_tile_rows(L, r, t);
    for (int s = into_c && sums_before(r) ? r + 1 : 0; s < L->P; s++) {
        if (s == r && into_c) continue;
        if (s != r) wait_tile(x, th, K_TILE, s, t);
        reduce(x, th, (double)rows * L->out_row_bytes);
    }
    for (int i = 1; ar(x) && i < L->P; i++)
        put(x, th, mdl_peer(r, L->P, i), K_RED, t, out_bytes(L, rows));
}

/* gemm-ar: the k-th peer reduced tile, k % n == me, waited and copied. */
static void ar_copies(mdl_round_t *x, thr_t *th, int me, int n)
{
    const mdl_layout_t *L = x->L;
    int64_t k = 0;
    for (int i = 1; ar(x) && i < L->P; i++) {
        int q = mdl_peer(th->rank, L->P, i);
        for (int64_t t = 0; t < L->tiles[q]; t++, k++) {
            if (k % n != me) continue;
            wait_tile(x, th, K_RED, q, t);
            side(x, th,
                 (act_t){.kind = A_BUSY,
                         .cat = AGMM_MODEL_BOUND_COPY,
                         .dur = mdl_copy_s(
                             L, out_bytes(L, mdl_tile_rows(L, q, t)))});
        }
    }
}

/* cur[0]: 0 start, 1 owner loop, 2 after a tile's count, 3 end; cur[1]
 * owner index i (1..P), cur[2] tile, cur[3] into_c, cur[4] gemm,
 * cur[5] tile calls. */
static int fused_gemm(mdl_round_t *x, thr_t *th, act_t *a)
{
    const mdl_layout_t *L = x->L;
    const mdl_share_t *s = &L->share[th->idx];
    int r = th->rank, P = L->P;
    *a = (act_t){.kind = A_NOP};
    if (th->cur[0] == 0) {
        th->cur[0] = 1;
        th->cur[1] = 1;
        th->cur[2] = -1;
        if (!s->busy) {
            ar_copies(x, th, th->idx, L->G);
            th->cur[0] = 3;
            return 1;
        }
        int overlap = L->C > 0 || L->m->transport != AGMM_MODEL_SHM;
        th->cur[5] = L->cheap_calls && overlap;
        th->cur[3] = L->kpart[r] > 0;
        th->cur[4] = 1;
        if (whole_call(x, s, r)) {
            for (int q = 0; q < P; q++)
                claims(x, th, q, 0, L->tiles[q]);
            gemm(x, th, L->M);
            th->cur[3] = th->cur[4] = 0;
        }
        return 1;
    }
    if (th->cur[0] == 2) { /* the count of tile cur[2] of owner cur[1] */
        int q = mdl_peer(r, P, (int)th->cur[1]);
        if (th->hit) {
            if (q == r)
                own_tile_done(x, th, th->cur[2], (int)th->cur[3]);
            else if (L->C == 0)
                put(x, th, q, K_TILE, th->cur[2],
                    (double)mdl_tile_rows(L, q, th->cur[2]) * L->out_row_bytes);
        }
        th->cur[2]++;
        th->cur[0] = 1;
        return 1;
    }
    if (th->cur[0] == 3) return 0;
    while (th->cur[1] <= P) {
        int q = mdl_peer(r, P, (int)th->cur[1]), own = q == r;
        int64_t t0 = s->rg * L->tiles[q] / s->gr;
        int64_t t1 = (s->rg + 1) * L->tiles[q] / s->gr;
        /* gemm-ar sends its own reduced tiles: its own block is one
         * call per tile too (ops/gemm_ar/fused.c) */
        int per_tile = th->cur[5] && (!own || ar(x));
        if (th->cur[2] < 0) { /* the block's start */
            th->cur[2] = t0;
            if (!per_tile && t0 < t1 && th->cur[4]) {
                int64_t rows = 0;
                for (int64_t t = t0; t < t1; t++)
                    rows += mdl_tile_rows(L, q, t);
                for (int src = 0;
                     own && th->cur[3] && sums_before(r) && src < r; src++)
                    for (int64_t t = t0; t < t1; t++) {
                        wait_tile(x, th, K_TILE, src, t);
                        reduce(x, th,
                               (double)mdl_tile_rows(L, q, t) * s->cols * 4.0);
                    }
                claims(x, th, q, t0, t1);
                gemm(x, th, rows);
            }
        }
        if (th->cur[2] < t1) {
            int64_t t = th->cur[2];
            if (per_tile && th->cur[4]) {
                for (int src = 0;
                     own && th->cur[3] && sums_before(r) && src < r; src++) {
                    wait_tile(x, th, K_TILE, src, t);
                    reduce(x, th,
                           (double)mdl_tile_rows(L, q, t) * s->cols * 4.0);
                }
                claims(x, th, q, t, t + 1);
                gemm(x, th, mdl_tile_rows(L, q, t));
            }
            side(x, th,
                 (act_t){.kind = A_COUNT, .ck = K_READY, .a = q, .t = t});
            th->cur[0] = 2;
            return 1;
        }
        th->cur[1]++;
        th->cur[2] = -1;
    }
    ar_copies(x, th, th->idx, L->G);
    th->cur[0] = 3;
    return 1;
}

static int fused_comm(mdl_round_t *x, thr_t *th, act_t *a)
{
    const mdl_layout_t *L = x->L;
    if (th->cur[0]) return 0;
    th->cur[0] = 1;
    int64_t k = 0;
    for (int i = 1; i < L->P; i++) {
        int q = mdl_peer(th->rank, L->P, i);
        for (int64_t t = 0; t < L->tiles[q]; t++, k++) {
            if (k % L->C != th->idx) continue;
            wait_cell(x, th, K_READY, q, t);
            put(x, th, q, K_TILE, t,
                (double)mdl_tile_rows(L, q, t) * L->out_row_bytes);
        }
    }
    ar_copies(x, th, th->idx, L->C);
    *a = (act_t){.kind = A_NOP};
    return 1;
}

static int baseline(mdl_round_t *x, thr_t *th, act_t *a)
{
    const mdl_layout_t *L = x->L;
    int r = th->rank, P = L->P;
    if (th->cur[0]) return 0;
    th->cur[0] = 1;
    *a = (act_t){.kind = A_NOP};
    const mdl_share_t *s = &L->share[th->idx];
    if (th->gemm && s->busy) {
        int64_t rows = 0; /* the row group's share of all tiles */
        for (int q = 0; q < P; q++) {
            int64_t t0 = s->rg * L->tiles[q] / s->gr;
            int64_t t1 = (s->rg + 1) * L->tiles[q] / s->gr;
            claims(x, th, q, t0, t1);
            for (int64_t t = t0; t < t1; t++)
                rows += mdl_tile_rows(L, q, t);
        }
        gemm(x, th, rows);
    }
    side(x, th, (act_t){.kind = A_COUNT, .ck = K_JOIN, .a = 0, .t = 0});
    if (!th->gemm || th->idx != 0) return 1;
    wait_cell(x, th, K_JOIN, 0, 0);
    for (int i = 1; i < P; i++) {
        int q = mdl_peer(r, P, i);
        put(x, th, q, K_BULK, 0, (double)L->rows[q] * L->out_row_bytes);
    }
    side(x, th, (act_t){.kind = A_QUIET});
    for (int src = 0; src < P; src++) {
        if (src != r) wait_cell(x, th, K_BULK, src, 0);
        reduce(x, th, (double)L->rows[r] * L->out_row_bytes);
    }
    if (!ar(x)) return 1;
    for (int i = 1; i < P; i++)
        put(x, th, mdl_peer(r, P, i), K_REDBULK, 0, out_bytes(L, L->rows[r]));
    side(x, th, (act_t){.kind = A_QUIET});
    for (int i = 1; i < P; i++) {
        int q = mdl_peer(r, P, i);
        wait_cell(x, th, K_REDBULK, q, 0);
        side(x, th,
             (act_t){.kind = A_BUSY,
                     .cat = AGMM_MODEL_BOUND_COPY,
                     .dur = mdl_copy_s(L, out_bytes(L, L->rows[q]))});
    }
    return 1;
}

int mdl_rs_next(mdl_round_t *x, thr_t *th, act_t *a)
{
    if (!x->fused) return baseline(x, th, a);
    return th->gemm ? fused_gemm(x, th, a) : fused_comm(x, th, a);
}
