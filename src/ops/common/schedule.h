/* How a rank's GEMM work is split among its G workers (schedule.c).
 *
 * The output of one source rank's rows is a grid of work items:
 * (row tile, column block of tile_n). Workers form a gr x gc grid:
 * gc = min(G, column blocks) column groups, each a contiguous range of
 * column blocks, and gr = G / gc row groups, each a contiguous range of the
 * source's row tiles. Contiguous ranges let a worker cover a run of arrived
 * tiles and all its columns with one GEMM call. Workers beyond gr x gc have
 * no items (the CLI warns about them). */
#ifndef AGMM_OPS_SCHEDULE_H
#define AGMM_OPS_SCHEDULE_H

#include <stdint.h>

#include "agmm.h"

typedef struct agmm_worker_share {
    int64_t j0, j1; /* column blocks [j0, j1) */
    int rg, gr;     /* row group rg of gr */
    int cg;         /* column group (the plan's prepared weight prep[cg]) */
    int g;          /* the worker (its scratch) */
} agmm_worker_share_t;

/* The share of worker g of G over `col_blocks` column blocks. Returns 0 if
 * the worker has no items. */
int agmm_worker_share(int g, int G, int64_t col_blocks,
                      agmm_worker_share_t *share);

/* Tiles [*t0, *t1) of a source with `tiles` row tiles for row group rg/gr. */
void agmm_share_tiles(const agmm_worker_share_t *share, int64_t tiles,
                      int64_t *t0, int64_t *t1);

/* The i-th source rank rank `rank` computes (i = 0 is itself; then r+1,
 * r+2, ...: ranks start on different peers). */
static inline int agmm_source_order(int rank, int nranks, int i)
{
    return (rank + i) % nranks;
}

/* GEMM workers that get items for a plan with this many column blocks. */
int agmm_busy_gemm_workers(int G, int64_t col_blocks);

/* (schedule.c) Count the items (tiles [t0,t1) of src) x (column blocks
 * [j0,j1)). */
void agmm_plan_count_items(agmm_plan_t *p, int src, int64_t t0, int64_t t1,
                           int64_t j0, int64_t j1);

/* Test hook: how often item (global tile, block) was computed. */
uint32_t agmm_plan_item_count(const agmm_plan_t *p, int64_t global_tile,
                              int64_t col_block);

#endif
