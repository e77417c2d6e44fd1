/* The work partition (schedule.h) and the count of the items computed
 * (schedule.h: the schedule test's hook). */
#include "ops/common/schedule.h"

#include "ops/common/plan.h"

int agmm_busy_gemm_workers(int G, int64_t col_blocks)
{
    int64_t gc = col_blocks < G ? col_blocks : G;
    return (int)(gc * (G / gc));
}

int agmm_worker_share(int g, int G, int64_t col_blocks, agmm_worker_share_t *s)
{
    int64_t gc = col_blocks < G ? col_blocks : G;
    int gr = (int)(G / gc);
    if (g >= gr * gc) return 0;
    int64_t cg = g % gc;
    s->j0 = cg * col_blocks / gc;
    s->j1 = (cg + 1) * col_blocks / gc;
    s->rg = (int)(g / gc);
    s->gr = gr;
    s->cg = (int)cg;
    s->g = g;
    return 1;
}

void agmm_share_tiles(const agmm_worker_share_t *s, int64_t tiles, int64_t *t0,
                      int64_t *t1)
{
    *t0 = s->rg * tiles / s->gr;
    *t1 = (s->rg + 1) * tiles / s->gr;
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
