/* ag-gemm's threads in the model (round.h), as ops/ag_gemm/fused.c and
 * baseline.c run them on rank r:
 *   fused, comm worker c: tiles t = c, c + C, ... of r, each put to peers
 *     r+1, r+2, ... (with the relay, to one rank per remote host:
 *     relay(r, H) = H's rank of host index r mod |H|);
 *   fused, GEMM worker g: without comm workers those puts first (tiles g,
 *     g + G, ...); then, when every tile of its share has arrived (and the
 *     engine has cheap calls with one row group and the round at most
 *     AG_WHOLE_ROWS rows, or is OpenBLAS), the
 *     conversions and one call over its rows (OpenBLAS on fp32 rows: one
 *     per source); otherwise the local tiles without waiting, then
 *     sources r+1, r+2, ...: wait each tile, convert it (claims shared
 *     by the workers), one call per tile (oneDNN) or per run of arrived
 *     tiles (OpenBLAS);
 *   baseline: bulk puts of r's shard (peers 1 + c, 1 + c + C, ... per
 *     putting thread; on MPI the native all-gather from one thread), every
 *     worker waits for every shard, converts, one call of all its rows. */
#include "model/round.h"

enum { AG_WHOLE_ROWS = 512 }; /* AGMM_AG_WHOLE_ROWS (ops/ag_gemm/ag_gemm.h) */

/* Tiles [t0, t1) of src in th's row group, as agmm_share_tiles. */
static void share_tiles(const mdl_layout_t *L, const mdl_share_t *s, int src,
                        int64_t *t0, int64_t *t1)
{
    *t0 = s->rg * L->tiles[src] / s->gr;
    *t1 = (s->rg + 1) * L->tiles[src] / s->gr;
}

static int64_t rows_of(const mdl_layout_t *L, int src, int64_t t0, int64_t t1)
{
    int64_t rows = 0;
    for (int64_t t = t0; t < t1; t++)
        rows += mdl_tile_rows(L, src, t);
    return rows;
}

static void side(mdl_round_t *x, thr_t *th, act_t a)
{
    mdl_side(x, th, &a);
}

/* The waiting half of a signalled tile's tile_us (round.c charges the
 * putting half): on th after it has seen the tile's signal. */
static void tile_wait_cost(mdl_round_t *x, thr_t *th)
{
    side(x, th,
         (act_t){.kind = A_BUSY,
                 .cat = AGMM_MODEL_BOUND_OVERHEAD,
                 .dur = mdl_tile_half_s(x->L)});
}

static void gemm(mdl_round_t *x, thr_t *th, int64_t rows)
{
    const mdl_layout_t *L = x->L;
    double d = mdl_gemm_s(L, &L->share[th->idx], rows, L->d->k);
    if (rows > 0)
        side(x, th,
             (act_t){.kind = A_BUSY, .cat = AGMM_MODEL_BOUND_GEMM, .dur = d});
}

/* Tile (src, t)'s rows converted to fp32 (16-bit inputs the engine does
 * not read), or, with `copy`, local rows copied into the window (one
 * call over every source, cheap calls): once per round, by whichever
 * worker claims it first. */
static void claim(mdl_round_t *x, thr_t *th, int src, int64_t t, int64_t rows,
                  int copy)
{
    const mdl_layout_t *L = x->L;
    if (rows <= 0 || (!L->converts && !copy)) return;
    double bytes = (double)rows * L->row_bytes;
    double d = L->converts ? mdl_convert_s(L, bytes) : mdl_copy_s(L, bytes);
    side(x, th,
         (act_t){.kind = A_CLAIM, .ck = K_CLAIM, .a = src, .t = t, .dur = d});
}

/* Tile t of r to its i-th peer: the action, or 0 when the relay of the
 * peer's host passes it on instead. */
static int put_tile(const mdl_round_t *x, int r, int64_t t, int i, act_t *a)
{
    const mdl_layout_t *L = x->L;
    const agmm_model_machine_t *m = L->m;
    int q = mdl_peer(r, L->P, i), R = L->R, fwd = 0;
    if (m->transport == AGMM_MODEL_MPI && m->relay && m->hosts > 1 &&
        q / R != r / R) {
        if (q != (q / R) * R + r % R) return 0;
        fwd = R > 1;
    }
    *a = (act_t){.kind = A_PUT,
                 .q = q,
                 .ck = K_TILE,
                 .a = r,
                 .t = t,
                 .bytes = (double)mdl_tile_rows(L, r, t) * L->row_bytes,
                 .forward = fwd};
    return 1;
}

/* The fused puts of tiles first, first + stride, ...: cur[1] tile,
 * cur[2] peer index. 1 with an action, 0 when done. */
static int next_put(mdl_round_t *x, thr_t *th, int first, int stride, act_t *a)
{
    const mdl_layout_t *L = x->L;
    int r = th->rank;
    if (th->cur[1] == 0 && th->cur[2] == 0) {
        th->cur[1] = first;
        th->cur[2] = 1;
    }
    while (th->cur[1] < L->tiles[r] && L->P > 1) {
        int64_t t = th->cur[1];
        int i = (int)th->cur[2]++;
        if (th->cur[2] >= L->P) {
            th->cur[1] += stride;
            th->cur[2] = 1;
        }
        if (put_tile(x, r, t, i, a)) return 1;
    }
    return 0;
}

/* The first tile of th's share not arrived (its cell), or -1. */
static int64_t first_missing(mdl_round_t *x, thr_t *th)
{
    const mdl_layout_t *L = x->L;
    const mdl_share_t *s = &L->share[th->idx];
    for (int src = 0; src < L->P; src++) {
        if (src == th->rank) continue;
        int64_t t0, t1;
        share_tiles(L, s, src, &t0, &t1);
        for (int64_t t = t0; t < t1; t++) {
            int64_t c = mdl_cell(x, th->sr, K_TILE, src, t);
            if (x->cells[c].t < 0) return c;
        }
    }
    return -1;
}

/* Every tile there: conversions, then the calls gemm_share_at_once makes. */
static void at_once(mdl_round_t *x, thr_t *th)
{
    const mdl_layout_t *L = x->L;
    const mdl_share_t *s = &L->share[th->idx];
    int64_t total = 0;
    for (int src = 0; src < L->P; src++) {
        int64_t t0, t1;
        share_tiles(L, s, src, &t0, &t1);
        for (int64_t t = t0; t < t1; t++) {
            if (src != th->rank) tile_wait_cost(x, th);
            claim(x, th, src, t, mdl_tile_rows(L, src, t),
                  L->cheap_calls && src == th->rank);
        }
        int64_t rows = rows_of(L, src, t0, t1);
        if (!L->cheap_calls && !L->converts)
            gemm(x, th, rows); /* fp32 in place: one block per source */
        total += rows;
    }
    if (L->cheap_calls || L->converts) gemm(x, th, total);
}

/* The next tiles of the incremental order: cur[3] source index, cur[4]
 * tile, cur[5] 1 once the current tile's wait was issued. */
static int incremental(mdl_round_t *x, thr_t *th, act_t *a)
{
    const mdl_layout_t *L = x->L;
    const mdl_share_t *s = &L->share[th->idx];
    int r = th->rank;
    while (th->cur[3] < L->P) {
        int src = mdl_peer(r, L->P, (int)th->cur[3]);
        int64_t t0, t1;
        share_tiles(L, s, src, &t0, &t1);
        if (th->cur[4] < t0) th->cur[4] = t0;
        int64_t t = th->cur[4];
        if (t >= t1) {
            th->cur[3]++;
            th->cur[4] = 0;
            continue;
        }
        if (src != r && !th->cur[5]) { /* wait for the tile first */
            th->cur[5] = 1;
            *a = (act_t){.kind = A_WAIT, .ck = K_TILE, .a = src, .t = t};
            return 1;
        }
        th->cur[5] = 0;
        int64_t u = t + 1;
        if (!L->cheap_calls) { /* local: all; remote: the arrived run */
            if (src == r)
                u = t1;
            else
                while (u < t1 &&
                       x->cells[mdl_cell(x, th->sr, K_TILE, src, u)].t >= 0)
                    u++;
        }
        for (int64_t v = t; src != r && v < u; v++)
            tile_wait_cost(x, th); /* each tile's signal of the run */
        for (int64_t v = t; v < u; v++)
            claim(x, th, src, v, mdl_tile_rows(L, src, v), 0);
        gemm(x, th, rows_of(L, src, t, u));
        th->cur[4] = u;
        *a = (act_t){.kind = A_NOP};
        return 1;
    }
    return 0;
}

static int fused_gemm(mdl_round_t *x, thr_t *th, act_t *a)
{
    const mdl_layout_t *L = x->L;
    const mdl_share_t *s = &L->share[th->idx];
    switch (th->cur[0]) {
    case 0:
        if (L->C == 0 && next_put(x, th, th->idx, L->G, a)) return 1;
        th->cur[0] = 1;
        /* fall through */
    case 1:
        if (!s->busy) return 0;
        if (L->P > 1 &&
            (!L->cheap_calls || (s->gr == 1 && L->M <= AG_WHOLE_ROWS))) {
            th->cur[0] = 2;
            *a = (act_t){.kind = A_YIELD};
            return 1;
        }
        th->cur[0] = 3;
        break;
    case 2: {
        /* share_arrives_within: for as long as this worker's own posting
         * took (until th->mark; with comm workers 0: just look). */
        if (!th->cur[7]) {
            th->cur[7] = 1;
            th->mark = 2 * x->sim.now; /* the round began at 0 */
            th->timed_out = 0;
        }
        double deadline = th->mark;
        int64_t c = first_missing(x, th);
        if (c < 0) {
            at_once(x, th);
            th->cur[0] = 4;
            *a = (act_t){.kind = A_NOP};
            return 1;
        }
        if (x->sim.now < deadline && !th->timed_out) {
            const sim_cell_t *base = x->cells + mdl_cell(x, th->sr, 0, 0, 0);
            int64_t off = c - (base - x->cells), tm = L->tmax;
            *a = (act_t){.kind = A_WAIT,
                         .ck = K_TILE,
                         .a = (int)((off / tm) % L->P),
                         .t = off % tm,
                         .dur = deadline};
            return 1;
        }
        th->cur[0] = 3;
        break;
    }
    case 4:
        return 0;
    }
    return incremental(x, th, a);
}

static int baseline_put(mdl_round_t *x, thr_t *th, int first, int stride,
                        act_t *a)
{
    const mdl_layout_t *L = x->L;
    int r = th->rank;
    if (th->cur[1] == 0) th->cur[1] = 1 + first;
    if (th->cur[1] >= L->P) return 0;
    int q = mdl_peer(r, L->P, (int)th->cur[1]);
    th->cur[1] += stride;
    *a = (act_t){.kind = A_PUT,
                 .q = q,
                 .ck = K_BULK,
                 .a = r,
                 .t = 0,
                 .bytes = (double)L->rows[r] * L->row_bytes};
    return 1;
}

static int baseline_gemm(mdl_round_t *x, thr_t *th, act_t *a)
{
    const mdl_layout_t *L = x->L;
    const mdl_share_t *s = &L->share[th->idx];
    if (th->cur[0] == 0) {
        /* MPI: the native all-gather, from one thread of the rank. */
        int native = L->m->transport == AGMM_MODEL_MPI;
        if (L->C == 0 && (!native || th->idx == 0) &&
            baseline_put(x, th, native ? 0 : th->idx, native ? 1 : L->G, a))
            return 1;
        th->cur[0] = 1;
        th->cur[1] = 0;
        if (!s->busy) return 0;
    }
    if (th->cur[0] == 1) {
        while (th->cur[1] < L->P) {
            int src = (int)th->cur[1]++;
            if (src == th->rank) continue;
            *a = (act_t){.kind = A_WAIT, .ck = K_BULK, .a = src, .t = 0};
            return 1;
        }
        int64_t total = 0;
        for (int src = 0; src < L->P; src++) {
            int64_t t0, t1;
            share_tiles(L, s, src, &t0, &t1);
            /* The whole shard converted once, by whoever claims it. */
            claim(x, th, src, 0, L->rows[src], 0);
            total += rows_of(L, src, t0, t1);
        }
        gemm(x, th, total);
        th->cur[0] = 2;
        *a = (act_t){.kind = A_NOP};
        return 1;
    }
    return 0;
}

int mdl_ag_next(mdl_round_t *x, thr_t *th, act_t *a)
{
    const mdl_layout_t *L = x->L;
    if (th->gemm)
        return x->fused ? fused_gemm(x, th, a) : baseline_gemm(x, th, a);
    if (x->fused) return next_put(x, th, th->idx, L->C, a);
    int native = L->m->transport == AGMM_MODEL_MPI;
    if (native && th->idx != 0) return 0;
    return baseline_put(x, th, native ? 0 : th->idx, native ? 1 : L->C, a);
}
