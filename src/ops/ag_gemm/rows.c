/* Input rows for the GEMM engine: straight from the local shard or the
 * window when the engine reads the dtype (oneDNN: bf16, fp32; OpenBLAS:
 * fp32), or converted to fp32 once per tile per round into the plan's g32
 * buffer. */
#include <string.h>

#include "common/log.h"
#include "gemm/convert.h"
#include "ops/common/plan_internal.h"

static int64_t tile_rows(const agmm_plan_t *p, int src, int64_t t)
{
    int64_t r0 = t * p->desc.tile_m;
    return AGMM_MIN(p->desc.tile_m, p->m_local[src] - r0);
}

/* Where tile t of src is in the input: this rank's own shard, or the
 * gathered window where the peer put it. */
static const unsigned char *tile_src(const agmm_plan_t *p, int src, int64_t t,
                                     const void *a_local)
{
    size_t row_bytes = (size_t)p->desc.k * p->esize;
    int64_t row = t * p->desc.tile_m;
    if (src == p->rank)
        return (const unsigned char *)a_local + (size_t)row * row_bytes;
    return p->gathered.local + (size_t)(p->win_off[src] + row) * row_bytes;
}

agmm_status_t agmm_plan_gemm_rows(agmm_plan_t *p, int src, int64_t t0,
                                  int64_t t1, const void *a_local,
                                  uint64_t epoch, int in_window,
                                  const void **rows)
{
    int64_t k = p->desc.k;
    int copy = p->native && in_window && src == p->rank;
    if (p->native && !copy) {
        *rows = tile_src(p, src, t0, a_local);
        return AGMM_OK;
    }
    /* Converted rows go to g32; local rows wanted in the window are copied
     * there (same claims: once per tile per round, by one worker). */
    size_t first = (size_t)(p->win_off[src] + t0 * p->desc.tile_m) * (size_t)k;
    unsigned char *dst0 = copy ? p->gathered.local + first * p->esize
                               : (unsigned char *)(p->g32 + first);
    size_t row_bytes = (size_t)k * p->gemm_esize;
    *rows = dst0;
    /* Pass 1: convert every tile nobody has claimed for this round yet. */
    int pending = 0;
    for (int64_t t = t0; t < t1; t++) {
        int64_t gt = p->tile_base[src] + t;
        if (atomic_load_explicit(&p->converted[gt].value,
                                 memory_order_acquire) >= epoch)
            continue;
        uint64_t seen = atomic_load_explicit(&p->claimed[gt].value,
                                             memory_order_relaxed);
        if (seen >= epoch ||
            !atomic_compare_exchange_strong_explicit(
                &p->claimed[gt].value, &seen, epoch, memory_order_relaxed,
                memory_order_relaxed)) {
            pending = 1; /* another worker converts it */
            continue;
        }
        unsigned char *dst =
            dst0 + (size_t)((t - t0) * p->desc.tile_m) * row_bytes;
        if (copy)
            memcpy(dst, tile_src(p, src, t, a_local),
                   (size_t)tile_rows(p, src, t) * row_bytes);
        else
            agmm_convert_to_f32(p->desc.dtype, tile_src(p, src, t, a_local),
                                (float *)(void *)dst,
                                (size_t)(tile_rows(p, src, t) * k));
        /* Release: the converted rows are visible to whoever acquires. */
        agmm_signal_publish(&p->converted[gt].value, epoch);
    }
    /* Pass 2: wait for the tiles other workers of this rank convert. */
    for (int64_t t = t0; pending && t < t1; t++) {
        int64_t gt = p->tile_base[src] + t;
        agmm_wait_what_t what = {"conversion of tile", src, t, 0, 0};
        AGMM_CHECK(agmm_signal_wait(p->world, &p->converted[gt].value, epoch,
                                    agmm_deadline(p->world, p->desc.timeout_s),
                                    &what));
    }
    return AGMM_OK;
}

void agmm_plan_count_items(agmm_plan_t *p, int src, int64_t t0, int64_t t1,
                           int64_t j0, int64_t j1)
{
    for (int64_t t = t0; t < t1; t++)
        for (int64_t j = j0; j < j1; j++)
            atomic_fetch_add_explicit(
                &p->item_count[(p->tile_base[src] + t) * p->col_blocks + j], 1,
                memory_order_relaxed);
}

uint32_t agmm_plan_item_count(const agmm_plan_t *p, int64_t gt, int64_t j)
{
    return atomic_load_explicit(&p->item_count[gt * p->col_blocks + j],
                                memory_order_relaxed);
}
