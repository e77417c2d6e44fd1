/* Plans with quantized weights (agmm.h: desc.weight_dtype, group_size,
 * weight_zero_point, agmm_plan_set_weight_quantized; the wq engine,
 * gemm/wq/engine.c).
 *
 * Every operation (ag-gemm, gemm-rs, gemm-ar) on 1, 2 and 3 ranks of a
 * forked world, int4 and int8, symmetric and asymmetric, groups of 32,
 * 128 and all of k (ag-gemm's k = 100 is no multiple of either; gemm-rs
 * and gemm-ar split k = 296 as {256, 40} and {128, 0, 168}: an empty k
 * part, parts at group boundaries), fp32, bf16 and fp16 A, rows 1, 8 and
 * 33 with an empty shard on rank 1 and uneven ones, both schedules, plain
 * fp32 C, bias + silu + bf16 C and (ag-gemm) bias + silu-mul + bf16 C
 * (the gate and up columns paired from the plain layout); each element
 * of C within the bound of
 * check/wq_ref.h (the dequantized weight exactly, the sums in double)
 * widened for the reduction, the epilogue and the bf16 rounding, against
 * a reference computed here from the plain layout the ranks were given.
 * With a_quant INT8 (W4A8 / W8A8 in groups: two of the formats), A is
 * quantized per row as the library does (check/wq_ref.h; each rank's k
 * part for gemm-rs and gemm-ar), the reference uses those values and the
 * bound is the A8 kernels' (gamma(groups + 4 + P)), tight enough that
 * fp32 C is off the product of A unquantized somewhere; the impl names an
 * A8 kernel, and no prefill path. AGMM_WQ_KERNEL naming an A8 variant
 * (ctest unit_wq_plans_a8_portable: portable-a8, the fallback of a CPU
 * without VNNI) runs those plans only (it would change the others'
 * results), each on that kernel.
 * Then the refusals, by name: the description's fields, set_weight on a
 * quantized plan, set_weight_quantized on a plain one, missing zeros. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "check/wq_ref.h"
#include "test_data.h"

enum { N = 40, KAG = 100, KRS = 296, PMAX = 3 };

typedef struct quant {
    int bits;
    int64_t group;
    int asym;
    agmm_dtype_t dtype; /* A's */
    int a8;             /* a_quant INT8 */
} quant_t;

static const quant_t quants[] = {
    {4, 32, 0, AGMM_DTYPE_BF16, 0}, {4, 128, 1, AGMM_DTYPE_FP32, 0},
    {8, 0, 0, AGMM_DTYPE_FP16, 0},  {8, 32, 1, AGMM_DTYPE_BF16, 0},
    {4, 32, 0, AGMM_DTYPE_BF16, 1}, {8, 0, 0, AGMM_DTYPE_FP32, 1},
};
enum { NQ = sizeof quants / sizeof quants[0] };

typedef struct cfg {
    agmm_op_t op;
    int nranks;
    quant_t q;
} cfg_t;

/* The inner dimension and each rank's part of it (ag-gemm: all of k). */
static int64_t k_parts(const cfg_t *cf, int64_t *kl)
{
    if (cf->op == AGMM_OP_AG_GEMM) {
        for (int r = 0; r < cf->nranks; r++)
            kl[r] = KAG;
        return KAG;
    }
    static const int64_t split[3][3] = {{KRS}, {256, 40}, {128, 0, 168}};
    for (int r = 0; r < cf->nranks; r++)
        kl[r] = split[cf->nranks - 1][r];
    return KRS;
}

/* A weight part in the plain layout: rows [k0, k0 + kp) of W. */
typedef struct part {
    int64_t k0, kp;
    void *q;
    float *s;
    uint8_t *z;
    agmm_wq_desc_t d;
} part_t;

typedef struct problem {
    int64_t k, kl[PMAX], M, m[PMAX], off[PMAX + 1];
    part_t part[PMAX]; /* ag-gemm: part[0] is the whole weight */
    int nparts;
    float *a;    /* [M, k], exactly representable in the A dtype */
    double *aq;  /* [M, k] A as the plan multiplies it (a8: quantized) */
    int64_t ng;  /* the most groups of a k part */
    double *wq;  /* [k, N] the dequantized weight */
    double *mag; /* [k, N] |value| + |scale| (2 zero + 16): wq_ref.h's
                    |scale| (|u| + |zu|) at most */
    float *bias;
} problem_t;

static int make_problem(const cfg_t *cf, int64_t rows, problem_t *pb)
{
    memset(pb, 0, sizeof *pb);
    pb->k = k_parts(cf, pb->kl);
    for (int r = 0; r < cf->nranks; r++) {
        pb->m[r] = r == 1 ? 0 : rows + r; /* uneven, rank 1 empty */
        pb->off[r + 1] = pb->off[r] + pb->m[r];
    }
    pb->M = pb->off[cf->nranks];
    int64_t k = pb->k, M = pb->M;
    float *w = test_values(1, k * N);
    for (int64_t e = 0; e < k * N; e++) /* a spread of magnitudes */
        w[e] *= 0.5f + (float)(e % 7);
    float *a = test_values(2, M * k);
    pb->a = malloc(sizeof(float) * (size_t)(M * k + 1));
    void *tmp = malloc(4 * (size_t)(M * k + 1));
    agmm_convert_from_fp32(cf->q.dtype, a, tmp, (size_t)(M * k));
    agmm_convert_to_fp32(cf->q.dtype, tmp, pb->a, (size_t)(M * k));
    free(tmp);
    free(a);
    pb->bias = test_values(3, N);
    pb->wq = calloc((size_t)(k * N), sizeof(double));
    pb->mag = calloc((size_t)(k * N), sizeof(double));
    pb->nparts = cf->op == AGMM_OP_AG_GEMM ? 1 : cf->nranks;
    int bad = !w || !pb->a || !pb->bias || !pb->wq || !pb->mag;
    for (int r = 0, k0 = 0; r < pb->nparts && !bad; r++) {
        part_t *pt = &pb->part[r];
        pt->k0 = k0;
        pt->kp = cf->op == AGMM_OP_AG_GEMM ? k : pb->kl[r];
        k0 += (int)pt->kp;
        int64_t kp = pt->kp > 0 ? pt->kp : 1,
                G = cf->q.group ? cf->q.group : kp;
        int64_t ng = (kp + G - 1) / G;
        pt->q =
            calloc((size_t)(cf->q.bits == 8 ? kp : (kp + 1) / 2), (size_t)N);
        pt->s = calloc((size_t)(ng * N), sizeof(float));
        pt->z = calloc((size_t)(ng * N), 1);
        if (!pt->q || !pt->s || !pt->z) return 1;
        if (pt->kp == 0) continue; /* nothing to quantize: dummies */
        if (agmm_quantize_weight(w + pt->k0 * N, pt->kp, N, cf->q.bits,
                                 cf->q.group, !cf->q.asym, pt->q, pt->s,
                                 cf->q.asym ? pt->z : NULL) != AGMM_OK)
            return 2;
        pt->d = (agmm_wq_desc_t){.k = pt->kp,
                                 .n = N,
                                 .bits = cf->q.bits,
                                 .group = cf->q.group,
                                 .symmetric = !cf->q.asym,
                                 .q = pt->q,
                                 .scales = pt->s,
                                 .zeros = cf->q.asym ? pt->z : NULL};
        for (int64_t kk = 0; kk < pt->kp; kk++)
            for (int64_t j = 0; j < N; j++) {
                double v = agmm_wq_ref_value(&pt->d, kk, j);
                double s = fabs((double)pt->s[(kk / G) * N + j]);
                double z = cf->q.asym ? pt->z[(kk / G) * N + j] : 0;
                pb->wq[(pt->k0 + kk) * N + j] = v;
                /* a8, int8 symmetric: the kernels multiply q + 128 */
                double o8 =
                    cf->q.a8 && cf->q.bits == 8 && !cf->q.asym ? 256 : 0;
                pb->mag[(pt->k0 + kk) * N + j] =
                    fabs(v) + s * (2 * z + 16 + o8);
            }
        pb->ng = ng > pb->ng ? ng : pb->ng;
    }
    free(w);
    pb->aq = malloc(sizeof(double) * (size_t)(M * k + 1));
    if (!pb->aq) return 4;
    for (int64_t e = 0; e < M * k; e++)
        pb->aq[e] = pb->a[e];
    for (int r = 0; cf->q.a8 && r < pb->nparts; r++) /* per k part */
        agmm_wq_ref_quantize_a(M, pb->part[r].kp, pb->a + pb->part[r].k0, k,
                               pb->aq + pb->part[r].k0, k);
    return bad ? 3 : 0;
}

static void free_problem(problem_t *pb)
{
    for (int r = 0; r < PMAX; r++) {
        free(pb->part[r].q);
        free(pb->part[r].s);
        free(pb->part[r].z);
    }
    free(pb->a);
    free(pb->aq);
    free(pb->wq);
    free(pb->mag);
    free(pb->bias);
}

static void fill_desc(const cfg_t *cf, const problem_t *pb, agmm_plan_desc_t *d)
{
    agmm_plan_desc_init(d);
    d->nranks = cf->nranks;
    d->m_local = pb->m;
    d->k = pb->k;
    d->n = N;
    d->tile_m = 4;
    d->tile_n = 16; /* 3 column blocks on 2 workers: a range from 16 */
    d->dtype = cf->q.dtype;
    d->gemm_workers = 2;
    d->comm_workers = 1;
    d->op = cf->op;
    d->k_local = cf->op == AGMM_OP_AG_GEMM ? NULL : pb->kl;
    d->weight_dtype = cf->q.bits == 4 ? AGMM_WDTYPE_INT4 : AGMM_WDTYPE_INT8;
    d->group_size = cf->q.group;
    d->weight_zero_point = cf->q.asym;
    d->a_quant = cf->q.a8 ? AGMM_AQUANT_INT8 : AGMM_AQUANT_NONE;
    d->timeout_s = 30;
}

/* This rank's A: ag-gemm its rows of A; gemm-rs, gemm-ar all rows of its
 * k part; in the A dtype. */
static void *rank_a(const cfg_t *cf, const problem_t *pb, int r)
{
    int ag = cf->op == AGMM_OP_AG_GEMM;
    int64_t rows = ag ? pb->m[r] : pb->M, cols = ag ? pb->k : pb->kl[r];
    int64_t k0 = ag ? 0 : pb->part[r].k0, r0 = ag ? pb->off[r] : 0;
    float *f = malloc(sizeof(float) * (size_t)(rows * cols + 1));
    void *out = malloc(4 * (size_t)(rows * cols + 1));
    for (int64_t i = 0; f && i < rows; i++)
        for (int64_t kk = 0; kk < cols; kk++)
            f[i * cols + kk] = pb->a[(r0 + i) * pb->k + k0 + kk];
    if (f && out)
        agmm_convert_from_fp32(cf->q.dtype, f, out, (size_t)(rows * cols));
    free(f);
    return out;
}

/* The plan's weight rounding over the bound's gamma: where its engine
 * multiplies bf16 panels of the dequantized weight (the wq engine's
 * prefill path, "bf16 panels" in its impl), each value is rounded to bf16
 * once more, (2^-8 + 2^-23) |a| |w| a term; else 0. Set per plan (one()),
 * and by compare() for its gamma. AGMM_WQ_PREFILL_ROWS=1 (the test
 * unit_wq_plans_prefill_path) makes every call take the path. */
static double g_wround, g_gamma = 1;

/* AGMM_WQ_KERNEL when it names an A8 variant (main: the a8 plans only),
 * else NULL. */
static const char *a8_named(void)
{
    const char *e = getenv("AGMM_WQ_KERNEL");
    return e && (!strcmp(e, "portable-a8") || !strcmp(e, "avx512vnni")) ? e
                                                                        : NULL;
}

/* Row i's column j of A @ W in double, and the bound's sum (S: gamma S
 * is the bound, the weight rounding's term included). */
static double dot(const problem_t *pb, int64_t i, int64_t j, double *S)
{
    const double *ai = pb->aq + i * pb->k;
    double pre = 0, wr = g_wround / g_gamma;
    *S = 0;
    for (int64_t kk = 0; kk < pb->k; kk++) {
        pre += ai[kk] * pb->wq[kk * N + j];
        *S += fabs(ai[kk]) *
              (pb->mag[kk * N + j] + wr * fabs(pb->wq[kk * N + j]));
    }
    return pre;
}

/* The same with A unquantized (a8: what the check must tell apart). */
static double dot_plain(const problem_t *pb, int64_t i, int64_t j)
{
    double pre = 0;
    for (int64_t kk = 0; kk < pb->k; kk++)
        pre += (double)pb->a[i * pb->k + kk] * pb->wq[kk * N + j];
    return pre;
}

/* The gated epilogue's value (silu(g + bg) * (u + bu), W's columns j and
 * N/2 + j) and its bound (each half's, through the product), bf16 C. */
static double glu_ref(const problem_t *pb, int64_t i, int64_t j, double gamma,
                      double *e)
{
    double Sg, Su, h = N / 2;
    double g = dot(pb, i, j, &Sg) + pb->bias[j];
    double u = dot(pb, i, (int64_t)h + j, &Su) + pb->bias[(int64_t)h + j];
    double eg = gamma * Sg + 0x1p-24 * fabs(g);
    double eu = gamma * Su + 0x1p-24 * fabs(u);
    double sg = g / (1 + exp(-g)), y = sg * u;
    double slope = agmm_activation_max_slope(AGMM_ACT_SILU);
    *e = slope * eg * (fabs(u) + eu) + fabs(sg) * eu +
         8 * 0x1p-24 * (1 + fabs(sg)) * (fabs(u) + eu) + 2 * 0x1p-24 * fabs(y) +
         0x1p-8 * fabs(y);
    return y;
}

/* C (rows [r0, r0 + rows) of the whole, out dtype) against the reference:
 * epi 0 A @ W, 1 silu(A @ W + b) in bf16, 2 the gated silu-mul in bf16.
 * a8, epi 0: also some element off A unquantized's product by more than
 * the bound (else 1: the check could not tell). */
static int compare(const cfg_t *cf, const problem_t *pb, int epi, const void *c,
                   int64_t r0, int64_t rows, int rank)
{
    agmm_dtype_t out = epi ? AGMM_DTYPE_BF16 : AGMM_DTYPE_FP32;
    int64_t nc = epi == 2 ? N / 2 : N;
    float *got = malloc(sizeof(float) * (size_t)(rows * nc + 1));
    if (!got) return 1;
    agmm_convert_to_fp32(out, c, got, (size_t)(rows * nc));
    int64_t k = pb->k, G = cf->q.group ? cf->q.group : k;
    double n = cf->q.a8 ? (double)pb->ng + 4 + cf->nranks /* A8 kernels */
                        : 2.0 * (double)(G > k ? G : k) + 16 + cf->nranks;
    double gamma = n * 0x1p-24 / (1 - n * 0x1p-24);
    g_gamma = gamma;
    double slope = epi ? agmm_activation_max_slope(AGMM_ACT_SILU) : 1;
    int bad = 0;
    int64_t apart = 0;
    for (int64_t i = 0; i < rows && !bad; i++)
        for (int64_t j = 0; j < nc && !bad; j++) {
            double S, pre = dot(pb, r0 + i, j, &S);
            double x = pre, e = gamma * S;
            if (epi == 2) {
                x = glu_ref(pb, r0 + i, j, gamma, &e);
            } else if (epi) {
                x = pre + pb->bias[j];
                e += 0x1p-24 * fabs(x);
                x = x / (1 + exp(-x)); /* silu */
                e = slope * e + 8 * 0x1p-24 * (1 + fabs(x)) + 0x1p-8 * fabs(x);
            }
            double g = got[i * nc + j];
            if (!epi) apart += !(fabs(g - dot_plain(pb, r0 + i, j)) <= e);
            if (!(fabs(g - x) <= e)) {
                fprintf(stderr,
                        "rank %d: C[%lld,%lld] = %.9g, want %.9g (bound "
                        "%.3g)\n",
                        rank, (long long)(r0 + i), (long long)j, g, x, e);
                bad = 1;
            }
        }
    if (!bad && cf->q.a8 && !epi && rows > 0 && apart == 0) {
        fprintf(stderr,
                "rank %d: a8: every element within the bound of A "
                "unquantized's product\n",
                rank);
        bad = 1;
    }
    free(got);
    return bad;
}

static int set_weight(const cfg_t *cf, const problem_t *pb, agmm_plan_t *p,
                      int r)
{
    const part_t *pt = &pb->part[cf->op == AGMM_OP_AG_GEMM ? 0 : r];
    return agmm_plan_set_weight_quantized(p, 0, pt->q, pt->s,
                                          cf->q.asym ? pt->z : NULL) != AGMM_OK;
}

/* One plan: rows per shard from `rows`, epi 0 plain fp32 C, 1 bias +
 * silu + bf16 C, 2 (ag-gemm) bias + silu-mul + bf16 C (W's N columns
 * [gate | up], C's N/2); both schedules. */
static int one(agmm_world_t *w, const cfg_t *cf, int64_t rows, int epi)
{
    int r = agmm_world_rank(w);
    problem_t pb;
    int bad = make_problem(cf, rows, &pb) ? 10 : 0;
    agmm_plan_desc_t d;
    fill_desc(cf, &pb, &d);
    if (epi) {
        d.bias = 1;
        d.activation = epi == 2 ? AGMM_ACT_SILU_MUL : AGMM_ACT_SILU;
        d.out_dtype = AGMM_DTYPE_BF16;
    }
    agmm_plan_t *plan = NULL;
    if (!bad && agmm_plan_create(w, &d, &plan) != AGMM_OK) bad = 11;
    if (!bad && set_weight(cf, &pb, plan, r)) bad = 12;
    if (!bad && epi && agmm_plan_set_bias(plan, 0, pb.bias) != AGMM_OK)
        bad = 13;
    /* Local findings wait for the end: the runs are collective. An empty
     * k part prepares nothing (no impl). */
    int late = 0, has_k = cf->op == AGMM_OP_AG_GEMM || pb.kl[r] > 0;
    agmm_gemm_info_t gi;
    if (!bad &&
        (agmm_plan_gemm_info(plan, &gi) != AGMM_OK ||
         gi.engine != AGMM_GEMM_ENGINE_WQ || strcmp(gi.name, "wq") ||
         (has_k && strncmp(gi.impl, "wq:", 3)) ||
         (cf->q.dtype != AGMM_DTYPE_FP32 && gi.path != AGMM_GEMM_PATH_NATIVE) ||
         (has_k && cf->q.a8 &&
          (strncmp(gi.impl, "wq:avx512vnni ", 14) &&
           strncmp(gi.impl, "wq:portable-a8 ", 15))) ||
         (cf->q.a8 && strstr(gi.impl, "prefill")) ||
         (has_k && a8_named() &&
          (strncmp(gi.impl + 3, a8_named(), strlen(a8_named())) ||
           gi.impl[3 + strlen(a8_named())] != ' '))))
        late = 14;
    /* AGMM_WQ_PREFILL_ROWS=1: every call of fp32 A takes the prefill
     * path (the CBLAS sgemm at least is always there), and the impl names
     * it; bf16 A takes it where oneDNN or OpenBLAS's sbgemm is (not
     * Debian 12's OpenBLAS: a build without oneDNN keeps the kernels). */
    const char *pf = getenv("AGMM_WQ_PREFILL_ROWS");
    if (!bad && !late && has_k && pf && strcmp(pf, "1") == 0 && !cf->q.a8 &&
        cf->q.dtype == AGMM_DTYPE_FP32 && !strstr(gi.impl, "; prefill >= 1 "))
        late = 14;
    /* A rank without a k part (no impl) sums the others' partials: it
     * allows the rounding wherever they could have taken the path. */
    g_wround = !bad && !cf->q.a8 && /* a8: never the prefill path */
                       (strstr(gi.impl, "bf16 panels") ||
                        (!has_k && cf->q.dtype == AGMM_DTYPE_BF16))
                   ? 0x1p-8 + 0x1p-23
                   : 0;
    /* One rank: what it holds is what the description books. */
    if (!bad && cf->nranks == 1 &&
        agmm_plan_bytes_held(plan) != agmm_plan_bytes_per_rank(&d))
        late = 15;
    int rs = cf->op == AGMM_OP_GEMM_RS;
    int64_t crows = rs ? pb.m[r] : pb.M, r0 = rs ? pb.off[r] : 0;
    size_t es = epi ? 2 : 4;
    size_t cells = (size_t)(crows * (epi == 2 ? N / 2 : N));
    void *a = rank_a(cf, &pb, r);
    unsigned char *c = malloc(es * cells + 16);
    for (int s = 0; s < 2 && !bad; s++) {
        memset(c, 0xff, es * cells + 16);
        agmm_schedule_t sch = s ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED;
        if (agmm_plan_run(plan, sch, a, c) != AGMM_OK) bad = 16;
        for (int e = 0; e < 16 && !bad; e++)
            if (c[es * cells + (size_t)e] != 0xff) bad = 17;
        if (!bad && compare(cf, &pb, epi, c, r0, crows, r)) bad = 18 + s;
    }
    if (plan && agmm_plan_destroy(plan) != AGMM_OK && !bad) bad = 20;
    if (!bad) bad = late;
    free(a);
    free(c);
    free_problem(&pb);
    return bad;
}

/* The calls a quantized plan refuses, and a plain plan's refusal of
 * set_weight_quantized (one rank). */
static int call_refusals(agmm_world_t *w, const cfg_t *cf)
{
    problem_t pb;
    if (make_problem(cf, 3, &pb)) return 30;
    agmm_plan_desc_t d;
    fill_desc(cf, &pb, &d);
    agmm_plan_t *plan = NULL;
    int bad = agmm_plan_create(w, &d, &plan) != AGMM_OK ? 31 : 0;
    float wf[KAG * N] = {0};
    if (!bad && (agmm_plan_set_weight(plan, wf) != AGMM_ERR_INVALID_ARG ||
                 !strstr(agmm_last_error(), "set_weight") ||
                 !strstr(agmm_last_error(), "weight_dtype")))
        bad = 32;
    if (!bad && cf->q.asym &&
        (agmm_plan_set_weight_quantized(plan, 0, pb.part[0].q, pb.part[0].s,
                                        NULL) != AGMM_ERR_INVALID_ARG ||
         !strstr(agmm_last_error(), "zeros")))
        bad = 33;
    if (!bad &&
        (agmm_plan_set_weight_quantized(plan, 1, pb.part[0].q, pb.part[0].s,
                                        pb.part[0].z) != AGMM_ERR_INVALID_ARG))
        bad = 34;
    /* A non-finite scale, named as the caller indexes it (group 1, column
     * 3: where there is a second group). */
    int two = cf->q.group > 0 && KAG > cf->q.group;
    float keep = two ? pb.part[0].s[N + 3] : 0;
    if (two) pb.part[0].s[N + 3] = NAN;
    if (!bad && two &&
        (agmm_plan_set_weight_quantized(plan, 0, pb.part[0].q, pb.part[0].s,
                                        pb.part[0].z) != AGMM_ERR_INVALID_ARG ||
         !strstr(agmm_last_error(), "scales[1][3]")))
        bad = 37;
    if (two) pb.part[0].s[N + 3] = keep;
    if (plan) agmm_plan_destroy(plan);
    plan = NULL;
    d.weight_dtype = AGMM_WDTYPE_SAME;
    d.a_quant = AGMM_AQUANT_NONE;
    if (!bad && agmm_plan_create(w, &d, &plan) != AGMM_OK) bad = 35;
    if (!bad &&
        (agmm_plan_set_weight_quantized(plan, 0, pb.part[0].q, pb.part[0].s,
                                        pb.part[0].z) != AGMM_ERR_INVALID_ARG ||
         !strstr(agmm_last_error(), "set_weight_quantized")))
        bad = 36;
    if (plan) agmm_plan_destroy(plan);
    free_problem(&pb);
    return bad;
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    static const int64_t rows[3] = {1, 8, 33};
    int epis = cf->op == AGMM_OP_AG_GEMM ? 3 : 2; /* gated: ag-gemm only */
    for (int ri = 0; ri < 3; ri++)
        for (int epi = 0; epi < epis; epi++) {
            int e = one(w, cf, rows[ri], epi);
            if (e) {
                fprintf(stderr,
                        "test_wq_plan: rank %d of %d: %s int%d g%lld %s%s, "
                        "A %s, rows %lld, %s: code %d\n",
                        agmm_world_rank(w), cf->nranks, agmm_op_name(cf->op),
                        cf->q.bits, (long long)cf->q.group,
                        cf->q.asym ? "asym" : "sym", cf->q.a8 ? " a8" : "",
                        agmm_dtype_name(cf->q.dtype), (long long)rows[ri],
                        epi == 2 ? "bias+silu-mul+bf16"
                        : epi    ? "bias+silu+bf16"
                                 : "fp32",
                        e);
                return 100 + e;
            }
        }
    if (cf->nranks == 1 && cf->op == AGMM_OP_AG_GEMM) {
        int e = call_refusals(w, cf);
        if (e)
            fprintf(stderr, "test_wq_plan: refusal code %d: %s\n", e,
                    agmm_last_error());
        return e ? 100 + e : 0;
    }
    return 0;
}

/* The description's refusals, each naming the field. */
static void desc_refusals(void)
{
    int64_t m[3] = {4, 4, 4}, kl[3] = {40, 96, 8};
    agmm_plan_desc_t d, base;
    agmm_plan_desc_init(&base);
    base.m_local = m;
    base.k = 144;
    base.n = 32;
    base.dtype = AGMM_DTYPE_BF16;
    base.weight_dtype = AGMM_WDTYPE_INT4;
    base.group_size = 32;
    CHECK(agmm_plan_desc_check(&base) == AGMM_OK, "int4 desc: %s",
          agmm_last_error());
    struct {
        const char *what, *names;
        agmm_status_t want;
    } cases[] = {
        {"weight_dtype 7", "weight_dtype", AGMM_ERR_INVALID_ARG},
        {"group_size 48", "group_size", AGMM_ERR_INVALID_ARG},
        {"weight_zero_point 2", "weight_zero_point", AGMM_ERR_INVALID_ARG},
        {"int8 A", "dtype int8", AGMM_ERR_UNSUPPORTED},
        {"openblas", "gemm_engine openblas", AGMM_ERR_UNSUPPORTED},
        {"k split", "group_size 32", AGMM_ERR_INVALID_ARG},
        {"wq engine, plain fp16 W", "gemm_engine wq", AGMM_ERR_UNSUPPORTED},
        {"a_quant 5", "a_quant", AGMM_ERR_INVALID_ARG},
        {"a_quant int8, plain W", "a_quant int8", AGMM_ERR_UNSUPPORTED},
        {"k x n over 2^40", "at most 2^40", AGMM_ERR_TOO_LARGE},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        d = base;
        switch (i) {
        case 0:
            d.weight_dtype = (agmm_wdtype_t)7;
            break;
        case 1:
            d.group_size = 48;
            break;
        case 2:
            d.weight_zero_point = 2;
            break;
        case 3:
            d.dtype = AGMM_DTYPE_INT8;
            break;
        case 4:
            d.gemm_engine = AGMM_GEMM_ENGINE_OPENBLAS;
            break;
        case 5:
            d.op = AGMM_OP_GEMM_RS;
            d.nranks = 3;
            d.k_local = kl; /* rank 0's 40 straddles a group of 32 */
            break;
        case 6: /* a plain bf16 W is the bf16-weight kernel's (below) */
            d.weight_dtype = AGMM_WDTYPE_SAME;
            d.gemm_engine = AGMM_GEMM_ENGINE_WQ;
            d.dtype = AGMM_DTYPE_FP16;
            break;
        case 7:
            d.a_quant = (agmm_aquant_t)5;
            break;
        case 8:
            d.weight_dtype = AGMM_WDTYPE_SAME;
            d.a_quant = AGMM_AQUANT_INT8;
            break;
        case 9: /* the packed layout's limit, one element over */
            d.k = (int64_t)1 << 20;
            d.n = ((int64_t)1 << 20) + 1;
            break;
        }
        agmm_status_t st = agmm_plan_desc_check(&d);
        CHECK(st == cases[i].want && strstr(agmm_last_error(), cases[i].names),
              "%s: status %s, message '%s' (want %s naming '%s')",
              cases[i].what, agmm_status_str(st), agmm_last_error(),
              agmm_status_str(cases[i].want), cases[i].names);
    }
    /* Exactly 2^40 elements is within the limit (a description's check:
     * nothing is allocated). */
    d = base;
    d.k = d.n = (int64_t)1 << 20;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "k x n = 2^40 refused: %s",
          agmm_last_error());
    /* A plain bf16 W on the wq engine: agmm's bf16-weight kernel. */
    d = base;
    d.weight_dtype = AGMM_WDTYPE_SAME;
    d.gemm_engine = AGMM_GEMM_ENGINE_WQ;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "wq engine, plain bf16 W: %s",
          agmm_last_error());
    /* A gated activation is fine (ag-gemm: the gate and up columns are
     * paired from the plain layout); gemm-rs refuses it as for any W. */
    d = base;
    d.activation = AGMM_ACT_SILU_MUL;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "int4 silu-mul: %s",
          agmm_last_error());
    /* The same split at group boundaries, and G = 0, are fine. */
    d = base;
    d.op = AGMM_OP_GEMM_RS;
    d.nranks = 3;
    kl[0] = 64, kl[1] = 72, kl[2] = 8;
    d.k_local = kl;
    CHECK(agmm_plan_desc_check(&d) != AGMM_OK, "72 is no multiple of 32");
    kl[1] = 32, kl[2] = 48;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "k split 64/32/48: %s",
          agmm_last_error());
    kl[0] = 40, kl[1] = 96, kl[2] = 8;
    d.group_size = 0;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "group_size 0: %s",
          agmm_last_error());
    CHECK(!strcmp(agmm_wdtype_name(AGMM_WDTYPE_INT4), "int4") &&
              !strcmp(agmm_wdtype_name(AGMM_WDTYPE_SAME), "same") &&
              !strcmp(agmm_wdtype_name((agmm_wdtype_t)9), "invalid") &&
              !strcmp(agmm_aquant_name(AGMM_AQUANT_INT8), "int8") &&
              !strcmp(agmm_aquant_name(AGMM_AQUANT_NONE), "none") &&
              !strcmp(agmm_aquant_name((agmm_aquant_t)3), "invalid") &&
              !strcmp(agmm_gemm_engine_name(AGMM_GEMM_ENGINE_WQ), "wq"),
          "names");
}

int main(void)
{
    desc_refusals();
    static const agmm_op_t ops[3] = {AGMM_OP_AG_GEMM, AGMM_OP_GEMM_RS,
                                     AGMM_OP_GEMM_AR};
    for (int o = 0; o < 3; o++)
        for (int np = 1; np <= PMAX; np++)
            for (int qi = 0; qi < NQ; qi++) {
                if (a8_named() && !quants[qi].a8) continue;
                cfg_t cf = {ops[o], np, quants[qi]};
                agmm_launch_opts_t lo = {0};
                lo.nranks = np;
                lo.timeout_s = 60;
                lo.quiet = 1;
                int code = -1;
                agmm_status_t st = agmm_launch(&lo, rank_main, &cf, &code);
                CHECK(st == AGMM_OK && code == 0,
                      "%s, %d rank(s), int%d g%lld %s%s: exit code %d (100 + "
                      "what: 10 inputs, 11-13 plan, weight, bias, 14 "
                      "gemm_info, 15 bytes held != booked, 16 run, 17 wrote "
                      "past C, 18-19 off the oracle (fused, baseline), 30-37 "
                      "the call refusals)",
                      agmm_op_name(ops[o]), np, quants[qi].bits,
                      (long long)quants[qi].group,
                      quants[qi].asym ? "asym" : "sym",
                      quants[qi].a8 ? " a8" : "", code);
            }
    CHECK_DONE("test_wq_plan");
}
