/* The gated activations (agmm.h: AGMM_ACT_SILU_MUL, GELU_TANH_MUL): a
 * weight of n = 2 * i columns [gate | up] gives C of i columns,
 *   C[:, j] = act(A @ W[:, j] + bias[j]) * (A @ W[:, i + j] + bias[i + j]).
 *
 * The pass (gemm/epilogue.h, agmm_gemm_epilogue_glu) on hand values and
 * on widths across its 256-column blocks, against the formula in double;
 * then plans: ag-gemm on two ranks and on one (the local call), every
 * engine built in, fp32, bf16 and int8 inputs, fp32 and bf16 C, with and
 * without a bias, both schedules, i = 37 (odd, not a multiple of tile_n
 * 16: a work item's gate and up columns straddle no tile boundary of the
 * other half), against agmm_reference* and agmm_reference_epilogue; and
 * the refusals (odd n, gemm-rs, gemm-ar). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/epilogue.h"
#include "test_data.h"

enum { K = 48, I = 37, N = 2 * I, M = 31, PMAX = 2 };

static double silu(double x)
{
    return x / (1 + exp(-x));
}

static double gelu_tanh(double x)
{
    return 0.5 * x *
           (1 + tanh(sqrt(2 / 3.14159265358979323846) *
                     (x + 0.044715 * x * x * x)));
}

/* The pass on hand values: 2 rows of 3 columns, row stride 8 (gate 0..2,
 * up 3..5, two floats unused), C's stride 4 (its fourth column untouched). */
static void pass_hand(void)
{
    const float acc[16] = {1.0f, -2.0f, 0.5f,   3.0f, 0.25f, -1.0f, 99, 99,
                           0.0f, 4.0f,  -0.75f, 2.0f, -8.0f, 0.5f,  99, 99};
    const float bg[3] = {0.5f, 0.0f, -0.25f}, bu[3] = {1.0f, 0.5f, 0.0f};
    for (int a = 0; a < 2; a++) {
        agmm_gemm_attr_t at;
        agmm_gemm_attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
        at.act = a ? AGMM_GEMM_ACT_GELU_TANH : AGMM_GEMM_ACT_SILU;
        float c[8];
        for (int e = 0; e < 8; e++)
            c[e] = -7.0f;
        agmm_gemm_epilogue_glu(&at, 2, 3, acc, 8, bg, bu, c, 4);
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 3; j++) {
                double g = (double)acc[i * 8 + j] + bg[j];
                double u = (double)acc[i * 8 + 3 + j] + bu[j];
                double want = (a ? gelu_tanh(g) : silu(g)) * u;
                CHECK(fabs(c[i * 4 + j] - want) <= 1e-6 * (1 + fabs(want)),
                      "pass %s: C[%d,%d] = %.9g, want %.9g",
                      a ? "gelu-tanh" : "silu", i, j, (double)c[i * 4 + j],
                      want);
            }
            CHECK(c[i * 4 + 3] == -7.0f, "pass: C[%d,3] written", i);
        }
    }
}

/* The pass over widths across its blocks, fp32 and bf16 C, with and
 * without a bias, against the formula in double. */
static void pass_widths(void)
{
    static const int64_t widths[] = {1, 17, 255, 256, 257, 601};
    enum { R = 3, W = 601 };
    float *acc = test_values(7, R * 2 * W), *b = test_values(8, 2 * W);
    float *c = malloc(sizeof(float) * R * W), got[R * W];
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (int bf = 0; bf < 2; bf++)
            for (int hb = 0; hb < 2; hb++) {
                int64_t n = widths[w];
                agmm_gemm_attr_t at;
                agmm_gemm_attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
                at.act = AGMM_GEMM_ACT_SILU;
                at.c_dtype = bf ? AGMM_DTYPE_BF16 : AGMM_DTYPE_FP32;
                agmm_gemm_epilogue_glu(&at, R, n, acc, 2 * n, hb ? b : NULL,
                                       hb ? b + n : NULL, c, n);
                agmm_convert_to_fp32(at.c_dtype, c, got, (size_t)(R * n));
                int bad = 0;
                for (int64_t i = 0; i < R && !bad; i++)
                    for (int64_t j = 0; j < n && !bad; j++) {
                        double g = acc[i * 2 * n + j] + (hb ? b[j] : 0.0);
                        double u =
                            acc[i * 2 * n + n + j] + (hb ? b[n + j] : 0.0);
                        double want = silu(g) * u;
                        double tol = (bf ? 0x1p-8 : 0) * fabs(want) +
                                     1e-6 * (1 + fabs(g)) * (1 + fabs(u));
                        if (!(fabs(got[i * n + j] - want) <= tol)) bad = 1;
                    }
                CHECK(!bad, "pass: width %lld, %s C, bias %d off the formula",
                      (long long)n, bf ? "bf16" : "fp32", hb);
            }
    free(acc), free(b), free(c);
}

typedef struct cfg {
    int nranks;
    agmm_gemm_engine_kind_t engine;
    agmm_dtype_t dtype;
} cfg_t;

static const int64_t m_two[PMAX] = {19, 12}, m_one[1] = {M};

static const int64_t *m_local(const cfg_t *cf)
{
    return cf->nranks == 1 ? m_one : m_two;
}

/* Every rank's A, and the shared W ([K, N] = [gate | up]); int8: quantized
 * with their scales. */
typedef struct inputs {
    void *a[PMAX], *w;
    float *as[PMAX], *ws;
} inputs_t;

static void make_inputs(const cfg_t *cf, inputs_t *in)
{
    int8_t q = cf->dtype == AGMM_DTYPE_INT8;
    float *fw = test_values(20, K * N);
    in->w = malloc(4 * (size_t)K * N);
    in->ws = q ? malloc(sizeof(float) * N) : NULL;
    if (q)
        agmm_quantize(fw, AGMM_DTYPE_FP32, K, N, N, AGMM_QUANT_COLS, in->w,
                      in->ws);
    else
        agmm_convert_from_fp32(cf->dtype, fw, in->w, (size_t)K * N);
    free(fw);
    for (int p = 0; p < cf->nranks; p++) {
        int64_t na = m_local(cf)[p] * K;
        float *fa = test_values(10 + p, na);
        in->a[p] = malloc(4 * (size_t)(na + 1));
        in->as[p] =
            q ? malloc(sizeof(float) * (size_t)(m_local(cf)[p] + 1)) : NULL;
        if (q)
            agmm_quantize(fa, AGMM_DTYPE_FP32, m_local(cf)[p], K, K,
                          AGMM_QUANT_ROWS, in->a[p], in->as[p]);
        else
            agmm_convert_from_fp32(cf->dtype, fa, in->a[p], (size_t)na);
        free(fa);
    }
}

static void free_inputs(const cfg_t *cf, inputs_t *in)
{
    for (int p = 0; p < cf->nranks; p++)
        free(in->a[p]), free(in->as[p]);
    free(in->w), free(in->ws);
}

/* The reference product [M, N], fp32. */
static int reference(const cfg_t *cf, const inputs_t *in, float *ref)
{
    if (cf->dtype == AGMM_DTYPE_INT8)
        return agmm_reference_int8(cf->nranks, (const int8_t *const *)in->a,
                                   (const float *const *)in->as, m_local(cf), K,
                                   N, in->w, in->ws, ref) != AGMM_OK;
    return agmm_reference(cf->nranks, (const void *const *)in->a, m_local(cf),
                          K, N, cf->dtype, in->w, ref) != AGMM_OK;
}

static void fill_desc(const cfg_t *cf, agmm_plan_desc_t *d)
{
    agmm_plan_desc_init(d);
    d->nranks = cf->nranks;
    d->m_local = m_local(cf);
    d->k = K;
    d->n = N;
    d->tile_m = 8;
    d->tile_n = 16;
    d->dtype = cf->dtype;
    d->gemm_engine = cf->engine;
    d->gemm_path = AGMM_GEMM_PATH_NATIVE; /* no measuring */
    if (cf->engine == AGMM_GEMM_ENGINE_OPENBLAS ||
        !agmm_gemm_path_available(cf->engine, cf->dtype, d->gemm_path))
        d->gemm_path = AGMM_GEMM_PATH_F32;
    d->comm_workers = cf->nranks > 1;
    d->gemm_workers = 2;
}

/* One plan's rounds against the reference; 0 or a code. */
static int one(agmm_world_t *w, const cfg_t *cf, const inputs_t *in,
               const float *ref0, int bias, agmm_activation_t act,
               agmm_dtype_t out)
{
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    fill_desc(cf, &d);
    d.bias = bias;
    d.activation = act;
    d.out_dtype = out;
    agmm_plan_t *plan = NULL;
    if (agmm_plan_create(w, &d, &plan) != AGMM_OK) return 10;
    agmm_status_t st = cf->dtype == AGMM_DTYPE_INT8
                           ? agmm_plan_set_weight_scaled(plan, 0, in->w, in->ws)
                           : agmm_plan_set_weight(plan, in->w);
    if (st != AGMM_OK || agmm_plan_cols(plan, 0) != N) {
        agmm_plan_destroy(plan);
        return 11;
    }
    float *b = test_values(30, N), *ref = malloc(sizeof(float) * M * N);
    float *pre = malloc(sizeof(float) * M * N), *got = malloc(4 * M * I);
    size_t es = agmm_dtype_size(out);
    unsigned char *c = malloc(es * M * I + 16);
    int bad = 0;
    /* Every row count a round calls was prepared (a gated call's tile_m
     * chunks and their remainders): no primitive is made in a round. */
    agmm_gemm_info_t gi0, gi1;
    if (agmm_plan_gemm_info(plan, &gi0) != AGMM_OK) bad = 18;
    for (int round = 0; round < 2 && !bad; round++) {
        if (bias && agmm_plan_set_bias(plan, 0, b) != AGMM_OK) bad = 12;
        memset(c, 0xff, es * M * I + 16);
        agmm_run_args_t a;
        agmm_run_args_init(&a);
        a.schedule = round ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED;
        a.a_local = in->a[r];
        a.a_scale = in->as[r];
        void *cp = c;
        a.c = &cp;
        if (!bad && agmm_plan_run_args(plan, &a) != AGMM_OK) bad = 13;
        for (int e = 0; e < 16 && !bad; e++)
            if (c[es * M * I + (size_t)e] != 0xff) bad = 14; /* past C */
        memcpy(ref, ref0, sizeof(float) * M * N);
        if (!bad &&
            (agmm_reference_epilogue(M, N, bias ? b : NULL, AGMM_ACT_NONE,
                                     ref) != AGMM_OK ||
             (memcpy(pre, ref, sizeof(float) * M * N),
              agmm_reference_epilogue(M, N, NULL, act, ref)) != AGMM_OK))
            bad = 15;
        agmm_convert_to_fp32(out, c, got, (size_t)M * I);
        double s = agmm_activation_max_slope(act);
        double h = out == AGMM_DTYPE_BF16 ? 0x1p-8 : 0;
        /* the products' own error (fp32 sums of the same inputs, in
         * another order; int8: a few roundings), through act(g) * u */
        double e = cf->dtype == AGMM_DTYPE_INT8 ? 1e-5 : 1e-4;
        for (int64_t i = 0; i < M && !bad; i++)
            for (int64_t j = 0; j < I && !bad; j++) {
                double g = pre[i * N + j], u = pre[i * N + I + j];
                double y = ref[i * I + j];
                double eg = s * e * (1 + fabs(g)), eu = e * (1 + fabs(u));
                double bound = eg * fabs(u) + (fabs(g) * s + eg) * eu +
                               16 * 0x1p-24 * (1 + fabs(g)) * (1 + fabs(u)) +
                               h * fabs(y);
                if (!(fabs((double)got[i * I + j] - y) <= bound)) {
                    fprintf(stderr,
                            "rank %d: C[%lld,%lld] = %.9g, want %.9g (g %g, u "
                            "%g, bound %g)\n",
                            r, (long long)i, (long long)j,
                            (double)got[i * I + j], y, g, u, bound);
                    bad = 16;
                }
            }
        for (int j = 0; j < N; j++) /* round 1: a new bias */
            b[j] = -2 * b[j] + 0.25f;
    }
    if (!bad && (agmm_plan_gemm_info(plan, &gi1) != AGMM_OK ||
                 gi1.primitives_created != gi0.primitives_created ||
                 strcmp(gi1.epilogue, "pass")))
        bad = 18;
    if (agmm_plan_destroy(plan) != AGMM_OK && !bad) bad = 17;
    free(b), free(ref), free(pre), free(got), free(c);
    return bad;
}

/* Odd n, and the operations that reduce: refused by the description. */
static int refusals(const cfg_t *cf)
{
    agmm_plan_desc_t d;
    fill_desc(cf, &d);
    d.activation = AGMM_ACT_SILU_MUL;
    if (agmm_plan_desc_check(&d) != AGMM_OK) return 20;
    d.n = N + 1;
    if (agmm_plan_desc_check(&d) != AGMM_ERR_INVALID_ARG) return 21;
    d.n = N;
    d.op = AGMM_OP_GEMM_RS;
    if (agmm_plan_desc_check(&d) != AGMM_ERR_UNSUPPORTED ||
        !strstr(agmm_last_error(), "silu-mul"))
        return 22;
    d.op = AGMM_OP_GEMM_AR;
    if (agmm_plan_desc_check(&d) != AGMM_ERR_UNSUPPORTED) return 23;
    return 0;
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    inputs_t in;
    make_inputs(cf, &in);
    float *ref = malloc(sizeof(float) * M * N);
    int bad = reference(cf, &in, ref) ? 1 : 0;
    static const agmm_activation_t acts[2] = {AGMM_ACT_SILU_MUL,
                                              AGMM_ACT_GELU_TANH_MUL};
    static const agmm_dtype_t outs[2] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16};
    for (int a = 0; a < 2 && !bad; a++)
        for (int o = 0; o < 2 && !bad; o++)
            for (int bias = 0; bias <= 1 && !bad; bias++) {
                int e = one(w, cf, &in, ref, bias, acts[a], outs[o]);
                if (e) {
                    fprintf(stderr,
                            "test_epilogue_glu: rank %d of %d: %s %s, %s, out "
                            "%s, bias %d: code %d\n",
                            agmm_world_rank(w), cf->nranks,
                            agmm_gemm_engine_name(cf->engine),
                            agmm_dtype_name(cf->dtype),
                            agmm_activation_name(acts[a]),
                            agmm_dtype_name(outs[o]), bias, e);
                    bad = 100 + e;
                }
            }
    if (!bad) bad = refusals(cf);
    free_inputs(cf, &in);
    free(ref);
    return bad;
}

int main(void)
{
    pass_hand();
    pass_widths();
    CHECK(!strcmp(agmm_activation_name(AGMM_ACT_SILU_MUL), "silu-mul") &&
              !strcmp(agmm_activation_name(AGMM_ACT_GELU_TANH_MUL),
                      "gelu-tanh-mul"),
          "activation names");
    const agmm_gemm_engine_kind_t engines[2] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                                AGMM_GEMM_ENGINE_ONEDNN};
    const agmm_dtype_t dtypes[3] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16,
                                    AGMM_DTYPE_INT8};
    for (int np = 1; np <= PMAX; np++)
        for (int ei = 0; ei < 2; ei++)
            for (int di = 0; di < 3; di++) {
                cfg_t cf = {np, engines[ei], dtypes[di]};
                if (!agmm_gemm_engine_available(cf.engine)) continue;
                if (cf.dtype == AGMM_DTYPE_INT8 &&
                    cf.engine != AGMM_GEMM_ENGINE_ONEDNN)
                    continue; /* int8 needs oneDNN */
                agmm_launch_opts_t o = {0};
                o.nranks = np;
                o.timeout_s = 30;
                o.quiet = 1;
                int code = -1;
                agmm_status_t st = agmm_launch(&o, rank_main, &cf, &code);
                CHECK(st == AGMM_OK && code == 0,
                      "%d rank(s), %s, %s: exit code %d (1: the reference; "
                      "100 + what: 10-11 plan or weight, 12-13 bias or run, "
                      "14 wrote past C's i columns, 16 off the reference, 18 a "
                      "primitive made in a round or not a pass; "
                      "20-23 the refusals)",
                      np, agmm_gemm_engine_name(cf.engine),
                      agmm_dtype_name(cf.dtype), code);
            }
    CHECK_DONE("test_epilogue_glu");
}
