/* All-gather + GEMM with an activation per weight (agmm_plan_desc_t.
 * activations): a gate and an up projection from one gather, SiLU on one
 * and none on the other, as a Llama MLP has them.
 *
 * Two ranks, uneven shards, three weights of different widths with
 * activations {SiLU, none, ReLU}, a bias per weight and a bf16 or fp32 C,
 * both schedules, every GEMM engine built in, bf16 inputs. Every round:
 *   - each C_i against the reference (agmm_reference with W_i, then
 *     agmm_reference_epilogue with bias_i and activations[i]), within
 *     test_epilogue.c's bound;
 *   - the same for a plan without activations, one with activation SiLU
 *     and one with activations {SiLU, SiLU, SiLU} (SiLU given either way).
 * (Not bit for bit between plans: with oneDNN on AMX an fp32 C's last bit
 * depends on how many rows a call had, which the fused schedule's
 * arrivals decide.)
 * And the refusals: activation and activations both set, an invalid
 * activations[i]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "test_data.h"

#define P  2
#define NW 3
static const int64_t m_local[P] = {21, 11};
static const int64_t n_list[NW] = {40, 24, 17};
enum { K = 48, M = 32 };

typedef struct cfg {
    agmm_gemm_engine_kind_t engine;
    agmm_dtype_t out;
} cfg_t;

/* n values of id in [-2, 2) (test_data.h's, doubled: the same bits as a
 * hash scaled to that range), converted to bf16 (dst) or kept fp32 (dst
 * NULL). */
static float *values(int id, int64_t n, void *dst)
{
    float *f = test_values(id, n);
    for (int64_t i = 0; i < n; i++)
        f[i] = 2.0f * f[i];
    if (dst) agmm_convert_from_fp32(AGMM_DTYPE_BF16, f, dst, (size_t)n);
    return f;
}

typedef struct inputs {
    uint16_t *a[P], *w[NW];
    float *bias[NW];
} inputs_t;

static void make_inputs(inputs_t *in)
{
    for (int p = 0; p < P; p++) {
        in->a[p] = malloc(2 * (size_t)(m_local[p] * K + 1));
        free(values(10 + p, m_local[p] * K, in->a[p]));
    }
    for (int i = 0; i < NW; i++) {
        in->w[i] = malloc(2 * (size_t)(K * n_list[i]));
        free(values(20 + i, K * n_list[i], in->w[i]));
        in->bias[i] = values(30 + i, n_list[i], NULL);
    }
}

static void free_inputs(inputs_t *in)
{
    for (int p = 0; p < P; p++)
        free(in->a[p]);
    for (int i = 0; i < NW; i++)
        free(in->w[i]), free(in->bias[i]);
}

/* A plan of the three weights with biases: activations acts (NULL: act
 * for all), or an agmm status. */
static agmm_status_t make_plan(agmm_world_t *w, const cfg_t *cf,
                               const inputs_t *in, agmm_activation_t act,
                               const agmm_activation_t *acts,
                               agmm_plan_t **plan)
{
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P;
    d.m_local = m_local;
    d.k = K;
    d.n_weights = NW;
    d.n_list = n_list;
    d.tile_m = 8;
    d.tile_n = 16;
    d.dtype = AGMM_DTYPE_BF16;
    d.gemm_engine = cf->engine;
    d.gemm_path =
        agmm_gemm_path_available(cf->engine, d.dtype, AGMM_GEMM_PATH_NATIVE) &&
                cf->engine != AGMM_GEMM_ENGINE_OPENBLAS
            ? AGMM_GEMM_PATH_NATIVE
            : AGMM_GEMM_PATH_F32; /* no measuring */
    d.comm_workers = 1;
    d.gemm_workers = 2;
    d.bias = 1;
    d.activation = act;
    d.activations = acts;
    d.out_dtype = cf->out;
    agmm_status_t st = agmm_plan_create(w, &d, plan);
    for (int i = 0; st == AGMM_OK && i < NW; i++) {
        st = agmm_plan_set_weight_i(*plan, i, in->w[i]);
        if (st == AGMM_OK) st = agmm_plan_set_bias(*plan, i, in->bias[i]);
    }
    return st;
}

/* One round of plan into c[i] ([M, n_i] of the out dtype each). */
static agmm_status_t run(agmm_plan_t *plan, const inputs_t *in, int r,
                         agmm_schedule_t s, void *const c[NW])
{
    agmm_run_args_t a;
    agmm_run_args_init(&a);
    a.schedule = s;
    a.a_local = in->a[r];
    a.c = (void **)c;
    return agmm_plan_run_args(plan, &a);
}

static void *alloc_c(const cfg_t *cf, int i)
{
    return malloc(agmm_dtype_size(cf->out) * (size_t)(M * n_list[i]));
}

/* Each C_i of got against the reference; 0 or a code. */
static int check_ref(const cfg_t *cf, const inputs_t *in,
                     const agmm_activation_t acts[NW], void *const got[NW])
{
    const void *shards[P] = {in->a[0], in->a[1]};
    double h = cf->out == AGMM_DTYPE_BF16 ? 0x1p-8 : 0;
    for (int i = 0; i < NW; i++) {
        int64_t cn = M * n_list[i];
        float *pre = malloc(sizeof(float) * (size_t)cn);
        float *ref = malloc(sizeof(float) * (size_t)cn);
        float *g = malloc(sizeof(float) * (size_t)cn);
        int bad = 0;
        if (agmm_reference(P, shards, m_local, K, n_list[i], AGMM_DTYPE_BF16,
                           in->w[i], pre) != AGMM_OK ||
            agmm_reference_epilogue(M, n_list[i], in->bias[i], AGMM_ACT_NONE,
                                    pre) != AGMM_OK)
            bad = 1;
        memcpy(ref, pre, sizeof(float) * (size_t)cn);
        if (!bad && agmm_reference_epilogue(M, n_list[i], NULL, acts[i], ref) !=
                        AGMM_OK)
            bad = 1;
        agmm_convert_to_fp32(cf->out, got[i], g, (size_t)cn);
        double slope = agmm_activation_max_slope(acts[i]);
        for (int64_t j = 0; !bad && j < cn; j++) {
            double bound = slope * 1e-4 * (1 + fabs(pre[j])) +
                           8 * 0x1p-24 * fabs(pre[j]) + h * fabs(ref[j]) +
                           0x1p-24;
            if (!(fabs((double)g[j] - ref[j]) <= bound)) bad = 2 + i;
        }
        free(pre), free(ref), free(g);
        if (bad) return bad;
    }
    return 0;
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    int r = agmm_world_rank(w);
    inputs_t in;
    make_inputs(&in);
    const agmm_activation_t mixed[NW] = {AGMM_ACT_SILU, AGMM_ACT_NONE,
                                         AGMM_ACT_RELU};
    const agmm_activation_t silu3[NW] = {AGMM_ACT_SILU, AGMM_ACT_SILU,
                                         AGMM_ACT_SILU};
    const agmm_activation_t none3[NW] = {0};
    void *c[NW], *plain[NW], *s1[NW], *s3[NW];
    for (int i = 0; i < NW; i++)
        c[i] = alloc_c(cf, i), plain[i] = alloc_c(cf, i),
        s1[i] = alloc_c(cf, i), s3[i] = alloc_c(cf, i);
    agmm_plan_t *pm = NULL, *pn = NULL, *p1 = NULL, *p3 = NULL;
    int bad = 0;
    if (make_plan(w, cf, &in, AGMM_ACT_NONE, mixed, &pm) != AGMM_OK ||
        make_plan(w, cf, &in, AGMM_ACT_NONE, NULL, &pn) != AGMM_OK ||
        make_plan(w, cf, &in, AGMM_ACT_SILU, NULL, &p1) != AGMM_OK ||
        make_plan(w, cf, &in, AGMM_ACT_NONE, silu3, &p3) != AGMM_OK)
        bad = 10;
    for (int s = 0; s < 2 && !bad; s++) {
        agmm_schedule_t sc = s ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED;
        if (run(pm, &in, r, sc, c) != AGMM_OK ||
            run(pn, &in, r, sc, plain) != AGMM_OK ||
            run(p1, &in, r, sc, s1) != AGMM_OK ||
            run(p3, &in, r, sc, s3) != AGMM_OK)
            bad = 11;
        if (!bad) bad = check_ref(cf, &in, mixed, c);
        if (!bad) bad = check_ref(cf, &in, none3, plain) ? 20 : 0;
        if (!bad) bad = check_ref(cf, &in, silu3, s1) ? 21 : 0;
        if (!bad) bad = check_ref(cf, &in, silu3, s3) ? 22 : 0;
    }
    agmm_plan_destroy(pm), agmm_plan_destroy(pn);
    agmm_plan_destroy(p1), agmm_plan_destroy(p3);
    for (int i = 0; i < NW; i++)
        free(c[i]), free(plain[i]), free(s1[i]), free(s3[i]);
    free_inputs(&in);
    return bad;
}

/* The description's refusals (local: agmm_plan_desc_check). */
static void test_refusals(void)
{
    const agmm_activation_t acts[NW] = {AGMM_ACT_SILU, (agmm_activation_t)9,
                                        AGMM_ACT_NONE};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P;
    d.m_local = m_local;
    d.n_weights = NW;
    d.n_list = n_list;
    d.dtype = AGMM_DTYPE_BF16;
    d.activations = acts;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG,
          "an invalid activations[1] is refused");
    const agmm_activation_t ok[NW] = {AGMM_ACT_SILU, AGMM_ACT_NONE,
                                      AGMM_ACT_GELU_ERF};
    d.activations = ok;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "valid activations pass");
    d.activation = AGMM_ACT_RELU;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG,
          "activation and activations both set are refused");
}

int main(void)
{
    test_refusals();
    const agmm_gemm_engine_kind_t engines[2] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                                AGMM_GEMM_ENGINE_ONEDNN};
    const agmm_dtype_t outs[2] = {AGMM_DTYPE_BF16, AGMM_DTYPE_FP32};
    for (int ei = 0; ei < 2; ei++)
        for (int o = 0; o < 2; o++) {
            cfg_t cf = {engines[ei], outs[o]};
            if (!agmm_gemm_engine_available(cf.engine)) continue;
            agmm_launch_opts_t lo = {0};
            lo.nranks = P;
            lo.timeout_s = 30;
            lo.quiet = 1;
            int code = -1;
            agmm_status_t st = agmm_launch(&lo, rank_main, &cf, &code);
            CHECK(st == AGMM_OK && code == 0,
                  "%s, out %s: exit code %d (2-4: weight 0-2 off the "
                  "reference; 10-11 a plan or a round failed; 20-22 the "
                  "plan without activations, with activation SiLU, with "
                  "activations all SiLU off the reference)",
                  agmm_gemm_engine_name(cf.engine), agmm_dtype_name(cf.out),
                  code);
        }
    CHECK_DONE("test_epilogue_weights");
}
