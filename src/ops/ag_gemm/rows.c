/* Input rows for the GEMM engine: straight from the local shard or the
 * window when the engine reads the dtype (oneDNN: bf16, fp32; OpenBLAS:
 * fp32), or converted to fp32 once per tile per round into the plan's g32
 * buffer. */
#include <string.h>

#include "common/log.h"
#include "gemm/convert.h"
#include "ops/ag_gemm/ag_gemm.h"
#include "ops/common/claims.h"

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
    size_t row_bytes = p->row_bytes;
    int64_t row = t * p->desc.tile_m;
    if (src == p->rank)
        return (const unsigned char *)a_local + (size_t)row * row_bytes;
    return p->recv_win.local + (size_t)(p->win_off[src] + row) * row_bytes;
}

typedef struct {
    agmm_plan_t *p;
    int src, copy;
    int64_t t0;
    unsigned char *dst0;
    const void *a_local;
} fill_ctx_t;

/* Tile g (of src) into its place: copied into the window, or converted
 * into g32 (claims.c calls it once per tile per round). */
static void fill_tile(void *arg, int64_t g)
{
    fill_ctx_t *f = arg;
    agmm_plan_t *p = f->p;
    int64_t t = g - p->tile_base[f->src];
    size_t row_bytes = agmm_plan_gemm_row_bytes(p);
    unsigned char *dst =
        f->dst0 + (size_t)((t - f->t0) * p->desc.tile_m) * row_bytes;
    const unsigned char *from = tile_src(p, f->src, t, f->a_local);
    int64_t rows = tile_rows(p, f->src, t);
    if (f->copy)
        memcpy(dst, from, (size_t)rows * row_bytes);
    else
        agmm_convert_to_f32(p->desc.dtype, from, (float *)(void *)dst,
                            (size_t)(rows * p->desc.k));
}

agmm_status_t agmm_ag_gemm_rows(agmm_plan_t *p, int src, int64_t t0, int64_t t1,
                                const void *a_local, uint64_t epoch,
                                int in_window, const void **rows)
{
    int64_t k = p->desc.k;
    int copy = p->native && in_window && src == p->rank;
    if (p->native && !copy) {
        *rows = tile_src(p, src, t0, a_local);
        return AGMM_OK;
    }
    /* Converted rows go to g32; local rows wanted in the window are copied
     * there (same claims: once per tile per round, by one worker). */
    size_t first = (size_t)(p->win_off[src] + t0 * p->desc.tile_m);
    fill_ctx_t f = {p,
                    src,
                    copy,
                    t0,
                    copy ? p->recv_win.local + first * p->row_bytes
                         : (unsigned char *)(p->g32 + first * (size_t)k),
                    a_local};
    *rows = f.dst0;
    return agmm_plan_claim_tiles(p, p->tile_base[src] + t0,
                                 p->tile_base[src] + t1, epoch, fill_tile, &f,
                                 src, p->tile_base[src]);
}
