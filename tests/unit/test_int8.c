/* W8A8 int8 through whole rounds: every operation, 1-4 ranks, uneven and
 * empty shards, partial tiles, per-row and per-tensor scales of A and W,
 * several weights, rows that change every call and the gathered A handed
 * back (int8 rows and their scales, byte for byte), 0/1/2 comm workers,
 * every schedule. Values cover the extremes (+-127 and -128 rows), rows of
 * zeros with scale 0 and scales of 0 on columns.
 *
 * Every element is checked against the int8 oracles (check/: exact int64
 * dot products, the scaling in double) within fp32 rounding:
 *   ag-gemm: |c - ref| <= 4 u |ref|, u = 2^-24 (the int32 sum converted
 *            to fp32 and two fp32 multiplications by the scales: three
 *            roundings, one ulp of slack);
 *   gemm-rs (and gemm-ar, over every row): |c - ref| <= (P + 3) u sum_r
 *            |ref_r| (each rank's fp32 partial as above, then P - 1 fp32
 *            additions), ref_r being rank r's own scaled product.
 * Each shape runs twice, with the variant the injected measurement makes
 * faster: s8 x s8 and A shifted to u8 (the engine's compensation). Then the
 * refusals: an int8 plan without A scales, with bad scales, with
 * the unscaled set_weight, and a non-int8 plan given scales. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "ops/common/path.h" /* agmm_path_set_probe */
#include "rank_check.h"

/* The variant the injected measurement makes faster (main sets it before
 * forking the ranks): every shape runs with s8 x s8 and with u8 x s8. */
static int want_u8;
static agmm_status_t fake_probe(int rank, int u8, double *call_us,
                                double *conv_us)
{
    (void)rank;
    *call_us = u8 == want_u8 ? 100.0 : 200.0;
    *conv_us = 0;
    return AGMM_OK;
}

typedef struct shape {
    agmm_op_t op;
    int nranks;
    int64_t m_max[4];
    int64_t k;
    int nw;
    int64_t n[3];
    int64_t tile_m, tile_n;
    agmm_scale_t a_scale, w_scale;
    int comm, gemm;
    int dynamic;        /* rows change every call */
    int64_t k_local[4]; /* gemm-rs: all 0: the even split */
} shape_t;

#define AG AGMM_OP_AG_GEMM
#define RS AGMM_OP_GEMM_RS
#define AR AGMM_OP_GEMM_AR /* checked as RS, over every row of C */
#define CH AGMM_SCALE_CHANNEL
#define TE AGMM_SCALE_TENSOR

static const shape_t shapes[] = {
    {AG, 1, {37}, 19, 2, {23, 8}, 8, 5, CH, CH, 1, 1, 0, {0}},
    {AG, 2, {64, 64}, 64, 1, {48}, 16, 16, CH, CH, 1, 1, 0, {0}},
    {AG, 2, {100, 3}, 17, 3, {31, 9, 16}, 7, 4, TE, CH, 0, 2, 1, {0}},
    {AG, 3, {10, 0, 25}, 9, 2, {40, 7}, 4, 7, CH, TE, 2, 2, 1, {0}},
    {AG, 4, {5, 9, 1, 12}, 130, 1, {33}, 2, 16, TE, TE, 1, 2, 1, {0}},
    {RS, 1, {20}, 30, 1, {17}, 8, 8, CH, CH, 1, 1, 0, {0}},
    {RS, 2, {16, 9}, 64, 1, {40}, 8, 16, CH, CH, 1, 1, 0, {0}},
    {RS, 3, {7, 0, 12}, 21, 1, {19}, 4, 8, TE, CH, 0, 2, 1, {5, 0, 16}},
    {RS, 4, {3, 5, 8, 2}, 33, 1, {24}, 2, 8, CH, TE, 2, 1, 1, {0}},
    {AR, 2, {16, 9}, 64, 1, {40}, 8, 16, CH, CH, 1, 1, 0, {0}},
    {AR, 3, {7, 0, 12}, 21, 1, {19}, 4, 8, TE, CH, 0, 2, 0, {5, 0, 16}},
    {AR, 4, {3, 5, 8, 2}, 33, 1, {24}, 2, 8, CH, TE, 2, 1, 1, {0}},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])
#define ROUNDS  6

/* Deterministic int8 values: mostly small, with extreme rows (all +127,
 * all -127, all -128) and rows of zeros mixed in by seed. */
static void fill_i8(int8_t *x, int64_t rows, int64_t cols, unsigned seed)
{
    for (int64_t i = 0; i < rows; i++) {
        unsigned kind = (seed + (unsigned)i * 7u) % 11u;
        for (int64_t j = 0; j < cols; j++) {
            unsigned h = seed * 2654435761u + (unsigned)(i * cols + j) * 40503u;
            int v = (int)(h >> 16) % 255 - 127;
            x[i * cols + j] = (int8_t)(kind == 0   ? 127
                                       : kind == 1 ? -127
                                       : kind == 2 ? -128
                                       : kind == 3 ? 0
                                                   : v);
        }
    }
}

/* Scales: powers of two times small odd numbers, with zeros. */
static void fill_scales(float *s, int64_t n, unsigned seed)
{
    for (int64_t i = 0; i < n; i++) {
        unsigned h = (seed + (unsigned)i) * 2246822519u;
        s[i] = h % 13u == 0 ? 0.0f : (float)(1 + (h >> 8) % 15) / 256.0f;
    }
}

static int64_t rows_of(const shape_t *s, int q, int i)
{
    int64_t mx = s->m_max[q];
    if (!s->dynamic) return mx;
    switch ((i + q) % 4) {
    case 0:
        return mx;
    case 1:
        return mx > 0 ? 1 : 0;
    case 2:
        return 0;
    default:
        return mx / 2 + (mx > 2);
    }
}

/* max over elements of |c - ref| / bound (bound from `mag`): <= 1 passes. */
static double worst(const float *c, const float *ref, const float *mag,
                    int64_t n, double ulps)
{
    double w = 0;
    for (int64_t e = 0; e < n; e++) {
        double d = fabs((double)c[e] - (double)ref[e]);
        double b = ulps * 0x1p-24 * fabs((double)mag[e]) + 1e-30;
        double v = d / b;
        if (!(v <= w)) w = v; /* NaN propagates */
    }
    return w;
}

static int ag_main(agmm_world_t *w, const shape_t *s, agmm_plan_t *p)
{
    int r = agmm_world_rank(w), P = s->nranks;
    int64_t k = s->k, Mmax = 0;
    for (int q = 0; q < P; q++)
        Mmax += s->m_max[q];
    int8_t *wt[3];
    float *ws[3], *c[3];
    void *cv[3]; /* the outputs as run_args takes them */
    float *ref = malloc(sizeof(float) * (size_t)(Mmax * 48 + 1));
    for (int i = 0; i < s->nw; i++) {
        wt[i] = malloc((size_t)(k * s->n[i]));
        ws[i] = malloc(sizeof(float) * (size_t)s->n[i]);
        cv[i] = c[i] = malloc(sizeof(float) * (size_t)(Mmax * s->n[i] + 1));
        fill_i8(wt[i], k, s->n[i], 11u + (unsigned)i);
        fill_scales(ws[i], s->n[i], 5u + (unsigned)i);
        if (s->w_scale == TE) ws[i][0] = 0.0078125f;
        CHECK(agmm_plan_set_weight_scaled(p, i, wt[i], ws[i]) == AGMM_OK,
              "set_weight_scaled %d: %s", i, agmm_last_error());
    }
    int8_t *gath = malloc((size_t)(Mmax * k) + 1);
    float *gscale = malloc(sizeof(float) * (size_t)(Mmax + 1));
    float *wcol = malloc(sizeof(float) * 48);
    for (int round = 0; round < ROUNDS; round++) {
        int64_t m[4], M = 0;
        const int8_t *shards[4];
        const float *scales[4];
        int8_t *mem[4];
        float *smem[4];
        for (int q = 0; q < P; q++) {
            m[q] = rows_of(s, q, round);
            mem[q] = malloc((size_t)(m[q] * k) + 1);
            smem[q] = malloc(sizeof(float) * (size_t)(m[q] + 1));
            fill_i8(mem[q], m[q], k, (unsigned)(round * 31 + q));
            fill_scales(smem[q], m[q], (unsigned)(round * 17 + q));
            if (s->a_scale == TE) /* one for the shard, as a row scale */
                for (int64_t i = 0; i <= m[q]; i++)
                    smem[q][i] = (float)(q + 1) / 64.0f;
            shards[q] = mem[q];
            scales[q] = smem[q];
            M += m[q];
        }
        agmm_run_args_t a;
        agmm_run_args_init(&a);
        a.schedule = (agmm_schedule_t)(round % 3);
        a.a_local = shards[r];
        a.a_scale = scales[r];
        a.c = cv;
        a.m_rows = s->dynamic ? m : NULL;
        a.a_gathered = round % 2 ? NULL : gath;
        a.a_gathered_scale = round % 4 == 0 ? gscale : NULL;
        memset(gath, 0xa5, (size_t)(Mmax * k) + 1);
        agmm_status_t st = agmm_plan_run_args(p, &a);
        CHECK(st == AGMM_OK, "rank %d round %d: %s %s", r, round,
              agmm_status_str(st), agmm_last_error());
        for (int i = 0; i < s->nw && M > 0 && st == AGMM_OK; i++) {
            const float *wsc = ws[i];
            if (s->w_scale == TE) {
                for (int64_t j = 0; j < s->n[i]; j++)
                    wcol[j] = ws[i][0];
                wsc = wcol;
            }
            agmm_reference_int8(P, shards, scales, m, k, s->n[i], wt[i], wsc,
                                ref);
            double v = worst(c[i], ref, ref, M * s->n[i], 4);
            CHECK(v <= 1, "rank %d round %d weight %d: %.3g x the bound", r,
                  round, i, v);
        }
        if (a.a_gathered && st == AGMM_OK) {
            int64_t off = 0;
            for (int q = 0; q < P; q++) {
                CHECK(memcmp(gath + off * k, shards[q], (size_t)(m[q] * k)) ==
                          0,
                      "rank %d round %d: gathered rows of %d differ", r, round,
                      q);
                if (a.a_gathered_scale)
                    CHECK(m[q] == 0 ||
                              memcmp(gscale + off, scales[q],
                                     sizeof(float) * (size_t)m[q]) == 0,
                          "rank %d round %d: gathered scales of %d differ", r,
                          round, q);
                off += m[q];
            }
            CHECK((unsigned char)gath[off * k] == 0xa5,
                  "gathered A written past M rows");
        }
        for (int q = 0; q < P; q++) {
            free(mem[q]);
            free(smem[q]);
        }
    }
    for (int i = 0; i < s->nw; i++) {
        free(wt[i]);
        free(ws[i]);
        free(c[i]);
    }
    free(ref);
    free(gath);
    free(gscale);
    free(wcol);
    return 0;
}

static int rs_main(agmm_world_t *w, const shape_t *s, agmm_plan_t *p)
{
    int r = agmm_world_rank(w), P = s->nranks;
    int64_t kl[4], M = 0, n = s->n[0];
    for (int q = 0; q < P; q++) {
        kl[q] = s->k_local[0] + s->k_local[1] + s->k_local[2]
                    ? s->k_local[q]
                    : agmm_k_split(s->k, P, q);
        M += s->m_max[q];
    }
    /* the most: C's buffer (gemm-ar: every rank gets every row) */
    int64_t rows = s->op == AR ? M : s->m_max[r];
    int8_t *a[4], *wt[4];
    float *as[4], *ws[4];
    for (int q = 0; q < P; q++) { /* every rank's inputs, for the oracle */
        a[q] = malloc((size_t)(M * kl[q]) + 1);
        wt[q] = malloc((size_t)(kl[q] * n) + 1);
        as[q] = malloc(sizeof(float) * (size_t)M);
        ws[q] = malloc(sizeof(float) * (size_t)n);
        fill_i8(wt[q], kl[q], n, 40u + (unsigned)q);
        fill_scales(ws[q], n, 9u + (unsigned)q);
        if (s->w_scale == TE)
            for (int64_t j = 0; j < n; j++)
                ws[q][j] = (float)(q + 2) / 128.0f;
    }
    CHECK(agmm_plan_set_weight_scaled(p, 0, wt[r], ws[r]) == AGMM_OK,
          "set_weight_scaled: %s", agmm_last_error());
    float *c = malloc(sizeof(float) * (size_t)(rows * n + 1));
    float *ref = malloc(sizeof(float) * (size_t)(rows * n + 1));
    float *mag = calloc((size_t)(rows * n + 1), sizeof(float));
    float *part = malloc(sizeof(float) * (size_t)(rows * n + 1));
    for (int round = 0; round < ROUNDS; round++) {
        for (int q = 0; q < P; q++) {
            fill_i8(a[q], M, kl[q], (unsigned)(round * 13 + q));
            fill_scales(as[q], M, (unsigned)(round * 7 + q));
            if (s->a_scale == TE)
                for (int64_t i = 0; i < M; i++)
                    as[q][i] = (float)(round + 1) / 32.0f;
        }
        /* This round's rows of C (dynamic: changing; A_r is the first Mc
         * rows of its buffer, with their scales). */
        int64_t m[4], Mc = 0, rc0 = 0;
        for (int q = 0; q < P; q++) {
            m[q] = rows_of(s, q, round);
            rc0 += q < r ? m[q] : 0;
            Mc += m[q];
        }
        int64_t rr = m[r];
        if (s->op == AR) { /* every row */
            rc0 = 0;
            rr = Mc;
        }
        void *cs[1] = {c};
        agmm_run_args_t x;
        agmm_run_args_init(&x);
        x.schedule = (agmm_schedule_t)(round % 3);
        x.a_local = a[r];
        x.a_scale = as[r];
        x.c = cs;
        x.m_rows = s->dynamic ? m : NULL;
        agmm_status_t st = agmm_plan_run_args(p, &x);
        CHECK(st == AGMM_OK, "rank %d round %d: %s %s", r, round,
              agmm_status_str(st), agmm_last_error());
        if (st != AGMM_OK || rr == 0) continue;
        agmm_reference_rs_int8(
            P, (const int8_t *const *)a, (const float *const *)as,
            (const int8_t *const *)wt, (const float *const *)ws, kl, Mc, n, rc0,
            rr, ref);
        memset(mag, 0, sizeof(float) * (size_t)(rr * n));
        for (int q = 0; q < P; q++) { /* sum_r |ref_r| */
            if (kl[q] == 0) continue;
            const int8_t *aq[1] = {a[q]}, *wq[1] = {wt[q]};
            const float *asq[1] = {as[q]}, *wsq[1] = {ws[q]};
            int64_t kq[1] = {kl[q]};
            agmm_reference_rs_int8(1, aq, asq, wq, wsq, kq, Mc, n, rc0, rr,
                                   part);
            for (int64_t e = 0; e < rr * n; e++)
                mag[e] += fabsf(part[e]);
        }
        double v = worst(c, ref, mag, rr * n, P + 3);
        CHECK(v <= 1, "rank %d round %d: %.3g x the bound", r, round, v);
    }
    for (int q = 0; q < P; q++) {
        free(a[q]);
        free(wt[q]);
        free(as[q]);
        free(ws[q]);
    }
    free(c);
    free(ref);
    free(mag);
    free(part);
    return 0;
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const shape_t *s = arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.op = s->op;
    d.nranks = s->nranks;
    d.m_local = s->m_max;
    d.k = s->k;
    if (s->nw > 1) {
        d.n_weights = s->nw;
        d.n_list = s->n;
    }
    d.n = s->n[0];
    d.tile_m = s->tile_m;
    d.tile_n = s->tile_n;
    d.dtype = AGMM_DTYPE_INT8;
    d.a_scale = s->a_scale;
    d.w_scale = s->w_scale;
    d.comm_workers = s->comm;
    d.gemm_workers = s->gemm;
    d.timeout_s = 20;
    if (s->op != AG && s->k_local[0] + s->k_local[1] + s->k_local[2])
        d.k_local = s->k_local;
    agmm_plan_t *p;
    agmm_status_t st = agmm_plan_create(w, &d, &p);
    CHECK(st == AGMM_OK, "plan_create: %s %s", agmm_status_str(st),
          agmm_last_error());
    if (st != AGMM_OK) return rank_checks_save(r);
    agmm_gemm_info_t g;
    agmm_plan_gemm_info(p, &g);
    /* measured (injected) where this rank multiplies ("only" where it
     * has no inner part); the ranks' measurements decide for all */
    int only = !strcmp(g.chosen_by, "only");
    const char *want = want_u8 ? "u8s8" : "s8s8";
    CHECK(g.path == AGMM_GEMM_PATH_NATIVE && g.int8_variant &&
              !strcmp(g.int8_variant, want) &&
              (only || !strcmp(g.chosen_by, "measured")),
          "int8 path %s by %s, variant %s (want %s)",
          agmm_gemm_path_name(g.path), g.chosen_by,
          g.int8_variant ? g.int8_variant : "none", want);
    if (s->op == AG)
        ag_main(w, s, p);
    else
        rs_main(w, s, p);
    CHECK(agmm_plan_destroy(p) == AGMM_OK, "destroy");
    return rank_checks_save(r);
}

/* Refusals on one rank: each bad call fails with INVALID_ARG (a run's bad
 * argument also aborts the world, so it comes last). */
static int refusal_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    rank_checks_begin();
    int64_t mx[1] = {4};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.m_local = mx;
    d.k = d.n = 8;
    d.tile_m = 4;
    d.tile_n = 8;
    d.dtype = AGMM_DTYPE_FP32;
    agmm_plan_t *p;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_OK, "fp32 plan");
    int8_t wt[64] = {0};
    float ws[8] = {1, 1, 1, 1, 1, 1, 1, 1}, c[32];
    CHECK(agmm_plan_set_weight_scaled(p, 0, wt, ws) == AGMM_ERR_INVALID_ARG,
          "scaled weight on an fp32 plan");
    agmm_plan_destroy(p);
    d.dtype = AGMM_DTYPE_INT8;
    d.k = AGMM_INT8_MAX_K + 1;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_UNSUPPORTED, "int8 k too big");
    d.k = 8;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_OK, "int8 plan: %s",
          agmm_last_error());
    CHECK(agmm_plan_set_weight(p, wt) == AGMM_ERR_INVALID_ARG,
          "unscaled weight on an int8 plan");
    ws[3] = -1;
    CHECK(agmm_plan_set_weight_scaled(p, 0, wt, ws) == AGMM_ERR_INVALID_ARG,
          "negative w_scale");
    ws[3] = NAN;
    CHECK(agmm_plan_set_weight_scaled(p, 0, wt, ws) == AGMM_ERR_INVALID_ARG,
          "NaN w_scale");
    ws[3] = 1;
    CHECK(agmm_plan_set_weight_scaled(p, 0, wt, ws) == AGMM_OK, "good scales");
    void *cs[1] = {c};
    agmm_run_args_t a;
    agmm_run_args_init(&a);
    a.a_local = wt;
    a.c = cs;
    CHECK(agmm_plan_run_args(p, &a) == AGMM_ERR_INVALID_ARG,
          "int8 run without a_scale");
    CHECK(strstr(agmm_last_error(), "a_scale"), "names a_scale: %s",
          agmm_last_error());
    agmm_plan_destroy(p);
    return rank_checks_save(0);
}

int main(void)
{
    if (!agmm_gemm_path_available(AGMM_GEMM_ENGINE_AUTO, AGMM_DTYPE_INT8,
                                  AGMM_GEMM_PATH_NATIVE)) {
        /* Built without oneDNN: int8 is refused by name, nothing to run. */
        int64_t mx[1] = {4};
        agmm_plan_desc_t d;
        agmm_plan_desc_init(&d);
        d.m_local = mx;
        d.dtype = AGMM_DTYPE_INT8;
        CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_UNSUPPORTED &&
                  strstr(agmm_last_error(), "oneDNN"),
              "int8 without oneDNN: %s", agmm_last_error());
        CHECK_DONE("test_int8");
    }
    rank_checks_init(4);
    agmm_path_set_probe(fake_probe);
    for (size_t i = 0; i < 2 * NSHAPES; i++) {
        shape_t s = shapes[i % NSHAPES];
        want_u8 = i >= NSHAPES;
        agmm_launch_opts_t o = {0};
        o.nranks = s.nranks;
        o.timeout_s = 30;
        o.quiet = 1;
        int code = -1;
        agmm_status_t st = agmm_launch(&o, rank_main, &s, &code);
        CHECK(st == AGMM_OK && code == 0,
              "shape %zu (%s, %d ranks, %s): %s, exit %d", i % NSHAPES,
              agmm_op_name(s.op), s.nranks, want_u8 ? "u8s8" : "s8s8",
              agmm_status_str(st), code);
        rank_checks_collect(s.nranks);
    }
    agmm_launch_opts_t o = {0};
    o.nranks = 1;
    o.timeout_s = 20;
    o.quiet = 1;
    int code = -1;
    agmm_launch(&o, refusal_main, NULL, &code);
    rank_checks_collect(1);
    CHECK_DONE("test_int8");
}
