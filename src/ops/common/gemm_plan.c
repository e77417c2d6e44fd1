/* The plan's GEMM engine: one prepared weight per column group of GEMM
 * workers and weight (a group whose columns span two weights has one
 * segment of each; with one weight, one per group), each prepared for
 * every row count the schedules call, and each worker's scratch (booked
 * with the plan's memory, plan_book.c, from the engine's estimate).
 * Everything here runs on the plan owner's thread at plan creation and
 * set_weight, except agmm_plan_gemm (every GEMM worker, concurrently: the
 * engine's run is thread-safe given per-worker scratch).
 *
 * The row counts (so that no engine primitive is created inside a round):
 *   - fused, per tile (engines with cheap tile calls): tile_m and each
 *     shard's last partial tile;
 *   - baseline and monolithic: one call per row group over its whole tiles
 *     (schedule.c), i.e. at most gemm_workers counts;
 *   - whatever else the operation's schedules call (its row_counts, op.h).
 * An engine without cheap tile calls (OpenBLAS) takes any row count, and
 * the fused schedule coalesces arrived tiles for it. */
#include <string.h>

#include "common/log.h"
#include "gemm/epilogue.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/plan.h"
#include "ops/common/schedule.h"

static void add_count(int64_t *rows, int *n, int64_t m)
{
    if (m <= 0) return;
    for (int i = 0; i < *n; i++)
        if (rows[i] == m) return;
    rows[(*n)++] = m;
}

/* The row counts of every call the schedules make on this plan at its
 * most rows (at most 2 * nranks + gemm_workers + 1 values, plus the
 * operation's own). A round with fewer rows (agmm_run_args_t.m_rows) may
 * call others: the engine makes them on demand, a bounded number of times
 * (gemm/onednn/prep.c). */
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
    if (p->op->row_counts) n = p->op->row_counts(p, rows, n);
    return n;
}

/* The row counts, in a buffer the caller frees (NULL: out of memory).
 * With a gated weight, also each count's remainder of tile_m: a gated
 * segment's call of m rows runs as tile_m-row chunks (gemm_pass). */
static int64_t *all_row_counts(const agmm_plan_t *p, int *n)
{
    int P = p->nranks, G = p->desc.gemm_workers;
    int most = 2 * P + G + 1 + P * G;
    int64_t *rows = agmm_alloc(sizeof *rows * (size_t)(2 * most));
    if (!rows) return NULL;
    *n = row_counts(p, rows);
    for (int i = 0, n0 = *n; p->glu && i < n0; i++)
        add_count(rows, n, rows[i] % p->desc.tile_m);
    return rows;
}

/* Rows per call of a pass segment: gated, tile_m (its fp32 scratch one
 * tile of gate and up rows, never [rows, 2i]); else the plan's pass_rows. */
static int64_t pass_step(const agmm_plan_t *p, int glu, int64_t m)
{
    if (glu) return AGMM_MIN(p->desc.tile_m, p->pass_rows);
    return p->pass_rows > 0 ? p->pass_rows : m; /* > 0 when booked */
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
            seg[n].c1 =
                AGMM_MIN((j1 - p->blk_off[i]) * tn, agmm_plan_out_cols(p, i));
        }
        n++;
    }
    return n;
}

int agmm_plan_segments(const agmm_plan_t *p, agmm_gemm_seg_t *seg, int *seg_off)
{
    int n = 0;
    for (int cg = 0; cg < p->ngroups; cg++) {
        if (seg_off) seg_off[cg] = n;
        n += group_segments(p, cg, seg ? seg + n : NULL);
    }
    if (seg_off) seg_off[p->ngroups] = n;
    return n;
}

/* Is segment sg's weight gated (its columns of C pair W's gate and up
 * columns: plan.h)? */
static int seg_glu(const agmm_plan_t *p, const agmm_gemm_seg_t *sg)
{
    return p->glu >> sg->w & 1u;
}

/* What segment sg is prepared for: its shape, and the attributes of its
 * plain call (A in the engine's input dtype, W in the user's, C fp32) or,
 * with `acc`, of its accumulating call (C += A @ W). */
static void seg_shape(const agmm_plan_t *p, const agmm_gemm_seg_t *sg,
                      const int64_t *rows, int nrows, agmm_gemm_shape_t *shape)
{
    memset(shape, 0, sizeof *shape);
    shape->k = p->k_gemm;
    shape->lda = (int64_t)(agmm_plan_gemm_row_bytes(p) / p->gemm_esize);
    /* INT8 scales: after each row's values (row_bytes apart), or apart. */
    shape->ld_a_scale = p->scale_off ? (int64_t)(p->row_bytes / 4) : 1;
    shape->ncols = sg->c1 - sg->c0;
    shape->ldw = shape->ldc = p->n_w[sg->w];
    if (seg_glu(p, sg)) { /* gate and up columns, packed side by side */
        shape->ncols *= 2;
        shape->ldw = shape->ncols;
        shape->ldc = agmm_plan_out_cols(p, sg->w);
    }
    shape->rows = rows;
    shape->nrows = nrows;
}

/* Does the operation's GEMM call carry the plan's epilogue (op.h)? */
static int epi_in_gemm(const agmm_plan_t *p)
{
    return p->epilogue && p->op->epilogue_in_gemm;
}

/* Weight w's epilogue attributes on attr (bias, act, c_dtype). */
static void epi_attr(const agmm_plan_t *p, int w, agmm_gemm_attr_t *attr)
{
    attr->bias = p->desc.bias != 0;
    attr->act = p->act[w];
    attr->c_dtype = p->desc.out_dtype;
}

/* epi: with the plan's epilogue (a segment without a pass, of an
 * operation whose calls carry it). */
static void seg_attr(const agmm_plan_t *p, const agmm_gemm_seg_t *sg, int acc,
                     int epi, agmm_gemm_attr_t *attr)
{
    agmm_gemm_attr_init(attr, p->gemm_dtype, p->desc.dtype);
    attr->accumulate = acc;
    attr->a_scale = attr->w_scale = p->int8; /* W8A8: both always */
    attr->s8_as_u8 = p->int8 && p->int8_u8;
    agmm_wdtype_t wd = p->desc.weight_dtype; /* quantized: the wq engine */
    attr->wq_bits = wd == AGMM_WDTYPE_INT8 ? 8 : wd == AGMM_WDTYPE_INT4 ? 4 : 0;
    attr->wq_group = attr->wq_bits ? p->desc.group_size : 0;
    attr->wq_asym = attr->wq_bits && p->desc.weight_zero_point;
    attr->wq_a8 = attr->wq_bits && p->desc.a_quant == AGMM_AQUANT_INT8;
    if (epi) epi_attr(p, sg->w, attr);
}

/* The shape a pass segment's plain call is prepared for: C dense (its
 * columns only: a gated one's gate then up columns) in the worker's pass
 * buffer. */
static void pass_shape(const agmm_gemm_seg_t *sg, agmm_gemm_shape_t *shape)
{
    if (sg->pass) shape->ldc = shape->ncols;
}

/* An empty inner part makes no engine call (the partial is zero), so
 * nothing is prepared then. */
static int has_gemm(const agmm_plan_t *p)
{
    return p->k_gemm > 0;
}

static int nsegs(const agmm_plan_t *p)
{
    return has_gemm(p) ? p->seg_off[p->ngroups] : 0;
}

agmm_status_t agmm_plan_engine_estimate(const agmm_plan_t *p, uint64_t *weights,
                                        uint64_t *scratch)
{
    *weights = *scratch = 0;
    if (nsegs(p) == 0) return AGMM_OK;
    int nrows = 0;
    int64_t *rows = all_row_counts(p, &nrows);
    if (!rows) return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    agmm_status_t st = AGMM_OK;
    /* The estimate decides each segment's way (the booking, on the plan
     * that prepares, comes first): the epilogue in the engine's call, or,
     * where the engine refuses it (quietly: a refusal is an answer here),
     * the plain call and a pass. */
    agmm_plan_t *w = (agmm_plan_t *)p; /* the segments' flags to fill */
    int64_t pass_cols = 0, glu_cols = 0, most = 0;
    for (int i = 0; i < nrows; i++)
        most = AGMM_MAX(most, rows[i]);
    for (int i = 0; i < nsegs(p) && st == AGMM_OK; i++) {
        agmm_gemm_shape_t shape;
        agmm_gemm_seg_t *sg = &w->seg[i];
        seg_shape(p, sg, rows, nrows, &shape);
        sg->pass = 0;
        if (seg_glu(p, sg)) { /* no engine pairs the columns: always a pass */
            sg->pass = 1;
            glu_cols = AGMM_MAX(glu_cols, shape.ncols);
        } else if (epi_in_gemm(p)) {
            agmm_gemm_attr_t attr;
            seg_attr(p, sg, 0, 1, &attr);
            uint64_t wb = 0, sc = 0;
            int muted = agmm_log_muted(); /* a query may have muted it */
            agmm_log_mute(1);
            agmm_status_t fit = p->engine->estimate(&shape, &attr, 0, &wb, &sc);
            agmm_log_mute(muted);
            sg->pass = fit == AGMM_ERR_UNSUPPORTED;
            if (sg->pass) pass_cols = AGMM_MAX(pass_cols, sg->c1 - sg->c0);
        }
        pass_shape(sg, &shape);
        for (int acc = 0; acc <= p->op->accumulates && st == AGMM_OK; acc++) {
            agmm_gemm_attr_t attr;
            seg_attr(p, sg, acc, epi_in_gemm(p) && !sg->pass, &attr);
            uint64_t wb = 0, sc = 0;
            st = p->engine->estimate(&shape, &attr, acc, &wb, &sc);
            *weights += wb;
            *scratch = AGMM_MAX(*scratch, sc);
        }
    }
    agmm_free(rows);
    /* Each worker's share starts on a cache line: the engine's buffers in
     * it (int32 sums) are aligned, and no two workers share a line; the
     * pass buffer (fp32 rows of the widest pass segment) follows them. */
    size_t cl = AGMM_CACHE_LINE;
    *scratch = (*scratch + cl - 1) / cl * cl;
    w->pass_off = (size_t)*scratch;
    w->pass_rows = pass_cols > 0 || glu_cols > 0 ? most : 0;
    int64_t glu_rows = AGMM_MIN(most, p->desc.tile_m);
    uint64_t pass = AGMM_MAX((uint64_t)most * (uint64_t)pass_cols,
                             (uint64_t)glu_rows * (uint64_t)glu_cols) *
                    4;
    *scratch += (pass + cl - 1) / cl * cl;
    return st;
}

agmm_status_t agmm_plan_engine_prepare(agmm_plan_t *p)
{
    int nrows = 0, G = p->desc.gemm_workers;
    int64_t *rows = all_row_counts(p, &nrows);
    if (!rows) return agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    agmm_status_t st = AGMM_OK;
    size_t scratch = 0;
    for (int i = 0; i < nsegs(p) && st == AGMM_OK; i++) {
        agmm_gemm_seg_t *sg = &p->seg[i];
        agmm_gemm_shape_t shape;
        agmm_gemm_attr_t attr;
        seg_shape(p, sg, rows, nrows, &shape);
        pass_shape(sg, &shape);
        int epi = epi_in_gemm(p) && !sg->pass;
        seg_attr(p, sg, 0, epi, &attr);
        st = p->engine->prepare(&shape, &attr, NULL, &sg->prep);
        if (st == AGMM_OK && p->op->accumulates) { /* same weight, C += */
            seg_attr(p, sg, 1, epi, &attr);
            st = p->engine->prepare(&shape, &attr, sg->prep, &sg->acc);
        }
        for (int j = 0; j < 2 && st == AGMM_OK; j++) {
            agmm_gemm_prep_t *pr = j ? sg->acc : sg->prep;
            if (pr) scratch = AGMM_MAX(scratch, p->engine->scratch_bytes(pr));
        }
    }
    agmm_free(rows);
    if (st == AGMM_OK && scratch > p->scratch_bytes)
        return agmm_error(AGMM_ERR_SYSTEM,
                          "plan: the %s engine needs %zu bytes of scratch per "
                          "worker, %zu were booked from its estimate",
                          p->engine->name, scratch, p->scratch_bytes);
    for (int g = 1; g < G; g++) /* the booked block, one share each */
        p->scratch[g] =
            (unsigned char *)p->scratch[0] + (size_t)g * p->scratch_bytes;
    return st;
}

uint64_t agmm_plan_engine_bytes(const agmm_plan_t *p)
{
    uint64_t sum = 0;
    for (int j = 0; j < nsegs(p); j++) {
        if (p->seg[j].prep) sum += p->engine->weight_bytes(p->seg[j].prep);
        if (p->seg[j].acc) sum += p->engine->weight_bytes(p->seg[j].acc);
    }
    return sum;
}

void agmm_plan_engine_free(agmm_plan_t *p)
{
    for (int j = 0; j < nsegs(p); j++) { /* a sharing prep before its base */
        if (p->seg[j].acc) p->engine->destroy(p->seg[j].acc);
        if (p->seg[j].prep) p->engine->destroy(p->seg[j].prep);
    }
}

/* A pass segment's m rows: the plain call into the worker's pass buffer
 * (pass_step rows at a time), then the epilogue into c (stride ldc). */
static agmm_status_t gemm_pass(agmm_plan_t *p, const agmm_gemm_seg_t *sg, int g,
                               int64_t m, const void *a, const float *a_scale,
                               unsigned char *c, int64_t ldc)
{
    agmm_gemm_attr_t attr;
    agmm_gemm_attr_init(&attr, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
    epi_attr(p, sg->w, &attr);
    int64_t nc = sg->c1 - sg->c0;
    int glu = seg_glu(p, sg);
    int64_t ldb = glu ? 2 * nc : nc, h = agmm_plan_out_cols(p, sg->w);
    size_t lda = agmm_plan_gemm_row_bytes(p);
    size_t lds = p->scale_off ? p->row_bytes / 4 : 1; /* seg_shape's */
    float *buf =
        (float *)(void *)((unsigned char *)p->scratch[g] + p->pass_off);
    const float *bias =
        p->bias ? p->bias + agmm_plan_col_off(p, sg->w) + sg->c0 : NULL;
    int64_t step = pass_step(p, glu, m);
    for (int64_t i = 0; i < m; i += step) {
        int64_t mm = AGMM_MIN(step, m - i);
        AGMM_CHECK(p->engine->run(
            sg->prep, mm, (const unsigned char *)a + (size_t)i * lda,
            a_scale ? a_scale + (size_t)i * lds : NULL, buf, p->scratch[g]));
        unsigned char *ci = c + (size_t)i * (size_t)ldc * p->out_esize;
        if (glu) /* the bias: [gate's h | up's h] */
            agmm_gemm_epilogue_glu(&attr, mm, nc, buf, ldb, bias,
                                   bias ? bias + h : NULL, ci, ldc);
        else
            agmm_gemm_epilogue(&attr, mm, nc, buf, nc, NULL, 0, NULL, bias, ci,
                               ldc);
    }
    return AGMM_OK;
}

/* C rows [r0, r0 + m) over share s's columns: with the plain prepared
 * calls, or with the accumulating ones (acc). C's elements: out_dtype
 * when the calls carry the epilogue, else fp32. */
static agmm_status_t gemm_segs(agmm_plan_t *p, const agmm_worker_share_t *s,
                               int64_t r0, int64_t m, const void *a,
                               const float *a_scale, void *const *c, int acc)
{
    if (m <= 0 || !has_gemm(p)) return AGMM_OK;
    size_t es = epi_in_gemm(p) ? p->out_esize : sizeof(float);
    for (int j = p->seg_off[s->cg]; j < p->seg_off[s->cg + 1]; j++) {
        const agmm_gemm_seg_t *sg = &p->seg[j];
        int64_t ldc = agmm_plan_out_cols(p, sg->w);
        unsigned char *cw = (unsigned char *)c[sg->w] +
                            ((size_t)r0 * (size_t)ldc + (size_t)sg->c0) * es;
        if (sg->pass && !acc)
            AGMM_CHECK(gemm_pass(p, sg, s->g, m, a, a_scale, cw, ldc));
        else
            AGMM_CHECK(p->engine->run(acc ? sg->acc : sg->prep, m, a, a_scale,
                                      cw, p->scratch[s->g]));
    }
    return AGMM_OK;
}

agmm_status_t agmm_plan_gemm_all(agmm_plan_t *p, const agmm_worker_share_t *s,
                                 int64_t r0, int64_t m, const void *a,
                                 const float *a_scale, void *const *c)
{
    return gemm_segs(p, s, r0, m, a, a_scale, c, 0);
}

agmm_status_t agmm_plan_gemm(agmm_plan_t *p, const agmm_worker_share_t *s,
                             int64_t r0, int64_t m, const void *a,
                             const float *a_scale, float *c)
{
    void *cs[1] = {c};
    return gemm_segs(p, s, r0, m, a, a_scale, cs, 0);
}

agmm_status_t agmm_plan_gemm_acc(agmm_plan_t *p, const agmm_worker_share_t *s,
                                 int64_t r0, int64_t m, const void *a,
                                 const float *a_scale, float *c)
{
    void *cs[1] = {c};
    return gemm_segs(p, s, r0, m, a, a_scale, cs, 1);
}
