/* The all-gather half of gemm-ar (see ar.h): the owner's puts of its
 * reduced rows to every peer, the peers' copies of them from their window
 * into their C. Threads: put_tile runs on the GEMM worker that reduced the
 * tile, copy_tiles on the comm workers (or the GEMM workers when there are
 * none), the rows versions on the round's caller (fused.c, baseline.c).
 *
 * Memory order: the owner's put raises the peer's cell to e with release
 * after the rows (agmm_tp_put_signal); the peer's wait acquires it before
 * it copies. The region is overwritten by round e + 1's puts only after
 * the peer's ack of round e (agmm_round_put waits for it), which run.c
 * sends after every worker of round e joined, i.e. after every copy. */
#include <string.h>

#include "common/log.h"
#include "ops/common/round.h"
#include "ops/common/schedule.h"
#include "ops/gemm_ar/ar.h"
#include "trace/trace.h"

void agmm_ar_round(const agmm_round_t *round, agmm_ar_round_t *out)
{
    agmm_plan_t *p = round->p;
    out->own = *round;
    out->c = round->c;
    if (round->c) /* C's elements are out_dtype's (out_esize bytes) */
        out->own.c = (float *)(void *)((unsigned char *)round->c +
                                       (size_t)p->row_off[p->rank] *
                                           (size_t)p->desc.n * p->out_esize);
}

/* Rows [i0, i0 + rows) of owner q's part: C's rows, bytes (of the
 * finished values: out_dtype). */
static size_t tile_rows(const agmm_plan_t *p, int q, int64_t t, int64_t *i0)
{
    *i0 = t * p->desc.tile_m;
    int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_local[q] - *i0);
    return (size_t)rows * (size_t)p->desc.n * p->out_esize;
}

static unsigned char *c_rows(const agmm_ar_round_t *x, int q, int64_t i)
{
    const agmm_plan_t *p = x->own.p;
    return (unsigned char *)x->c +
           (size_t)(p->row_off[q] + i) * (size_t)p->desc.n * p->out_esize;
}

agmm_status_t agmm_ar_put_tile(const agmm_ar_round_t *x, int64_t t)
{
    agmm_plan_t *p = x->own.p;
    int r = p->rank;
    int64_t i0;
    size_t bytes = tile_rows(p, r, t, &i0);
    for (int i = 1; i < p->nranks; i++) { /* rotated: peers start apart */
        int q = agmm_source_order(r, p->nranks, i);
        AGMM_CHECK(agmm_round_put(
            &x->own, q, agmm_ar_reduced_off(p, r, i0), c_rows(x, r, i0), bytes,
            agmm_ar_tile_sig(p, r, t), t, t + 1, AGMM_TSIG_TILE));
    }
    return AGMM_OK;
}

agmm_status_t agmm_ar_copy_tiles(const agmm_ar_round_t *x, int index, int count)
{
    agmm_plan_t *p = x->own.p;
    int64_t k = 0;
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(p->rank, p->nranks, i);
        for (int64_t t = 0; t < p->tiles[q]; t++, k++) {
            if (k % count != index) continue;
            agmm_wait_what_t what = {"reduced tile", q, t, 0, 0, 0};
            AGMM_CHECK(agmm_traced_wait(
                p->world,
                agmm_win_signal(&p->signals, agmm_ar_tile_sig(p, q, t)),
                x->own.epoch, agmm_plan_deadline_second_hop(p), &what,
                AGMM_TSIG_TILE));
            int64_t i0;
            size_t bytes = tile_rows(p, q, t, &i0);
            memcpy(c_rows(x, q, i0),
                   p->recv_win.local + agmm_ar_reduced_off(p, q, i0), bytes);
        }
    }
    return AGMM_OK;
}

/* Is a put of owner q's rows expected on a transport with posted
 * receives (MPI) although the call gives q none? Its receives are
 * declared for the plan's rows (op.c), and each must complete once per
 * round. */
static int rows_posted(const agmm_plan_t *p, int q)
{
    return p->m_max[q] > 0 &&
           agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES);
}

static const unsigned char none; /* the source of 0-byte puts */

agmm_status_t agmm_ar_send_absent(const agmm_ar_round_t *x)
{
    agmm_plan_t *p = x->own.p;
    int r = p->rank;
    if (!agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES) ||
        !(x->own.phases & AGMM_PHASE_COMM))
        return AGMM_OK;
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(r, p->nranks, i);
        for (int64_t t = p->tiles[r]; t < p->tiles_max[r]; t++)
            AGMM_CHECK(agmm_round_put(
                &x->own, q, agmm_ar_reduced_off(p, r, t * p->desc.tile_m),
                &none, 0, agmm_ar_tile_sig(p, r, t), t, t + 1, AGMM_TSIG_TILE));
    }
    return AGMM_OK;
}

agmm_status_t agmm_ar_wait_absent(const agmm_ar_round_t *x)
{
    agmm_plan_t *p = x->own.p;
    if (!agmm_tp_has(p->world, AGMM_TP_CAP_POSTED_RECEIVES) ||
        !(x->own.phases & AGMM_PHASE_COMM))
        return AGMM_OK;
    for (int q = 0; q < p->nranks; q++) {
        if (q == p->rank) continue;
        for (int64_t t = p->tiles[q]; t < p->tiles_max[q]; t++) {
            agmm_wait_what_t what = {"empty reduced tile", q, t, 0, 0, 0};
            AGMM_CHECK(agmm_traced_wait(
                p->world,
                agmm_win_signal(&p->signals, agmm_ar_tile_sig(p, q, t)),
                x->own.epoch, agmm_plan_deadline_second_hop(p), &what,
                AGMM_TSIG_TILE));
        }
    }
    return AGMM_OK;
}

agmm_status_t agmm_ar_put_rows(const agmm_ar_round_t *x)
{
    agmm_plan_t *p = x->own.p;
    int r = p->rank;
    /* No rows of C are r's: no put, unless the peers posted a receive for
     * them (an empty put). */
    if (p->m_local[r] == 0 && !rows_posted(p, r)) return AGMM_OK;
    size_t bytes = (size_t)p->m_local[r] * (size_t)p->desc.n * p->out_esize;
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(r, p->nranks, i);
        AGMM_CHECK(agmm_round_put(&x->own, q, agmm_ar_reduced_off(p, r, 0),
                                  bytes ? c_rows(x, r, 0) : &none, bytes,
                                  agmm_ar_rows_sig(p, r), 0, p->tiles[r],
                                  AGMM_TSIG_SHARD));
    }
    return agmm_tp_quiet(p->world);
}

agmm_status_t agmm_ar_copy_rows(const agmm_ar_round_t *x)
{
    agmm_plan_t *p = x->own.p;
    for (int i = 1; i < p->nranks; i++) {
        int q = agmm_source_order(p->rank, p->nranks, i);
        /* q sends nothing, or (posted receives) an empty put */
        if (p->m_local[q] == 0 && !rows_posted(p, q)) continue;
        agmm_wait_what_t what = {"reduced rows", q, -1, 0, 0, 0};
        AGMM_CHECK(agmm_traced_wait(
            p->world, agmm_win_signal(&p->signals, agmm_ar_rows_sig(p, q)),
            x->own.epoch, agmm_plan_deadline_second_hop(p), &what,
            AGMM_TSIG_SHARD));
        if (p->m_local[q] > 0) /* (C may be NULL without rows) */
            memcpy(c_rows(x, q, 0),
                   p->recv_win.local + agmm_ar_reduced_off(p, q, 0),
                   (size_t)p->m_local[q] * (size_t)p->desc.n * p->out_esize);
    }
    return AGMM_OK;
}
