/* A plan's geometry and its memory booking (plan_book.h, book.h): every
 * count and per-rank array of a plan computed from its description, and
 * every buffer it then holds, booked once. plan.c allocates from the
 * booking; the descriptor (pd.c: agmm_plan_bytes_per_rank) adds it up on a
 * plan that only has its geometry (no windows, no engine), so the estimate
 * is the allocation. */
#include <string.h>

#include "common/log.h"
#include "gemm/engine_list.h"
#include "ops/common/book.h"
#include "ops/common/desc.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/path.h"
#include "ops/common/plan.h"
#include "ops/common/plan_book.h"
#include "ops/common/stage.h"

/* The layout arrays, one allocation: nine per-rank int64 arrays (four of
 * P + 1), two per weight, then the segments (at most one per group plus
 * one per weight boundary), their offsets and the scratch pointers. */
static size_t layout_bytes(int P, int nw, int ngroups, int G)
{
    size_t n64 = 9 * (size_t)P + 4 + 2 * (size_t)nw + 1;
    size_t nseg = (size_t)ngroups + (size_t)nw;
    return n64 * sizeof(int64_t) + nseg * sizeof(agmm_gemm_seg_t) +
           ((size_t)ngroups + 1) * sizeof(int) + (size_t)G * sizeof(void *);
}

/* Carve the next `count` elements of `size` bytes (alignment: every
 * element type here is at most 8 bytes and a multiple of its alignment). */
static void *carve(unsigned char **at, size_t count, size_t size)
{
    void *p = *at;
    *at += (count * size + 7) / 8 * 8;
    return p;
}

agmm_status_t agmm_plan_geometry(agmm_plan_t *p, const agmm_plan_desc_t *d,
                                 int rank)
{
    int P = d->nranks, G = d->gemm_workers;
    p->op = agmm_operation(d->op);
    p->engine = agmm_gemm_engine_of_desc(d);
    if (!p->op || !p->engine) /* desc_check refused them already */
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan: invalid op or engine");
    p->rank = rank;
    p->nranks = P;
    p->nw = agmm_desc_weights(d);
    int64_t col_blocks = 0;
    for (int i = 0; i < p->nw; i++) { /* C's columns (gated: half of W's) */
        int64_t n = d->n_list ? d->n_list[i] : d->n;
        if (agmm_activation_gate(agmm_desc_activation(d, i)) != AGMM_ACT_NONE)
            n /= 2;
        col_blocks += AGMM_DIV_UP(n, d->tile_n);
    }
    p->ngroups = (int)AGMM_MIN((int64_t)G, col_blocks);
    size_t bytes = layout_bytes(P, p->nw, p->ngroups, G);
    unsigned char *at = p->layout = agmm_alloc(bytes);
    if (!at) return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    p->m_local = carve(&at, (size_t)P, sizeof(int64_t));
    p->row_off = carve(&at, (size_t)P + 1, sizeof(int64_t));
    p->tiles = carve(&at, (size_t)P, sizeof(int64_t));
    p->tile_base = carve(&at, (size_t)P + 1, sizeof(int64_t));
    p->m_max = carve(&at, (size_t)P, sizeof(int64_t));
    p->tiles_max = carve(&at, (size_t)P, sizeof(int64_t));
    p->win_off = carve(&at, (size_t)P + 1, sizeof(int64_t));
    p->win_max = carve(&at, (size_t)P + 1, sizeof(int64_t));
    p->k_part = carve(&at, (size_t)P, sizeof(int64_t));
    p->n_w = carve(&at, (size_t)p->nw, sizeof(int64_t));
    p->blk_off = carve(&at, (size_t)p->nw + 1, sizeof(int64_t));
    p->seg = carve(&at, (size_t)(p->ngroups + p->nw), sizeof(agmm_gemm_seg_t));
    p->seg_off = carve(&at, (size_t)p->ngroups + 1, sizeof(int));
    p->scratch = carve(&at, (size_t)G, sizeof(void *));
    p->bytes_held = bytes;

    for (int r = 0; r < P; r++) {
        p->m_max[r] = p->m_local[r] = d->m_local[r];
        p->win_off[r + 1] = p->row_off[r + 1] = p->row_off[r] + d->m_local[r];
        p->win_max[r + 1] = p->row_off[r + 1];
        p->tiles_max[r] = p->tiles[r] = AGMM_DIV_UP(d->m_local[r], d->tile_m);
        p->tile_base[r + 1] = p->tile_base[r] + p->tiles[r];
        p->max_rows = AGMM_MAX(p->max_rows, p->m_local[r]);
        p->max_tiles = AGMM_MAX(p->max_tiles, p->tiles[r]);
        p->k_part[r] = p->op->k_part(d, r);
    }
    p->glu = 0;
    for (int i = 0; i < p->nw; i++) {
        p->n_w[i] = d->n_list ? d->n_list[i] : d->n;
        agmm_activation_t act = agmm_desc_activation(d, i);
        if (agmm_activation_gate(act) != AGMM_ACT_NONE) p->glu |= 1u << i;
        p->blk_off[i + 1] =
            p->blk_off[i] + AGMM_DIV_UP(agmm_plan_out_cols(p, i), d->tile_n);
    }
    p->desc = *d;
    p->desc.m_local = p->m_max;
    p->desc.n_list = p->n_w;
    p->desc.n_weights = p->nw;
    p->desc.n = p->n_w[0];
    if (d->k_local) p->desc.k_local = p->k_part;
    if (d->activations) {
        memcpy(p->activations, d->activations,
               sizeof(agmm_activation_t) * (size_t)p->nw);
        p->desc.activations = p->activations;
    }
    p->M_max = p->M = p->row_off[P];
    p->total_tiles = p->tile_base[P];
    p->col_blocks = p->blk_off[p->nw];
    p->esize = agmm_dtype_size(d->dtype);
    p->k_gemm = p->k_part[rank];
    p->int8 = d->dtype == AGMM_DTYPE_INT8;
    p->row_bytes = (size_t)p->k_gemm * p->esize;
    p->scale_off = 0;
    if (p->int8 && p->op->scales_in_rows) { /* stage.c */
        p->scale_off = (size_t)AGMM_DIV_UP(p->k_gemm, 4) * 4;
        p->row_bytes = p->scale_off + sizeof(float);
    }
    /* The epilogue (the public and the engine's activations are the same
     * list in the same order). */
    _Static_assert((int)AGMM_ACT_SILU == (int)AGMM_GEMM_ACT_SILU &&
                       (int)AGMM_ACT_GELU_ERF == (int)AGMM_GEMM_ACT_GELU_ERF &&
                       (int)AGMM_ACT_GELU_TANH ==
                           (int)AGMM_GEMM_ACT_GELU_TANH &&
                       (int)AGMM_ACT_RELU == (int)AGMM_GEMM_ACT_RELU,
                   "the activations' values");
    p->epilogue = d->bias || d->out_dtype != AGMM_DTYPE_FP32;
    for (int i = 0; i < p->nw; i++) {
        agmm_activation_t act = agmm_desc_activation(d, i);
        if (p->glu >> i & 1u) act = agmm_activation_gate(act);
        p->act[i] = (agmm_gemm_act_t)act;
        p->epilogue |= act != AGMM_ACT_NONE;
    }
    p->out_esize = agmm_dtype_size(d->out_dtype);
    p->tile_cells = p->op->tile_cells(p);
    /* The path the description forces, else native where there is one
     * (AUTO decides later: agmm_path_choose, then agmm_plan_set_path). */
    agmm_plan_set_path(p, d->gemm_path == AGMM_GEMM_PATH_F32 ||
                                  !agmm_path_has_native(p->engine, d->dtype)
                              ? AGMM_GEMM_PATH_F32
                              : AGMM_GEMM_PATH_NATIVE);
    agmm_plan_segments(p, p->seg, p->seg_off);
    return AGMM_OK;
}

void agmm_plan_set_path(agmm_plan_t *p, agmm_gemm_path_t path)
{
    p->path = path;
    p->gemm_dtype = agmm_path_gemm_dtype(p->desc.dtype, path);
    p->native = p->gemm_dtype == p->desc.dtype;
    p->gemm_esize = agmm_dtype_size(p->gemm_dtype);
}

agmm_status_t agmm_plan_book(agmm_plan_t *p, agmm_book_t *b)
{
    const agmm_plan_desc_t *d = &p->desc;
    agmm_book_init(b);
    agmm_book_held(b, "layout", p->bytes_held);
    int64_t nt = AGMM_MAX(p->total_tiles, 1);
    size_t cl = AGMM_CACHE_LINE, cnt = sizeof(agmm_padded_counter_t);
    agmm_book_local(b, "conversion claims", nt, (int64_t)cnt, cl,
                    (void **)&p->claimed);
    agmm_book_local(b, "conversions done", nt, (int64_t)cnt, cl,
                    (void **)&p->converted);
    int64_t items;
    if (!agmm_mul_ok(nt, p->col_blocks, &items)) items = -1;
    agmm_book_local(b, "item counts", items, sizeof(uint32_t), cl,
                    (void **)&p->item_count);
    if (!p->native)
        agmm_book_local(b, "fp32 rows", p->M_max * p->k_gemm, sizeof(float), cl,
                        (void **)&p->g32);
    if (d->bias) /* weight i's at agmm_plan_col_off(p, i) */
        agmm_book_local(b, "bias", agmm_plan_col_off(p, p->nw), sizeof(float),
                        cl, (void **)&p->bias);
    uint64_t weights = 0, scratch = 0;
    AGMM_CHECK(agmm_plan_engine_estimate(p, &weights, &scratch));
    p->scratch_bytes = (size_t)scratch;
    agmm_book_local(b, "gemm scratch", d->gemm_workers, (int64_t)scratch, cl,
                    &p->scratch[0]);
    if (p->op->book) p->op->book(p, b);
    agmm_plan_book_stage(p, b);
    uint64_t win = p->op->window_bytes(p);
    agmm_book_window(b, "receive window", win > INT64_MAX ? -1 : (int64_t)win,
                     1, &p->recv_win);
    agmm_book_window(b, "signals", p->tile_cells + 3 * (int64_t)p->nranks,
                     AGMM_CACHE_LINE, &p->signals);
    agmm_book_engine(b, "prepared weights", weights);
    /* agmm_book_total is 0 past 63 bits, as an overflow is. */
    return b->overflow || agmm_book_total(b) == 0
               ? agmm_error(AGMM_ERR_TOO_LARGE,
                            "plan: byte counts overflow 64 bits")
               : AGMM_OK;
}

/* The booking of rank r's plan, added up: the plan's own booking on a
 * plan that has only its geometry (AUTO: the larger of its two paths,
 * since the choice is made at creation). with_engine 0: the engine's share by
 * a model that cannot fail (k x n fp32, no scratch), for the overflow
 * check of a description. 0 on any failure (muted: a query). */
static uint64_t rank_total(const agmm_plan_desc_t *d, int r, int with_engine)
{
    agmm_plan_t sk;
    memset(&sk, 0, sizeof sk);
    uint64_t total = 0;
    if (agmm_plan_geometry(&sk, d, r) == AGMM_OK) {
        agmm_book_t b;
        if (with_engine) {
            /* AUTO may take either path (int8: either variant of its one
             * path): the most of them. */
            int both = d->gemm_path == AGMM_GEMM_PATH_AUTO && sk.native &&
                       d->dtype != AGMM_DTYPE_FP32 &&
                       d->weight_dtype == AGMM_WDTYPE_SAME; /* path.c */
            for (int f32 = 0; f32 <= both; f32++) {
                if (f32 && sk.int8)
                    sk.int8_u8 = 1;
                else if (f32)
                    agmm_plan_set_path(&sk, AGMM_GEMM_PATH_F32);
                if (agmm_plan_book(&sk, &b) != AGMM_OK) {
                    total = 0;
                    break;
                }
                total = AGMM_MAX(total, agmm_book_total(&b));
            }
        } else {
            /* Everything but the engine, with the engine by a bound no
             * engine's estimate exceeds: each weight padded by 64 in both
             * dimensions, fp32, twice (AUTO books both paths), and per
             * GEMM worker a scratch of rows x (n + k) plus a weight's
             * worth, every dimension padded by 64 (OpenBLAS's chunk of C,
             * oneDNN's scratchpad of packed A and B). The total must fit
             * in 62 bits, so that the engine's own numbers, smaller than
             * the bound, add up in 63 (agmm_book_total). */
            sk.native = 1;
            agmm_book_init(&b);
            agmm_book_local(&b, "fp32 rows", sk.M_max * sk.k_gemm, 4, 1, NULL);
            int64_t kp = sk.k_gemm + 64, rp = sk.M_max + 64, wsum = 0;
            for (int i = 0; i < sk.nw; i++) {
                int64_t np = sk.n_w[i] + 64, w = 0, s = 0, t = 0;
                if (!agmm_mul_ok(kp, np * 8, &w) ||
                    !agmm_add_ok(wsum, w, &wsum) ||
                    !agmm_mul_ok(rp, np + kp, &s) ||
                    !agmm_add_ok(s, kp * np, &s) ||
                    !agmm_mul_ok(s, 4 * (int64_t)d->gemm_workers, &t))
                    b.overflow = 1;
                else
                    agmm_book_engine(&b, "engine bound", (uint64_t)t);
            }
            agmm_book_engine(&b, "engine bound", (uint64_t)wsum);
            if (sk.op->book) sk.op->book(&sk, &b);
            agmm_plan_book_stage(&sk, &b);
            uint64_t win = sk.op->window_bytes(&sk);
            agmm_book_window(&b, "receive window",
                             win > INT64_MAX ? -1 : (int64_t)win, 1, NULL);
            agmm_book_window(&b, "signals",
                             sk.tile_cells + 3 * (int64_t)d->nranks,
                             AGMM_CACHE_LINE, NULL);
            total = agmm_book_total(&b);
            if (total > (UINT64_C(1) << 62)) total = 0;
        }
    }
    agmm_free(sk.layout);
    return total;
}

/* The most over ranks: every rank whose inner part (int8: and rows, which
 * its staged A follows: stage.c) differs from those seen (at most 8
 * remembered) is booked (the rest of a geometry is the same on every
 * rank). */
static uint64_t most_over_ranks(const agmm_plan_desc_t *d, int with_engine)
{
    const agmm_operation_t *op = agmm_operation(d->op);
    int64_t seen[8][2];
    int nseen = 0;
    uint64_t most = 0;
    for (int r = 0; r < d->nranks; r++) {
        int64_t k = op->k_part(d, r), dup = 0;
        int64_t m = d->dtype == AGMM_DTYPE_INT8 ? d->m_local[r] : 0;
        for (int i = 0; i < nseen; i++)
            dup |= seen[i][0] == k && seen[i][1] == m;
        if (dup) continue;
        if (nseen < 8) {
            seen[nseen][0] = k;
            seen[nseen++][1] = m;
        }
        uint64_t t = rank_total(d, r, with_engine);
        if (t == 0) return 0;
        most = AGMM_MAX(most, t);
    }
    return most;
}

uint64_t agmm_plan_bytes_booked(const agmm_plan_desc_t *d, int with_engine)
{
    return most_over_ranks(d, with_engine);
}
