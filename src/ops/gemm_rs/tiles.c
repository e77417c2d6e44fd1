/* gemm-rs building blocks (see tiles.h). Threads: every function runs on a
 * worker of the round; what they share is named at each. */
#include <string.h>

#include "common/log.h"
#include "gemm/convert.h"
#include "ops/common/claims.h"
#include "ops/common/epilogue_rows.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/gemm_rs/tiles.h"
#include "trace/trace.h"

/* Global tile g of A_r converted into g32 (claims.c calls it once per
 * tile per round). */
static void fill_tile(void *arg, int64_t g)
{
    agmm_round_t *x = arg;
    agmm_plan_t *p = x->p;
    int64_t k = p->k_gemm;
    int64_t t0 = agmm_rs_tile_row(p, g), t1 = agmm_rs_tile_row(p, g + 1);
    agmm_convert_to_f32(
        p->desc.dtype,
        (const unsigned char *)x->a + (size_t)t0 * (size_t)k * p->esize,
        p->g32 + (size_t)t0 * (size_t)k, (size_t)((t1 - t0) * k));
}

agmm_status_t agmm_rs_rows(agmm_round_t *x, int64_t g0, int64_t g1,
                           const void **rows)
{
    agmm_plan_t *p = x->p;
    int64_t k = p->k_gemm;
    int64_t r0 = agmm_rs_tile_row(p, g0);
    const unsigned char *a = x->a;
    if (p->native || k == 0) {
        *rows = a ? a + (size_t)r0 * (size_t)k * p->esize : NULL;
        return AGMM_OK;
    }
    *rows = p->g32 + (size_t)r0 * (size_t)k;
    return agmm_plan_claim_tiles(p, g0, g1, x->epoch, fill_tile, x, p->rank, 0);
}

agmm_status_t agmm_rs_put_tile(agmm_round_t *x, int q, int64_t t)
{
    agmm_plan_t *p = x->p;
    int64_t i0 = t * p->desc.tile_m;
    int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_local[q] - i0);
    size_t bytes = (size_t)rows * (size_t)p->desc.n * sizeof(float);
    /* The owner may still reduce from our slot of the previous round:
     * agmm_round_put waits for its ack first. */
    const float *src =
        agmm_rs_part(p) + (size_t)(p->row_off[q] + i0) * (size_t)p->desc.n;
    return agmm_round_put(x, q, agmm_rs_slot_off(p, p->rank, i0), src, bytes,
                          agmm_rs_tile_sig(p, p->rank, t), t, t + 1,
                          AGMM_TSIG_TILE);
}

/* The epilogue of rows [i0, i1) of this rank's sums (agmm_rs_sum_out)
 * into the user's C. */
static void finish_rows(const agmm_round_t *x, int64_t i0, int64_t i1)
{
    const agmm_plan_t *p = x->p;
    int64_t n = p->desc.n;
    if (i1 <= i0 || !p->epilogue) return;
    agmm_plan_epilogue_rows(
        p, 0, agmm_rs_sum_out(x) + (size_t)i0 * (size_t)n, i1 - i0,
        (unsigned char *)x->c + (size_t)i0 * (size_t)n * p->out_esize);
}

/* dst (count floats) = u, or += u. */
static void add_run(float *c, const float *u, size_t count, int first)
{
    if (first)
        memcpy(c, u, count * sizeof(float));
    else
        for (size_t i = 0; i < count; i++)
            c[i] += u[i];
}

agmm_status_t agmm_rs_reduce(agmm_round_t *x, const agmm_rs_sum_t *sum)
{
    agmm_plan_t *p = x->p;
    int r = p->rank;
    int64_t n = p->desc.n, tm = p->desc.tile_m, t0 = sum->t0, t1 = sum->t1;
    int64_t i0 = t0 * tm, i1 = AGMM_MIN(t1 * tm, p->m_local[r]);
    if (i1 <= i0) return AGMM_OK;
    int s_last = sum->s1 - 1; /* the last source added */
    if (sum->own_in_out && s_last == r) s_last--;
    if (sum->s0 > s_last) { /* nothing to add: complete already */
        if (sum->finish) finish_rows(x, i0, i1);
        return AGMM_OK;
    }
    int bulk = sum->bulk;
    for (int s = sum->s0; s < sum->s1; s++) { /* acquire: rows in place */
        if (s == r) continue;
        AGMM_CHECK(agmm_rs_check_rows(x, s));  /* its rows are ours first */
        int64_t wait_end = bulk ? t0 + 1 : t1; /* bulk: one cell */
        for (int64_t t = t0; t < wait_end; t++) {
            agmm_wait_what_t what = {bulk ? "partial rows" : "partial tile",
                                     s,
                                     bulk ? -1 : t,
                                     0,
                                     0,
                                     0};
            size_t cell =
                bulk ? agmm_sig_off(p, SIG_BULK, s) : agmm_rs_tile_sig(p, s, t);
            AGMM_CHECK(
                agmm_traced_wait(p->world, agmm_win_signal(&p->signals, cell),
                                 x->epoch, agmm_plan_deadline(p), &what,
                                 bulk ? AGMM_TSIG_SHARD : AGMM_TSIG_TILE));
        }
    }
    /* Fixed order: c = src s0, then += s0 + 1, ..., element-wise in fp32
     * (the own partial from `part` at its position). Each element's sum is
     * the same sequence of additions in every run and in both schedules,
     * so results are bit-reproducible. Whole rows are one run of memory;
     * a column range is one run per row; the last source of a finishing
     * step goes row by row, each row's epilogue right after its addition. */
    int64_t c0 = sum->c0, c1 = sum->c1, width = c1 - c0;
    int whole = c0 == 0 && c1 == n;
    int fuse = sum->finish && p->epilogue && whole;
    int first = sum->first; /* the next source is copied, not added */
    float *out = agmm_rs_sum_out(x);
    for (int s = sum->s0; s < sum->s1; s++) {
        const float *v =
            s == r ? agmm_rs_part(p) + (size_t)(p->row_off[r] + i0) * (size_t)n
                   : (const float *)(const void *)(p->recv_win.local +
                                                   agmm_rs_slot_off(p, s, i0));
        if (s == r && sum->own_in_out) continue;
        int last = fuse && s == s_last; /* each row's epilogue next */
        if (whole && !last) {
            add_run(out + (size_t)i0 * (size_t)n, v, (size_t)((i1 - i0) * n),
                    first);
            first = 0;
            continue;
        }
        for (int64_t i = i0; i < i1; i++) {
            add_run(out + (size_t)i * (size_t)n + c0,
                    v + (size_t)(i - i0) * (size_t)n + c0, (size_t)width,
                    first);
            if (last) finish_rows(x, i, i + 1);
        }
        first = 0;
    }
    if (sum->finish && !fuse) finish_rows(x, i0, i1); /* columns in parts */
    return AGMM_OK;
}
