/* The plan's GEMM engine: one prepared weight per column group of GEMM
 * workers and weight (a group whose columns span two weights has one
 * segment of each; with one weight, one per group), each prepared for
 * every row count the schedules call, and each worker's scratch. Everything here runs on the plan owner's thread at
 * plan creation and set_weight, except agmm_plan_gemm (every GEMM worker,
 * concurrently: the engine's run is thread-safe given per-worker scratch).
 *
 * The row counts (so that no engine primitive is created inside a round):
 *   - fused, per tile (engines with cheap tile calls): tile_m and each
 *     shard's last partial tile;
 *   - baseline and monolithic: one call per row group over its whole tiles
 *     (schedule.c), i.e. at most gemm_workers counts.
 * An engine without cheap tile calls (OpenBLAS) takes any row count, and
 * the fused schedule coalesces arrived tiles for it. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ops/common/plan_internal.h"
#include "ops/common/schedule.h"

static void add_count(int64_t *rows, int *n, int64_t m)
{
    if (m <= 0) return;
    for (int i = 0; i < *n; i++)
        if (rows[i] == m) return;
    rows[(*n)++] = m;
}

/* The row counts of every call the schedules make on this plan at its
 * most rows (at most 2 * nranks + gemm_workers + 1 values). A round with
 * fewer rows (agmm_run_args_t.m_rows) may call others: the engine makes
 * them on demand, a bounded number of times (gemm_onednn.c). */
static int row_counts(const agmm_plan_t *p, int64_t *rows)
{
    int n = 0;
    int64_t tm = p->desc.tile_m;
    for (int src = 0; src < p->nranks; src++) {
        if (p->tiles_max[src] == 0) continue;
        if (p->m_max[src] >= tm) add_count(rows, &n, tm);
        add_count(rows, &n, p->m_max[src] - (p->tiles_max[src] - 1) * tm);
    }
    int G = p->desc.gemm_workers;
    for (int g = 0; g < G; g++) {
        agmm_worker_share_t s;
        if (!agmm_worker_share(g, G, p->col_blocks, &s)) continue;
        int64_t g0, g1;
        agmm_share_tiles(&s, p->total_tiles, &g0, &g1);
        add_count(rows, &n,
                  agmm_global_tile_row(p, g1) - agmm_global_tile_row(p, g0));
    }
    return n;
}

/* gemm-rs (rsperf11): the fused schedule also calls each worker's share of
 * each owner's block in one call (gemm_rs/fused.c): at most nranks * G
 * more counts, added after row_counts' own. */
static int rs_block_counts(const agmm_plan_t *p, int64_t *rows, int n)
{
    if (p->desc.op != AGMM_OP_GEMM_RS) return n;
    int G = p->desc.gemm_workers;
    for (int q = 0; q < p->nranks; q++)
        for (int g = 0; g < G; g++) {
            agmm_worker_share_t s;
            if (!agmm_worker_share(g, G, p->col_blocks, &s)) continue;
            int64_t t0, t1;
            agmm_share_tiles(&s, p->tiles[q], &t0, &t1);
            add_count(rows, &n,
                      agmm_global_tile_row(p, p->tile_base[q] + t1) -
                          agmm_global_tile_row(p, p->tile_base[q] + t0));
        }
    return n;
}

/* The segments of column group cg: blocks [b0, b1) of the weights side by
 * side (as agmm_worker_share makes them), cut at the weights' edges. Fills
 * seg (may be NULL: count only) and returns how many. */
static int group_segments(const agmm_plan_t *p, int cg, agmm_gemm_seg_t *seg)
{
    int64_t gc = p->ngroups, tn = p->desc.tile_n;
    int64_t b0 = cg * p->col_blocks / gc, b1 = (cg + 1) * p->col_blocks / gc;
    int n = 0;
    for (int i = 0; i < p->nw; i++) {
        int64_t j0 = AGMM_MAX(b0, p->blk_off[i]);
        int64_t j1 = AGMM_MIN(b1, p->blk_off[i + 1]);
        if (j0 >= j1) continue;
        if (seg) {
            seg[n].prep = NULL;
            seg[n].w = i;
            seg[n].j0 = j0;
            seg[n].j1 = j1;
            seg[n].c0 = (j0 - p->blk_off[i]) * tn;
            seg[n].c1 = AGMM_MIN((j1 - p->blk_off[i]) * tn, p->n_w[i]);
        }
        n++;
    }
    return n;
}

agmm_status_t agmm_plan_engine_init(agmm_plan_t *p)
{
    const agmm_plan_desc_t *d = &p->desc;
    p->engine = agmm_gemm_engine_get(d->gemm_engine);
    if (!p->engine) /* desc_check refused it already */
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: gemm engine %s is not "
                          "built in",
                          agmm_gemm_engine_name(d->gemm_engine));
    p->gemm_dtype = p->engine->input_dtype(d->dtype);
    p->native = p->gemm_dtype == d->dtype;
    p->gemm_esize = agmm_dtype_size(p->gemm_dtype);
    int G = d->gemm_workers;
    p->ngroups = (int)AGMM_MIN((int64_t)G, p->col_blocks);
    p->seg_off = agmm_alloc(sizeof *p->seg_off * (size_t)(p->ngroups + 1));
    p->scratch = agmm_alloc(sizeof *p->scratch * (size_t)G);
    int64_t *rows = agmm_alloc(sizeof *rows *
                               (size_t)(2 * p->nranks + G + 1 +
                                        p->nranks * G)); /* rs_block_counts */
    if (!p->seg_off || !p->scratch || !rows) {
        agmm_free(rows);
        return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    }
    for (int cg = 0; cg < p->ngroups; cg++)
        p->seg_off[cg + 1] = p->seg_off[cg] + group_segments(p, cg, NULL);
    p->seg = agmm_alloc(sizeof *p->seg * (size_t)AGMM_MAX(p->seg_off[p->ngroups], 1));
    if (!p->seg) {
        agmm_free(rows);
        return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    }
    for (int cg = 0; cg < p->ngroups; cg++)
        group_segments(p, cg, p->seg + p->seg_off[cg]);
    agmm_gemm_attr_t attr; /* plain: C = A @ W in fp32 */
    agmm_gemm_attr_init(&attr, p->gemm_dtype, d->dtype);
    agmm_gemm_shape_t shape = {.k = p->k_gemm,
                               .lda = p->k_gemm,
                               .rows = rows,
                               .nrows = rs_block_counts(
                                   p, rows, row_counts(p, rows))};
    size_t scratch = 0;
    agmm_status_t st = AGMM_OK;
    /* gemm-rs with an empty inner part: no engine call (the partial is
     * zero), nothing to prepare. */
    for (int i = 0; i < p->seg_off[p->ngroups] && st == AGMM_OK && p->k_gemm > 0;
         i++) {
        agmm_gemm_seg_t *sg = &p->seg[i];
        shape.ncols = sg->c1 - sg->c0;
        shape.ldw = shape.ldc = p->n_w[sg->w];
        st = p->engine->prepare(&shape, &attr, NULL, &sg->prep);
        if (st == AGMM_OK)
            scratch = AGMM_MAX(scratch, p->engine->scratch_bytes(sg->prep));
    }
    agmm_free(rows);
    for (int g = 0; g < G && st == AGMM_OK && scratch > 0; g++)
        if (!(p->scratch[g] = agmm_alloc(scratch)))
            st = agmm_error(AGMM_ERR_NO_MEMORY,
                            "plan: out of memory for GEMM scratch");
    return st;
}

agmm_status_t agmm_plan_engine_load_i(agmm_plan_t *p, int i, const void *w)
{
    size_t es = agmm_dtype_size(p->desc.dtype);
    for (int j = 0; p->seg && j < p->seg_off[p->ngroups] && p->k_gemm > 0; j++)
        if (p->seg[j].w == i) {
            agmm_gemm_operand_t op = {
                (const unsigned char *)w + (size_t)p->seg[j].c0 * es, NULL,
                NULL};
            AGMM_CHECK(p->engine->load(p->seg[j].prep, &op));
        }
    return AGMM_OK;
}

void agmm_plan_engine_free(agmm_plan_t *p)
{
    for (int j = 0; p->seg && p->seg_off && j < p->seg_off[p->ngroups]; j++)
        if (p->seg[j].prep) p->engine->destroy(p->seg[j].prep);
    for (int g = 0; p->scratch && g < p->desc.gemm_workers; g++)
        agmm_free(p->scratch[g]);
    agmm_free(p->seg);
    agmm_free(p->seg_off);
    agmm_free(p->scratch);
    p->seg = NULL;
    p->seg_off = NULL;
    p->scratch = NULL;
}

agmm_status_t agmm_plan_gemm_all(agmm_plan_t *p, const agmm_worker_share_t *s,
                                 int64_t r0, int64_t m, const void *a,
                                 float *const *c)
{
    if (m <= 0 || p->k_gemm == 0) return AGMM_OK;
    for (int j = p->seg_off[s->cg]; j < p->seg_off[s->cg + 1]; j++) {
        const agmm_gemm_seg_t *sg = &p->seg[j];
        int64_t ldc = p->n_w[sg->w];
        AGMM_CHECK(p->engine->run(sg->prep, m, a, NULL,
                                  c[sg->w] + (size_t)r0 * (size_t)ldc + sg->c0,
                                  p->scratch[s->g]));
    }
    return AGMM_OK;
}

agmm_status_t agmm_plan_gemm(agmm_plan_t *p, const agmm_worker_share_t *s,
                             int64_t r0, int64_t m, const void *a, float *c)
{
    return agmm_plan_gemm_all(p, s, r0, m, a, &c);
}

agmm_status_t agmm_plan_gemm_info(const agmm_plan_t *p, agmm_gemm_info_t *info)
{
    if (!p || !info)
        return agmm_error(AGMM_ERR_INVALID_ARG, "gemm_info: NULL argument");
    if (!agmm_plan_is_live(p))
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm_info: the plan was destroyed or never made");
    memset(info, 0, sizeof *info);
    info->engine = p->engine->kind;
    info->name = p->engine->name;
    info->version = p->engine->version();
    snprintf(info->impl, sizeof info->impl, "%s",
             p->ngroups > 0 && p->seg[0].prep ? p->engine->impl(p->seg[0].prep)
                                              : "");
    info->threads_per_call =
        p->engine->kind == AGMM_GEMM_ENGINE_OPENBLAS ? agmm_blas_threads() : 1;
    info->primitives_created = agmm_gemm_engine_created();
    return AGMM_OK;
}
