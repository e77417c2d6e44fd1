/* The plans' epilogue (agmm_plan_desc_t: bias, activation, out_dtype) on
 * every operation, both schedules, every GEMM engine built in, bf16 and
 * int8 inputs: C = out(act(A @ W + bias)).
 *
 * Two ranks. Per configuration (operation, engine, dtype) a plain plan
 * (no epilogue, fp32 C) gives R, and a plan per epilogue (each activation,
 * each out dtype, with and without a bias) gives E; every round is
 * checked:
 *   - against the reference (agmm_reference* then agmm_reference_epilogue):
 *     |E - ref| <= slope (1e-4 (1 + |pre|)) + 8 ulp + half an ulp of the
 *     out dtype (pre: the reference before the activation);
 *   - gemm-rs and gemm-ar, bit for bit: E == epilogue(R) of the same
 *     schedule (the
 *     epilogue applied once, on the reduced sum: never to a partial),
 *     which also makes fused E == baseline E wherever fused R == baseline
 *     R, and fused E == baseline E is asserted where that holds here;
 *   - a new bias (agmm_plan_set_bias between rounds) is what the next
 *     round adds.
 * And the refusals: set_bias on a plan without desc.bias, a NaN bias, a
 * weight index out of range, an out_dtype INT8 or an invalid activation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/epilogue.h"
#include "test_data.h"

#define P 2
static const int64_t m_local[P] = {19, 13};
enum { K = 48, N = 40, M = 32 };

typedef struct cfg {
    agmm_op_t op;
    agmm_gemm_engine_kind_t engine;
    agmm_dtype_t dtype;
} cfg_t;

/* gemm-rs and gemm-ar split k over the ranks and reduce; ag-gemm gathers. */
static int reduces(const cfg_t *cf)
{
    return cf->op != AGMM_OP_AG_GEMM;
}

static int64_t kpart(const cfg_t *cf, int r)
{
    return reduces(cf) ? agmm_k_split(K, P, r) : K;
}

/* One rank's inputs: A_r and W_r in the dtype (int8: quantized, with
 * their scales), every rank's (the reference needs them all). */
typedef struct inputs {
    void *a[P], *w[P];
    float *as[P], *ws[P]; /* int8: A per row, W per column */
    int64_t arows[P];
} inputs_t;

static void make_inputs(const cfg_t *cf, inputs_t *in)
{
    for (int p = 0; p < P; p++) {
        int64_t kp = kpart(cf, p);
        in->arows[p] = reduces(cf) ? M : m_local[p];
        int64_t na = in->arows[p] * kp, nw = kp * N;
        float *fa = test_values(10 + p, na), *fw = test_values(20 + p, nw);
        in->a[p] = malloc(4 * (size_t)(na + 1));
        in->w[p] = malloc(4 * (size_t)(nw + 1));
        in->as[p] = in->ws[p] = NULL;
        if (cf->dtype == AGMM_DTYPE_INT8) {
            in->as[p] = malloc(sizeof(float) * (size_t)(in->arows[p] + 1));
            in->ws[p] = malloc(sizeof(float) * N);
            agmm_quantize(fa, AGMM_DTYPE_FP32, in->arows[p], kp, kp,
                          AGMM_QUANT_ROWS, in->a[p], in->as[p]);
            agmm_quantize(fw, AGMM_DTYPE_FP32, kp, N, N, AGMM_QUANT_COLS,
                          in->w[p], in->ws[p]);
        } else {
            agmm_convert_from_fp32(cf->dtype, fa, in->a[p], (size_t)na);
            agmm_convert_from_fp32(cf->dtype, fw, in->w[p], (size_t)nw);
        }
        free(fa);
        free(fw);
    }
}

static void free_inputs(inputs_t *in)
{
    for (int p = 0; p < P; p++) {
        free(in->a[p]);
        free(in->w[p]);
        free(in->as[p]);
        free(in->ws[p]);
    }
}

/* This rank's C rows: all M (ag-gemm, gemm-ar) or its own (gemm-rs). */
static int64_t c_rows(const cfg_t *cf, int r, int64_t *row0)
{
    *row0 = 0;
    if (cf->op != AGMM_OP_GEMM_RS) return M;
    for (int p = 0; p < r; p++)
        *row0 += m_local[p];
    return m_local[r];
}

/* The reference product / sum of this rank's C rows, fp32. */
static int reference(const cfg_t *cf, const inputs_t *in, int r, float *ref)
{
    int64_t row0, rows = c_rows(cf, r, &row0);
    int64_t kl[P];
    for (int p = 0; p < P; p++)
        kl[p] = kpart(cf, p);
    int8_t *const *a8 = (int8_t *const *)in->a;
    int8_t *const *w8 = (int8_t *const *)in->w;
    agmm_status_t st;
    if (reduces(cf) && cf->dtype == AGMM_DTYPE_INT8)
        st = agmm_reference_rs_int8(
            P, (const int8_t *const *)a8, (const float *const *)in->as,
            (const int8_t *const *)w8, (const float *const *)in->ws, kl, M, N,
            row0, rows, ref);
    else if (reduces(cf))
        st = agmm_reference_rs(P, (const void *const *)in->a,
                               (const void *const *)in->w, kl, M, N, cf->dtype,
                               row0, rows, ref);
    else if (cf->dtype == AGMM_DTYPE_INT8) /* the shared weight: rank 0's */
        st = agmm_reference_int8(P, (const int8_t *const *)a8,
                                 (const float *const *)in->as, m_local, K, N,
                                 w8[0], in->ws[0], ref);
    else
        st = agmm_reference(P, (const void *const *)in->a, m_local, K, N,
                            cf->dtype, in->w[0], ref);
    return st != AGMM_OK;
}

static agmm_status_t make_plan(agmm_world_t *w, const cfg_t *cf,
                               const inputs_t *in, int bias,
                               agmm_activation_t act, agmm_dtype_t out,
                               agmm_plan_t **plan)
{
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P;
    d.m_local = m_local;
    d.k = K;
    d.n = N;
    d.tile_m = 8;
    d.tile_n = 16;
    d.dtype = cf->dtype;
    d.gemm_engine = cf->engine;
    d.gemm_path = AGMM_GEMM_PATH_NATIVE; /* no measuring */
    if (cf->engine == AGMM_GEMM_ENGINE_OPENBLAS ||
        !agmm_gemm_path_available(cf->engine, cf->dtype, d.gemm_path))
        d.gemm_path = AGMM_GEMM_PATH_F32;
    d.comm_workers = 1;
    d.gemm_workers = 2;
    d.op = cf->op;
    d.bias = bias;
    d.activation = act;
    d.out_dtype = out;
    agmm_status_t st = agmm_plan_create(w, &d, plan);
    if (st != AGMM_OK) return st;
    int wi = reduces(cf) ? r : 0;
    if (cf->dtype == AGMM_DTYPE_INT8)
        return agmm_plan_set_weight_scaled(*plan, 0, in->w[wi], in->ws[wi]);
    return agmm_plan_set_weight(*plan, in->w[wi]);
}

static agmm_status_t run(agmm_plan_t *plan, const inputs_t *in, int r,
                         agmm_schedule_t s, void *c)
{
    agmm_run_args_t a;
    agmm_run_args_init(&a);
    a.schedule = s;
    a.a_local = in->a[r];
    a.a_scale = in->as[r];
    a.c = &c;
    return agmm_plan_run_args(plan, &a);
}

/* Checks of one epilogue; returns 0 or a code. */
static int one_epilogue(agmm_world_t *w, const cfg_t *cf, const inputs_t *in,
                        float *const R[2], const float *ref0, int bias,
                        agmm_activation_t act, agmm_dtype_t out)
{
    int r = agmm_world_rank(w);
    int64_t row0, rows = c_rows(cf, r, &row0), cn = rows * N;
    agmm_plan_t *plan = NULL;
    if (make_plan(w, cf, in, bias, act, out, &plan) != AGMM_OK) return 10;
    /* The engine's kernel stays a fast one: oneDNN's reference kernel is
     * never what runs an epilogue (refused, the plan takes a pass). INT8
     * aside: its primitive is the plain s32 one whatever the epilogue
     * (a pass does it), and at these narrow segments oneDNN 2.6 picks
     * ref_int8:any for it with or without one. */
    agmm_gemm_info_t gi;
    if (agmm_plan_gemm_info(plan, &gi) != AGMM_OK ||
        (cf->dtype != AGMM_DTYPE_INT8 && !strncmp(gi.impl, "ref", 3)) ||
        (strcmp(gi.epilogue, "none") != 0) !=
            (bias || act || out != AGMM_DTYPE_FP32) ||
        !gi.epilogue_isa || strcmp(gi.epilogue_isa, agmm_gemm_epilogue_isa()))
        return 18;
    float *b = test_values(30, N),
          *ref = malloc(sizeof(float) * (size_t)(cn + 1));
    float *pre = malloc(sizeof(float) * (size_t)(cn + 1));
    float *got = malloc(sizeof(float) * (size_t)(cn + 1));
    size_t es = agmm_dtype_size(out);
    unsigned char *want = malloc(4 * (size_t)(cn + 1));
    unsigned char *c[2] = {malloc(es * (size_t)(cn + 1)),
                           malloc(es * (size_t)(cn + 1))};
    int bad = 0;
    for (int round = 0; round < 3 && !bad; round++) {
        /* Round 2: a new bias, set between rounds. */
        if (bias && round == 2)
            for (int j = 0; j < N; j++)
                b[j] = -2 * b[j] + 0.25f;
        if (bias && (round == 0 || round == 2) &&
            agmm_plan_set_bias(plan, 0, b) != AGMM_OK)
            bad = 11;
        int s = round % 2; /* fused, baseline, fused */
        memset(c[s], 0xff, es * (size_t)cn);
        if (!bad &&
            run(plan, in, r, s ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED,
                c[s]) != AGMM_OK)
            bad = 12;
        memcpy(ref, ref0, sizeof(float) * (size_t)cn);
        if (!bad &&
            (agmm_reference_epilogue(rows, N, bias ? b : NULL, AGMM_ACT_NONE,
                                     ref) != AGMM_OK ||
             (memcpy(pre, ref, sizeof(float) * (size_t)cn),
              agmm_reference_epilogue(rows, N, NULL, act, ref)) != AGMM_OK))
            bad = 13;
        agmm_convert_to_fp32(out, c[s], got, (size_t)cn);
        double slope = agmm_activation_max_slope(act);
        double h = out == AGMM_DTYPE_BF16   ? 0x1p-8
                   : out == AGMM_DTYPE_FP16 ? 0x1p-11
                                            : 0;
        for (int64_t i = 0; !bad && i < cn; i++) {
            double bound = slope * 1e-4 * (1 + fabs(pre[i])) +
                           8 * 0x1p-24 * fabs(pre[i]) + h * fabs(ref[i]) +
                           0x1p-24;
            if (!(fabs((double)got[i] - ref[i]) <= bound)) bad = 14;
        }
        /* gemm-rs, gemm-ar: the epilogue once, on the reduced sum of this
         * schedule (gemm-ar: on the owner, before the finished rows are
         * sent): the plain plan's result through the engines' pass. */
        if (!bad && reduces(cf)) {
            agmm_gemm_attr_t at;
            agmm_gemm_attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
            at.bias = bias;
            at.act = (agmm_gemm_act_t)act;
            at.c_dtype = out;
            agmm_gemm_epilogue(&at, rows, N, R[s], N, NULL, 0, NULL,
                               bias ? b : NULL, want, N);
            if (memcmp(want, c[s], es * (size_t)cn)) bad = 15;
        }
        if (round == 1 && !bad && reduces(cf) &&
            !memcmp(R[0], R[1], sizeof(float) * (size_t)cn) &&
            memcmp(c[0], c[1], es * (size_t)cn))
            bad = 16; /* the same sums, other bits after the epilogue */
    }
    free(c[0]), free(c[1]);
    if (agmm_plan_destroy(plan) != AGMM_OK && !bad) bad = 17;
    free(b), free(ref), free(pre), free(got), free(want);
    return bad;
}

/* The refusals of set_bias and of the description. */
static int refusals(agmm_world_t *w, const cfg_t *cf, const inputs_t *in)
{
    agmm_plan_t *plan = NULL;
    float b[N], nanb[N];
    for (int j = 0; j < N; j++)
        b[j] = nanb[j] = 0.5f;
    nanb[7] = NAN;
    if (make_plan(w, cf, in, 0, AGMM_ACT_NONE, AGMM_DTYPE_FP32, &plan) !=
        AGMM_OK)
        return 20;
    int bad = agmm_plan_set_bias(plan, 0, b) != AGMM_ERR_INVALID_ARG ? 21 : 0;
    agmm_plan_destroy(plan);
    if (!bad && make_plan(w, cf, in, 1, AGMM_ACT_NONE, AGMM_DTYPE_FP32,
                          &plan) != AGMM_OK)
        return 22;
    if (!bad && agmm_plan_set_bias(plan, 0, nanb) != AGMM_ERR_INVALID_ARG)
        bad = 23;
    if (!bad && agmm_plan_set_bias(plan, 1, b) != AGMM_ERR_INVALID_ARG)
        bad = 24;
    if (!bad && agmm_plan_set_bias(plan, 0, b) != AGMM_OK) bad = 25;
    agmm_plan_destroy(plan);
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P;
    d.m_local = m_local;
    if (!bad && d.out_dtype != AGMM_DTYPE_FP32) bad = 26;
    d.out_dtype = AGMM_DTYPE_INT8;
    if (!bad && agmm_plan_desc_check(&d) != AGMM_ERR_INVALID_ARG) bad = 27;
    d.out_dtype = AGMM_DTYPE_FP32;
    d.activation = (agmm_activation_t)9;
    if (!bad && agmm_plan_desc_check(&d) != AGMM_ERR_INVALID_ARG) bad = 28;
    return bad;
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    int r = agmm_world_rank(w);
    inputs_t in;
    make_inputs(cf, &in);
    int64_t row0, rows = c_rows(cf, r, &row0), cn = rows * N;
    float *ref = malloc(sizeof(float) * (size_t)(cn + 1));
    float *R[2] = {malloc(sizeof(float) * (size_t)(cn + 1)),
                   malloc(sizeof(float) * (size_t)(cn + 1))};
    agmm_plan_t *plain = NULL;
    int bad = reference(cf, &in, r, ref) ? 1 : 0;
    if (!bad && make_plan(w, cf, &in, 0, AGMM_ACT_NONE, AGMM_DTYPE_FP32,
                          &plain) != AGMM_OK)
        bad = 2;
    for (int s = 0; s < 2 && !bad; s++)
        if (run(plain, &in, r, s ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED,
                R[s]) != AGMM_OK)
            bad = 3;
    if (plain) agmm_plan_destroy(plain);
    const agmm_dtype_t outs[3] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16,
                                  AGMM_DTYPE_FP16};
    for (int act = 0; act <= AGMM_ACT_SILU && !bad; act++)
        for (int o = 0; o < 3 && !bad; o++)
            for (int bias = 0; bias <= 1 && !bad; bias++) {
                int e = one_epilogue(w, cf, &in, R, ref, bias,
                                     (agmm_activation_t)act, outs[o]);
                if (e) {
                    fprintf(stderr,
                            "test_epilogue: rank %d: %s %s %s, activation %s, "
                            "out %s, bias %d: code %d\n",
                            r, agmm_op_name(cf->op),
                            agmm_gemm_engine_name(cf->engine),
                            agmm_dtype_name(cf->dtype),
                            agmm_activation_name((agmm_activation_t)act),
                            agmm_dtype_name(outs[o]), bias, e);
                    bad = 100 + e;
                }
            }
    if (!bad) bad = refusals(w, cf, &in);
    free_inputs(&in);
    free(ref), free(R[0]), free(R[1]);
    return bad;
}

int main(void)
{
    const agmm_gemm_engine_kind_t engines[2] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                                AGMM_GEMM_ENGINE_ONEDNN};
    const agmm_dtype_t dtypes[2] = {AGMM_DTYPE_BF16, AGMM_DTYPE_INT8};
    for (int op = 0; op < 3; op++) /* ag-gemm, gemm-rs, gemm-ar */
        for (int ei = 0; ei < 2; ei++)
            for (int di = 0; di < 2; di++) {
                cfg_t cf = {(agmm_op_t)op, engines[ei], dtypes[di]};
                if (!agmm_gemm_engine_available(cf.engine)) continue;
                if (cf.dtype == AGMM_DTYPE_INT8 &&
                    cf.engine != AGMM_GEMM_ENGINE_ONEDNN)
                    continue; /* int8 needs oneDNN */
                agmm_launch_opts_t o = {0};
                o.nranks = P;
                o.timeout_s = 30;
                o.quiet = 1;
                int code = -1;
                agmm_status_t st = agmm_launch(&o, rank_main, &cf, &code);
                CHECK(st == AGMM_OK && code == 0,
                      "%s, %s, %s: exit code %d (1-3: the reference or the "
                      "plain plan; 100 + what: 10-18 of an epilogue, 14 off "
                      "the reference, 15 gemm-rs not the epilogue of the "
                      "plain sum, 16 fused != baseline, 18 a ref kernel or "
                      "gemm_info's epilogue wrong; 20-28 the "
                      "refusals)",
                      agmm_op_name(cf.op), agmm_gemm_engine_name(cf.engine),
                      agmm_dtype_name(cf.dtype), code);
            }
    CHECK_DONE("test_epilogue");
}
