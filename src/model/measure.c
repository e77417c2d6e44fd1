/* agmm_model_measure: this host's rates for the model (agmm_model.h), timed
 * the way the GEMM path choice times its candidates (ops/common/path.c):
 * the plan's engine, dtype and path, a prepared weight, zeros as inputs (a
 * GEMM's speed does not depend on the values but for subnormals, which
 * zeros are not), one untimed call, then the best of a few timed ones.
 *
 *   GEMM   the row counts the plan's rounds call (1, a tile, each shard's
 *          last partial tile, each shard, all M rows, powers of two in
 *          between; at most AGMM_MODEL_MAX_RATES) over one GEMM worker's
 *          columns (its share of the column blocks), the large ones over
 *          256 of them when the budget or memory is short (a large call is
 *          compute bound: its rate hardly depends on the columns); a count
 *          that does not fit the budget is not timed (sweep());
 *   call   one call of 1 row x 16 columns x 16: the engine's fixed cost,
 *          subtracted from every timed call before its rate is taken;
 *   copy   memcpy of one tile the round puts (tile_bytes()) from the
 *          putter's buffer into a window the owner reads, and
 *   reduce c[i] += u[i] in fp32 over that tile just copied in (gemm-rs's
 *          sum), both timed with the putter and the owner on two CPUs
 *          when this thread may use two (measure_mem.c: a tile another
 *          core wrote, as in a round on shared memory);
 *   convert agmm_convert_to_f32 of a tile, per byte of 16-bit input, when
 *          the path converts (else 0).
 * About 85% of budget_s goes to the GEMM (path choice, call cost, sweep),
 * the rest to the memory rates. The GEMM runs on the calling thread, the
 * copy and the sum on two threads it starts and joins; no world, no
 * ranks, no shared memory, no process. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/dram.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
#include "model/measure.h"
#include "model/model.h"
#include "ops/common/path_probe.h"

/* THIN_COLS: the columns large calls are timed over (as the path choice's
 * probe: 256). */
enum { MAX_TIMED = 5, MIN_COLS = 64, THIN_COLS = 256 };
/* Largest A, C or weight buffer a measurement allocates; the wide
 * weight's calls keep their A and C within WIDE_CAP (larger ones go to the
 * thin weight). */
#define BUF_CAP  ((double)(64u << 20))
#define WIDE_CAP ((double)(16u << 20))

/* ------------------------------------------------------------ a GEMM */

typedef struct gemm_bench {
    const agmm_gemm_engine_t *e;
    agmm_gemm_attr_t attr;
    int64_t k, cols, max_rows;
    agmm_gemm_prep_t *prep;
    void *w, *a, *c, *scratch;
    float *ones;
    float *wq_scales;  /* a quantized weight's group scales (ones) */
    uint8_t *wq_zeros; /* and its zero points (attr.wq_asym; zeros) */
} gemm_bench_t;

static void bench_close(gemm_bench_t *b)
{
    if (b->prep) b->e->destroy(b->prep);
    agmm_free(b->scratch);
    agmm_free(b->w);
    agmm_free(b->a);
    agmm_free(b->c);
    agmm_free(b->ones);
    agmm_free(b->wq_scales);
    agmm_free(b->wq_zeros);
    memset(b, 0, sizeof *b);
}

/* A weight slice of k x cols prepared for the row counts rows[0..n-1]. */
static agmm_status_t bench_open(gemm_bench_t *b, const agmm_gemm_engine_t *e,
                                const agmm_gemm_attr_t *attr, int64_t k,
                                int64_t cols, const int64_t *rows, int n)
{
    memset(b, 0, sizeof *b);
    b->e = e;
    b->attr = *attr;
    b->k = k;
    b->cols = cols;
    for (int i = 0; i < n; i++)
        b->max_rows = AGMM_MAX(b->max_rows, rows[i]);
    int64_t most = AGMM_MAX(b->max_rows, cols);
    agmm_gemm_shape_t shape = {.k = k,
                               .ncols = cols,
                               .ldw = cols,
                               .lda = k,
                               .ldc = cols,
                               .rows = rows,
                               .nrows = n};
    b->ones = agmm_alloc(sizeof(float) * (size_t)most);
    b->w = agmm_alloc((size_t)(k * cols) * agmm_dtype_size(attr->w_dtype));
    b->a =
        agmm_alloc((size_t)(b->max_rows * k) * agmm_dtype_size(attr->a_dtype));
    b->c = agmm_alloc((size_t)(b->max_rows * cols) * sizeof(float));
    /* a quantized weight's plain layout: q in w (at most a byte per
     * element, within w's), a scale (and a zero point) per group */
    int64_t groups =
        attr->wq_bits ? AGMM_DIV_UP(k, attr->wq_group > 0 ? attr->wq_group : k)
                      : 0;
    if (groups) {
        b->wq_scales = agmm_alloc(sizeof(float) * (size_t)(groups * cols));
        if (attr->wq_asym) b->wq_zeros = agmm_alloc((size_t)(groups * cols));
    }
    if (!b->ones || !b->w || !b->a || !b->c || (groups && !b->wq_scales) ||
        (groups && attr->wq_asym && !b->wq_zeros)) {
        bench_close(b);
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "model: out of memory for the GEMM measurement");
    }
    for (int64_t i = 0; i < most; i++)
        b->ones[i] = 1.0f;
    for (int64_t i = 0; i < groups * cols; i++)
        b->wq_scales[i] = 1.0f;
    agmm_status_t st = e->prepare(&shape, attr, NULL, &b->prep);
    agmm_gemm_operand_t op = {.w = b->w,
                              .bias = NULL,
                              .w_scale = attr->w_scale ? b->ones : NULL,
                              .wq_scales = b->wq_scales,
                              .wq_zeros = b->wq_zeros};
    if (st == AGMM_OK) st = e->load(b->prep, &op);
    if (st == AGMM_OK && e->scratch_bytes(b->prep) > 0 &&
        !(b->scratch = agmm_alloc(e->scratch_bytes(b->prep))))
        st = agmm_error(AGMM_ERR_NO_MEMORY, "model: out of memory");
    if (st != AGMM_OK) bench_close(b);
    return st;
}

/* The best of up to MAX_TIMED calls of `rows` rows after an untimed one;
 * after the first timed call, none starts past `deadline`. Seconds. */
static agmm_status_t bench_time(gemm_bench_t *b, int64_t rows, double deadline,
                                double *best)
{
    *best = INFINITY;
    for (int i = 0; i <= MAX_TIMED; i++) {
        if (i > 1 && agmm_now() > deadline) break;
        double t0 = agmm_now();
        AGMM_CHECK(b->e->run(b->prep, rows, b->a,
                             b->attr.a_scale ? b->ones : NULL, b->c,
                             b->scratch));
        double s = agmm_now() - t0;
        if (i > 0 && s < *best) *best = s;
    }
    return AGMM_OK;
}

static double flops(int64_t rows, int64_t k, int64_t cols)
{
    return 2.0 * (double)rows * (double)k * (double)cols;
}

/* ------------------------------------------------------------ the plan */

/* The inner dimension of the slowest rank's calls: k, or gemm-rs/ar's
 * largest part of it. */
static int64_t gemm_k(const agmm_plan_desc_t *d)
{
    int64_t most = 0, k0, kp;
    for (int r = 0; r < d->nranks; r++)
        if (agmm_plan_desc_k_part(d, r, &k0, &kp) == AGMM_OK)
            most = AGMM_MAX(most, kp);
    return AGMM_MAX(most, 1);
}

/* One GEMM worker's columns: its share of the column blocks of every
 * weight side by side (the most any worker has). */
static int64_t worker_cols(const agmm_plan_desc_t *d)
{
    int64_t one = d->n, tn = d->tile_n, blocks = 0, total = 0;
    const int64_t *n = d->n_list && d->n_weights >= 1 ? d->n_list : &one;
    int nw = d->n_list && d->n_weights >= 1 ? d->n_weights : 1;
    for (int i = 0; i < nw; i++) {
        blocks += AGMM_DIV_UP(n[i], tn);
        total += n[i];
    }
    int64_t groups = AGMM_MIN(blocks, (int64_t)AGMM_MAX(d->gemm_workers, 1));
    return AGMM_MIN(AGMM_DIV_UP(blocks, groups) * tn, total);
}

/* The attributes of d's calls on a path, as the plan's (its quantized
 * weight's bits, group and zero points too: ops/common/gemm_plan.c). */
static void path_attr(agmm_gemm_attr_t *attr, const agmm_plan_desc_t *d,
                      int f32)
{
    agmm_dtype_t dt = d->dtype;
    int int8 = dt == AGMM_DTYPE_INT8;
    agmm_gemm_attr_init(attr, f32 && !int8 ? AGMM_DTYPE_FP32 : dt, dt);
    attr->a_scale = attr->w_scale = int8; /* unit scales, s8 x s8 */
    agmm_wdtype_t wd = d->weight_dtype;
    attr->wq_bits = wd == AGMM_WDTYPE_INT8 ? 8 : wd == AGMM_WDTYPE_INT4 ? 4 : 0;
    attr->wq_group = attr->wq_bits ? d->group_size : 0;
    attr->wq_asym = attr->wq_bits && d->weight_zero_point;
    attr->wq_a8 = attr->wq_bits && d->a_quant == AGMM_AQUANT_INT8;
}

/* Seconds to convert `rows` rows of k 16-bit values to fp32 (best of a
 * few). */
static agmm_status_t convert_time(agmm_dtype_t dt, int64_t rows, int64_t k,
                                  double slice, double *best)
{
    size_t count = (size_t)(rows * k);
    void *src = agmm_alloc(count * 2);
    float *dst = agmm_alloc(count * sizeof(float));
    if (!src || !dst) {
        agmm_free(src);
        agmm_free(dst);
        return agmm_error(AGMM_ERR_NO_MEMORY, "model: out of memory");
    }
    *best = INFINITY;
    double end = agmm_now() + slice;
    for (int i = 0; i < 3 || (i < 50 && agmm_now() < end); i++) {
        double t0 = agmm_now();
        agmm_convert_to_f32(dt, src, dst, count);
        double s = agmm_now() - t0;
        if (i > 0 && s < *best) *best = s;
    }
    agmm_free(src);
    agmm_free(dst);
    return AGMM_OK;
}

/* AUTO with a 16-bit dtype the engine reads natively: the path a plan
 * would pick, timing both at a tile's rows over (up to) 256 columns, 512
 * for 32 rows or fewer, plus the f32 path's conversion. */
static agmm_status_t choose_path(const agmm_gemm_engine_t *e,
                                 const agmm_plan_desc_t *d, int64_t k,
                                 int64_t cols, double deadline, int *f32)
{
    int64_t rows = d->tile_m, mmax = 0;
    for (int r = 0; r < d->nranks; r++)
        mmax = AGMM_MAX(mmax, d->m_local[r]);
    rows = AGMM_MIN(rows, AGMM_MAX(mmax, 1));
    cols = AGMM_MIN(cols, rows <= 32 ? 512 : 256);
    double t[2] = {0, 0};
    for (int p = 0; p < 2; p++) {
        agmm_gemm_attr_t attr;
        gemm_bench_t b;
        path_attr(&attr, d, p);
        AGMM_CHECK(bench_open(&b, e, &attr, k, cols, &rows, 1));
        agmm_status_t st = bench_time(&b, rows, deadline, &t[p]);
        bench_close(&b);
        AGMM_CHECK(st);
    }
    double conv = 0;
    AGMM_CHECK(convert_time(d->dtype, rows, k, 0.0, &conv));
    *f32 = t[1] + conv < t[0]; /* a tie: native, as the plan */
    return AGMM_OK;
}

/* ------------------------------------------------------------ the sweep */

/* One count timed on b: the best call less the engine's fixed cost (at
 * most half of it), as a rate in flop/s. */
static agmm_status_t time_rate(gemm_bench_t *b, int64_t rows, double call_s,
                               double until, double *rate)
{
    double s = 0;
    AGMM_CHECK(bench_time(b, rows, until, &s));
    double work = s - call_s > 0.5 * s ? s - call_s : 0.5 * s;
    *rate = flops(rows, b->k, b->cols) / work;
    return AGMM_OK;
}

/* Times rows[0..n-1] (ascending) into m->rates. Two prepared weights: the
 * worker's `cols` columns, and (when wider) a thin one of 256. The
 * smallest count on the wide one gives the weight's streaming time t1,
 * the largest on the thin one the compute rate R; a count is then timed on
 * the wide weight when two calls of the predicted t1 + flops / R fit its
 * share of the time left, else on the thin one when they fit there (a
 * large call is compute bound: its rate hardly depends on the columns),
 * else not at all (the model interpolates, or clamps to the largest
 * timed). */
static agmm_status_t sweep(agmm_model_machine_t *m, const agmm_gemm_engine_t *e,
                           const agmm_gemm_attr_t *attr, int64_t k,
                           int64_t cols, const int64_t *rows, int n,
                           double deadline, agmm_model_measure_info_t *info)
{
    double call_s = m->call_us * 1e-6, rate[AGMM_MODEL_MAX_RATES] = {0};
    int64_t thin = AGMM_MIN(cols, (int64_t)THIN_COLS);
    /* The counts whose A and C fit each (one weight when it is thin). */
    double wide_cap = thin == cols ? BUF_CAP : WIDE_CAP;
    int nw = 0, nt = 0;
    while (nw < n &&
           (double)rows[nw] * (double)AGMM_MAX(cols, k) * 4 <= wide_cap)
        nw++;
    while (thin < cols && nt < n &&
           (double)rows[nt] * (double)thin * 4 <= BUF_CAP)
        nt++;
    gemm_bench_t wide = {0}, narrow = {0};
    agmm_status_t st = AGMM_OK;
    double t1 = 0, peak = 0;
    if (nw > 0) st = bench_open(&wide, e, attr, k, cols, rows, nw);
    if (st == AGMM_OK && nw > 0) {
        st = time_rate(&wide, rows[0], call_s,
                       agmm_now() + (deadline - agmm_now()) / n, &rate[0]);
        t1 = flops(rows[0], k, cols) / rate[0] + call_s;
        peak = rate[0];
    }
    if (st == AGMM_OK && nt > 0)
        st = bench_open(&narrow, e, attr, k, thin, rows, nt);
    if (st == AGMM_OK && nt > 0 && (nw == 0 || nt - 1 > 0)) {
        st = time_rate(&narrow, rows[nt - 1], call_s,
                       agmm_now() + (deadline - agmm_now()) / n, &rate[nt - 1]);
        peak = AGMM_MAX(peak, rate[nt - 1]);
    }
    for (int i = 0; i < n && st == AGMM_OK; i++) {
        if (rate[i] > 0) continue; /* timed above */
        double now = agmm_now(), share = (deadline - now) / (n - i);
        double wide_s = t1 + flops(rows[i], k, cols) / peak;
        double thin_s =
            t1 * (double)thin / (double)cols + flops(rows[i], k, thin) / peak;
        if (i < nw && peak > 0 && 2 * wide_s <= share)
            st = time_rate(&wide, rows[i], call_s, now + share, &rate[i]);
        else if (i < nt && peak > 0 && 2 * thin_s <= share)
            st = time_rate(&narrow, rows[i], call_s, now + share, &rate[i]);
    }
    if (nw > 0 && wide.prep)
        snprintf(info->impl, sizeof info->impl, "%s", e->impl(wide.prep));
    bench_close(&wide);
    bench_close(&narrow);
    AGMM_CHECK(st);
    m->n_rates = 0;
    info->min_cols = cols;
    for (int i = 0; i < n; i++) {
        if (!(rate[i] > 0)) {
            info->skipped++;
            continue;
        }
        m->rates[m->n_rates].rows = rows[i];
        m->rates[m->n_rates].gflops = rate[i] * 1e-9;
        m->n_rates++;
        if (i >= nw || (i > 0 && nt > 0 && i == nt - 1)) info->min_cols = thin;
    }
    return AGMM_OK;
}

/* The engine's fixed cost of a call: 1 row x 16 columns x 16 (a
 * quantized weight: x its group, at least 16). */
static agmm_status_t call_cost(const agmm_gemm_engine_t *e,
                               const agmm_gemm_attr_t *attr, double *us)
{
    int64_t one = 1, k = AGMM_MAX((int64_t)16, attr->wq_group);
    gemm_bench_t b;
    AGMM_CHECK(bench_open(&b, e, attr, k, 16, &one, 1));
    double s = 0;
    agmm_status_t st = bench_time(&b, 1, INFINITY, &s);
    bench_close(&b);
    *us = s * 1e6;
    return st;
}

/* ------------------------------------------------------------ memory */

/* The bytes the copy and reduce rates are timed over: one tile the round
 * puts, gemm-rs/ar's fp32 partial (tile_m x n x 4: what the owner sums,
 * element-wise, a tile at a time) or ag-gemm's rows of A (tile_m x k);
 * at least MEM_MIN (a smaller tile is one of many the round moves back
 * to back; a lone few KiB would time the clock and the handshake) and at
 * most MEM_CAP (three such buffers: measure_mem.c). */
#define MEM_MIN ((double)(1u << 20))
#define MEM_CAP ((double)(16u << 20))
static size_t tile_bytes(const agmm_plan_desc_t *d)
{
    int64_t n = d->n;
    if (d->n_list && d->n_weights >= 1) {
        n = 0;
        for (int i = 0; i < d->n_weights; i++)
            n += d->n_list[i];
    }
    double b = d->op == AGMM_OP_AG_GEMM ? (double)d->tile_m * (double)d->k *
                                              (double)agmm_dtype_size(d->dtype)
                                        : (double)d->tile_m * (double)n * 4;
    b = AGMM_MIN(AGMM_MAX(b, MEM_MIN), MEM_CAP);
    return (size_t)b / 64 * 64;
}

/* ------------------------------------------------------------ engine */

/* Columns of a rank's weights side by side. */
static int64_t rank_cols(const agmm_plan_desc_t *d)
{
    if (!d->n_list || d->n_weights < 1) return d->n;
    int64_t n = 0;
    for (int i = 0; i < d->n_weights; i++)
        n += d->n_list[i];
    return n;
}

/* A bf16 plan on the AUTO engine whose calls are few rows races agmm's
 * bf16-weight kernel against the engine's native path, the weight
 * streamed from memory (ops/common/path_bf16w.c): the same measurement
 * (and its per-process cache) here, so the rates are the engine's a plan
 * of d runs. *e and *f32 become the bf16-weight kernel's (native) when it
 * is the faster. */
static agmm_status_t choose_bf16w(const agmm_plan_desc_t *d, int64_t k,
                                  const agmm_gemm_engine_t **e, int *f32,
                                  agmm_model_measure_info_t *info)
{
    static const agmm_gemm_request_t bw_req = {
        AGMM_GEMM_ENGINE_WQ, AGMM_DTYPE_BF16, AGMM_GEMM_W_PLAIN};
    if (d->dtype != AGMM_DTYPE_BF16 || d->gemm_engine != AGMM_GEMM_ENGINE_AUTO)
        return AGMM_OK;
    int64_t mmax = 0;
    for (int r = 0; r < d->nranks; r++)
        mmax = AGMM_MAX(mmax, d->m_local[r]);
    probe_key_t key = {(*e)->kind, d->dtype, k, rank_cols(d),
                       AGMM_MIN(d->tile_m, AGMM_MAX(mmax, 1))};
    const agmm_gemm_engine_t *bw = agmm_gemm_engine_find(&bw_req);
    if (!bw || !agmm_path_bf16w_applies(&key)) return AGMM_OK;
    double us[2];
    AGMM_CHECK(agmm_path_bf16w_measure(*e, &key, us, NULL));
    if (us[0] < us[1]) { /* a tie: the engine's, as the plan */
        *e = bw;
        *f32 = 0;
        info->engine_by = "auto: agmm's bf16-weight kernel measured faster "
                          "from memory";
    }
    return AGMM_OK;
}

/* ------------------------------------------------------------ DRAM */

/* m->dram_gbs: this host's DRAM read rate (gemm/dram.h) when the prepared
 * weights of a host's ranks (m->ranks_per_host x `sets` of the slowest
 * rank's, on the engine and path measured: `sets` weights a rank uses in
 * turn, as a model's layers) outgrow its last-level cache, else 0.
 * When sysfs names no cache, the cache is agmm_dram_cache_bytes'
 * assumption (a quarter of the probe's buffer, 64 MiB), as the bench's. */
static void dram_floor(agmm_model_machine_t *m, const agmm_plan_desc_t *d,
                       int sets, agmm_model_measure_info_t *info)
{
    agmm_plan_desc_t rd = *d;
    rd.gemm_engine = info->engine;
    rd.gemm_path = info->path;
    info->weight_bytes = mdl_weight_bytes(&rd, gemm_k(d), rank_cols(d));
    info->llc_bytes = (int64_t)agmm_dram_llc_bytes();
    info->cache_bytes = (int64_t)agmm_dram_cache_bytes(NULL);
    info->weight_sets = AGMM_MAX(sets, 1);
    double host = info->weight_bytes * (double)AGMM_MAX(m->ranks_per_host, 1) *
                  (double)info->weight_sets;
    info->streams = host > (double)info->cache_bytes;
    m->dram_gbs = info->streams ? agmm_dram_read_gbps() : 0;
}

/* ------------------------------------------------------------ measure */

agmm_status_t agmm_model_measure_info(agmm_model_machine_t *m,
                                      const agmm_plan_desc_t *d,
                                      double budget_s,
                                      agmm_model_measure_info_t *info_out)
{
    return agmm_model_measure_sets(m, d, budget_s, 1, info_out);
}

agmm_status_t agmm_model_measure_sets(agmm_model_machine_t *m,
                                      const agmm_plan_desc_t *d,
                                      double budget_s, int weight_sets,
                                      agmm_model_measure_info_t *info_out)
{
    if (!m || !d)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: measure: machine or description is NULL");
    AGMM_CHECK(agmm_plan_desc_check(d));
    /* The engine a plan of d runs (a quantized weight: wq's). */
    const agmm_gemm_engine_t *e = agmm_gemm_engine_of_desc(d);
    if (!e)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "model: measure: gemm engine %s is not built in",
                          agmm_gemm_engine_name(d->gemm_engine));
    if (!agmm_gemm_path_available(e->kind, d->dtype, d->gemm_path))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "model: measure: the %s engine has no %s path for "
                          "%s here",
                          e->name, agmm_gemm_path_name(d->gemm_path),
                          agmm_dtype_name(d->dtype));
    if (!(budget_s > 0)) budget_s = 1.0;
    agmm_model_measure_info_t info;
    memset(&info, 0, sizeof info);
    double t0 = agmm_now(), gemm_end = t0 + 0.85 * budget_s;
    int int16 = agmm_dtype_size(d->dtype) == 2;
    int native =
        d->dtype != AGMM_DTYPE_FP32 && e->input_dtype(d->dtype) == d->dtype;
    int64_t k = gemm_k(d), cols = worker_cols(d);
    /* The weight slice within the buffer cap. */
    while (cols > MIN_COLS && (double)k * (double)cols * 4 > BUF_CAP)
        cols = AGMM_MAX(MIN_COLS, cols / 2);
    int f32 = d->dtype == AGMM_DTYPE_FP32 || d->gemm_path == AGMM_GEMM_PATH_F32;
    int quant = d->weight_dtype != AGMM_WDTYPE_SAME;
    if (quant) { /* the wq kernels read the dtype: AUTO is native (path.c) */
        info.engine_by = "a quantized weight: the wq kernels";
    } else if (d->gemm_path == AGMM_GEMM_PATH_AUTO && int16 && native) {
        AGMM_CHECK(choose_path(e, d, k, cols, t0 + 0.15 * budget_s, &f32));
        AGMM_CHECK(choose_bf16w(d, k, &e, &f32, &info));
    } else if (int16 && !native) {
        f32 = 1;
    }
    agmm_gemm_attr_t attr;
    path_attr(&attr, d, f32);
    AGMM_CHECK(call_cost(e, &attr, &m->call_us));

    int64_t row_cap = (int64_t)(BUF_CAP / ((double)k * 4));
    row_cap = AGMM_MIN(row_cap, (int64_t)(BUF_CAP / ((double)MIN_COLS * 4)));
    int64_t rows[AGMM_MODEL_MAX_RATES];
    int n = 0, over_cap = 0;
    if (agmm_model_measure_rows(d, AGMM_MAX(row_cap, 1), rows, &n, &over_cap) !=
        0)
        return agmm_error(AGMM_ERR_NO_MEMORY, "model: out of memory");
    AGMM_CHECK(sweep(m, e, &attr, k, cols, rows, n, gemm_end, &info));
    info.skipped += over_cap;

    /* What is left: the copy and the sum, a third of it to a conversion
     * when the path converts. */
    int conv = f32 && int16;
    double left = AGMM_MAX(0.0, t0 + budget_s - agmm_now());
    double slice = left / 3;
    size_t bytes = tile_bytes(d);
    info.mem_bytes = (int64_t)bytes;
    AGMM_CHECK(agmm_model_measure_memory(bytes, conv ? 2 * slice : left,
                                         &m->copy_gbs, &m->reduce_gbs,
                                         &info.mem_cpus));
    m->convert_gbs = 0;
    if (conv) {
        int64_t tr = AGMM_MAX(
            (int64_t)1, AGMM_MIN(d->tile_m, (int64_t)((64 << 20) / (2 * k))));
        double s = 0;
        AGMM_CHECK(convert_time(d->dtype, tr, k, slice, &s));
        m->convert_gbs = (double)(tr * k * 2) / s * 1e-9;
    }
    info.engine = e->kind;
    info.path = f32 ? AGMM_GEMM_PATH_F32 : AGMM_GEMM_PATH_NATIVE;
    dram_floor(m, d, weight_sets, &info);
    info.k = k;
    info.cols = cols;
    info.seconds = agmm_now() - t0;
    if (info_out) *info_out = info;
    return AGMM_OK;
}

agmm_status_t agmm_model_measure(agmm_model_machine_t *m,
                                 const agmm_plan_desc_t *desc, double budget_s)
{
    return agmm_model_measure_info(m, desc, budget_s, NULL);
}
