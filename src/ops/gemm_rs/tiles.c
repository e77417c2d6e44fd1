/* gemm-rs building blocks (see tiles.h). Threads: every function runs on a
 * worker of the round; what they share is named at each. */
#include <string.h>

#include "common/fault.h"
#include "common/log.h"
#include "gemm/convert.h"
#include "ops/common/schedule.h"
#include "ops/gemm_rs/tiles.h"
#include "trace/trace.h"

static double deadline_of(const agmm_plan_t *p)
{
    return agmm_deadline(p->world, p->desc.timeout_s);
}

agmm_status_t agmm_rs_rows(agmm_round_t *x, int64_t g0, int64_t g1,
                           const void **rows)
{
    agmm_plan_t *p = x->p;
    int64_t k = p->k_gemm;
    int64_t r0 = agmm_global_tile_row(p, g0);
    const unsigned char *a = x->a;
    if (p->native || k == 0) {
        *rows = a ? a + (size_t)r0 * (size_t)k * p->esize : NULL;
        return AGMM_OK;
    }
    *rows = p->g32 + (size_t)r0 * (size_t)k;
    /* Pass 1: convert every tile nobody claimed for this round yet (CAS on
     * claimed[g], relaxed: the claim only elects the converter; the rows
     * are published by `converted` with release). */
    int pending = 0;
    for (int64_t g = g0; g < g1; g++) {
        if (atomic_load_explicit(&p->converted[g].value,
                                 memory_order_acquire) >= x->epoch)
            continue;
        uint64_t seen =
            atomic_load_explicit(&p->claimed[g].value, memory_order_relaxed);
        if (seen >= x->epoch ||
            !atomic_compare_exchange_strong_explicit(
                &p->claimed[g].value, &seen, x->epoch, memory_order_relaxed,
                memory_order_relaxed)) {
            pending = 1;
            continue;
        }
        int64_t t0 = agmm_global_tile_row(p, g);
        int64_t t1 = agmm_global_tile_row(p, g + 1);
        agmm_convert_to_f32(p->desc.dtype, a + (size_t)t0 * (size_t)k * p->esize,
                            p->g32 + (size_t)t0 * (size_t)k,
                            (size_t)((t1 - t0) * k));
        agmm_signal_publish(&p->converted[g].value, x->epoch);
    }
    /* Pass 2: wait for the tiles other workers of this rank convert. */
    for (int64_t g = g0; pending && g < g1; g++) {
        agmm_wait_what_t what = {"conversion of tile", p->rank, g, 0, 0};
        AGMM_CHECK(agmm_signal_wait(p->world, &p->converted[g].value,
                                    x->epoch, deadline_of(p), &what));
    }
    return AGMM_OK;
}

agmm_status_t agmm_rs_put_tile(agmm_round_t *x, int q, int64_t t)
{
    agmm_plan_t *p = x->p;
    agmm_world_t *w = p->world;
    int64_t i0 = t * p->desc.tile_m;
    int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_local[q] - i0);
    size_t bytes = (size_t)rows * (size_t)p->desc.n * sizeof(float);
    /* The owner may still reduce from our slot of the previous round. */
    AGMM_CHECK(agmm_round_wait_ack(x, q, deadline_of(p)));
    const float *src = p->part + (size_t)(p->row_off[q] + i0) * (size_t)p->desc.n;
    AGMM_CHECK(agmm_fault_before_put(p->rank)); /* test hook, fault.h */
    uint64_t t_put = agmm_trace_clock();
    AGMM_CHECK(agmm_tp_put_signal(w, &p->gathered, q,
                                  agmm_rs_slot_off(p, p->rank, i0), src, bytes,
                                  &p->signals, agmm_rs_tile_sig(p, p->rank, t),
                                  x->epoch));
    agmm_trace_put(t_put, q, t, t + 1, bytes, x->epoch, AGMM_TSIG_TILE);
    return AGMM_OK;
}

agmm_status_t agmm_rs_reduce(agmm_round_t *x, int64_t t0, int64_t t1,
                             int bulk, int own_in_c)
{
    agmm_plan_t *p = x->p;
    int r = p->rank, P = p->nranks;
    int64_t n = p->desc.n, tm = p->desc.tile_m;
    int64_t i0 = t0 * tm, i1 = AGMM_MIN(t1 * tm, p->m_local[r]);
    if (i1 <= i0) return AGMM_OK;
    for (int s = 0; s < P; s++) { /* acquire: the peer's rows are in place */
        if (s == r) continue;
        int64_t wait_end = bulk ? t0 + 1 : t1; /* bulk: one cell */
        for (int64_t t = t0; t < wait_end; t++) {
            agmm_wait_what_t what = {bulk ? "partial rows" : "partial tile", s,
                                     bulk ? -1 : t, 0, 0};
            size_t cell = bulk ? agmm_sig_off(p, SIG_BULK, s)
                               : agmm_rs_tile_sig(p, s, t);
            AGMM_CHECK(agmm_traced_wait(p->world,
                                        agmm_win_signal(&p->signals, cell),
                                        x->epoch, deadline_of(p), &what,
                                        bulk ? AGMM_TSIG_SHARD
                                             : AGMM_TSIG_TILE));
        }
    }
    /* Fixed order: c = src 0, then += src 1, ..., src P-1, element-wise in
     * fp32. Each element's sum is the same sequence of additions in every
     * run and in both schedules, so results are bit-reproducible. With
     * own_in_c (rank 0 or 1), c = own already: adding the others in rank
     * order is that same sequence (see agmm_rs_own_in_c). */
    size_t count = (size_t)(i1 - i0) * (size_t)n;
    float *c = x->c + (size_t)i0 * (size_t)n;
    int first = !own_in_c; /* the next source is copied, not added */
    for (int s = 0; s < P; s++) {
        if (own_in_c && s == r) continue;
        const float *v =
            s == r ? p->part + (size_t)(p->row_off[r] + i0) * (size_t)n
                   : (const float *)(const void *)(p->gathered.local +
                                                   agmm_rs_slot_off(p, s, i0));
        if (first) {
            memcpy(c, v, count * sizeof(float));
            first = 0;
            continue;
        }
        for (size_t i = 0; i < count; i++)
            c[i] += v[i];
    }
    return AGMM_OK;
}

/* Every put this rank receives, declared once per plan for a transport
 * with posted receives (MPI): per (source, own tile) for the fused
 * schedule (receive set TILES), per source for the baseline (SHARDS). */
agmm_status_t agmm_rs_declare_puts(agmm_plan_t *p)
{
    agmm_world_t *w = p->world;
    int r = p->rank;
    size_t row_bytes = (size_t)p->desc.n * sizeof(float);
    for (int s = 0; s < p->nranks; s++) {
        if (s == r || p->m_local[r] == 0) continue;
        for (int64_t t = 0; t < p->tiles[r]; t++) {
            int64_t i0 = t * p->desc.tile_m;
            int64_t rows = AGMM_MIN(p->desc.tile_m, p->m_local[r] - i0);
            AGMM_CHECK(agmm_tp_expect(w, &p->gathered, s,
                                      agmm_rs_slot_off(p, s, i0),
                                      (size_t)rows * row_bytes, &p->signals,
                                      agmm_rs_tile_sig(p, s, t),
                                      AGMM_RSET_TILES));
        }
        AGMM_CHECK(agmm_tp_expect(
            w, &p->gathered, s, agmm_rs_slot_off(p, s, 0),
            (size_t)p->m_local[r] * row_bytes, &p->signals,
            agmm_sig_off(p, SIG_BULK, s), AGMM_RSET_SHARDS));
    }
    return AGMM_OK;
}
