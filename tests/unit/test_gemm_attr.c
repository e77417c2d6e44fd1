/* GEMM attributes (src/gemm/engine.h), every engine built in, against a
 * double-precision reference computed here from the same dtype-rounded
 * inputs:
 *   - dtypes fp32 / bf16 / fp16 in (A in the engine's input dtype; also A
 *     in fp32 on a 16-bit weight), each attribute alone and combinations
 *     (accumulate + bias + act, c_dtype bf16 with bias + gelu, ...), at odd
 *     shapes (k = 1, ncols = 1, ncols not a multiple of 64, lda > k,
 *     ldw > ncols, ldc > ncols with the cells past ncols untouched), for
 *     m = 1, prepared row counts and one not prepared (on demand);
 *   - tolerances from k, the magnitudes and the dtypes;
 *   - accumulate bit for bit: C = fl(C_old + the engine's plain result),
 *     at k = 4096 (oneDNN and OpenBLAS block over K there), dense C and
 *     ldc > ncols, for a prepared row count and one made on demand;
 *   - a prep made with `share` reads its base's weight after a reload of
 *     the base, and refuses load;
 *   - estimate == what prepare took (weight_bytes, scratch_bytes);
 *   - what an engine cannot do is refused with AGMM_ERR_UNSUPPORTED and a
 *     message naming the attribute (never computed otherwise). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/convert.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
#include "gemm/gemm.h"

enum { MMAX = 40, NVAL = 8 };
static const int64_t k_prepared[] = {1, 16, 37};
static const int64_t k_runs[] = {1, 16, 37, 23}; /* 23: on demand */

typedef struct {
    int64_t k, ncols, ldw, lda, ldc;
} shape_t;
static const shape_t k_shapes[] = {
    {67, 150, 170, 70, 157}, {1, 1, 3, 2, 2}, {33, 70, 70, 33, 80}};

typedef struct {
    const char *name; /* the attribute a refusal must name */
    int accumulate, bias, a_scale, w_scale, a32;
    agmm_gemm_act_t act;
    agmm_dtype_t c_dtype;
} case_t;
static const case_t k_cases[] = {
    {"plain", 0, 0, 0, 0, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP32},
    {"accumulate", 1, 0, 0, 0, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP32},
    {"bias", 0, 1, 0, 0, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP32},
    {"relu", 0, 0, 0, 0, 0, AGMM_GEMM_ACT_RELU, AGMM_DTYPE_FP32},
    {"gelu-tanh", 0, 0, 0, 0, 0, AGMM_GEMM_ACT_GELU_TANH, AGMM_DTYPE_FP32},
    {"gelu-erf", 0, 0, 0, 0, 0, AGMM_GEMM_ACT_GELU_ERF, AGMM_DTYPE_FP32},
    {"silu", 0, 0, 0, 0, 0, AGMM_GEMM_ACT_SILU, AGMM_DTYPE_FP32},
    {"c_dtype bf16", 0, 0, 0, 0, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_BF16},
    {"c_dtype fp16", 0, 0, 0, 0, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP16},
    {"a_scale", 0, 0, 1, 0, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP32},
    {"w_scale", 0, 0, 0, 1, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP32},
    {"a_dtype fp32", 0, 1, 0, 0, 1, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP32},
    {"accumulate", 1, 1, 0, 0, 0, AGMM_GEMM_ACT_GELU_TANH, AGMM_DTYPE_FP32},
    {"c_dtype bf16", 0, 1, 0, 0, 0, AGMM_GEMM_ACT_GELU_ERF, AGMM_DTYPE_BF16},
    {"c_dtype bf16", 1, 0, 0, 0, 0, AGMM_GEMM_ACT_RELU, AGMM_DTYPE_BF16},
    {"w_scale", 0, 1, 0, 1, 0, AGMM_GEMM_ACT_NONE, AGMM_DTYPE_FP32},
    {"a_scale", 1, 1, 1, 1, 0, AGMM_GEMM_ACT_SILU, AGMM_DTYPE_FP32},
};
#define NCASES ((int)(sizeof k_cases / sizeof k_cases[0]))

static float val(uint64_t i, uint64_t salt)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ salt * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return (float)((double)(h >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

/* n values in dt (and their fp32 values, rounded through dt). */
static void *make(agmm_dtype_t dt, size_t n, uint64_t salt, float *f32)
{
    void *v = malloc(n * agmm_dtype_size(dt) + 4);
    for (size_t i = 0; i < n; i++)
        f32[i] = val(i, salt);
    agmm_convert_from_f32(dt, f32, v, n);
    agmm_convert_to_f32(dt, v, f32, n);
    return v;
}

static double act_d(agmm_gemm_act_t act, double x)
{
    switch (act) {
    case AGMM_GEMM_ACT_RELU:
        return x > 0 ? x : 0;
    case AGMM_GEMM_ACT_GELU_TANH:
        return 0.5 * x *
               (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case AGMM_GEMM_ACT_GELU_ERF:
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case AGMM_GEMM_ACT_SILU:
        return x / (1 + exp(-x));
    default:
        return x;
    }
}

static float get_c(agmm_dtype_t dt, const void *c, size_t i)
{
    float f;
    agmm_convert_to_f32(dt, (const unsigned char *)c + i * agmm_dtype_size(dt),
                        &f, 1);
    return f;
}

/* Everything one case at one shape needs. */
typedef struct {
    const agmm_gemm_engine_t *e;
    agmm_dtype_t dt;
    shape_t s;
    float *w32, *a32, *bias, *ws, *as, *c32; /* fp32 values */
    void *w, *a, *c_old;                     /* as given to the engine */
} data_t;

static void data_make(data_t *d, agmm_dtype_t a_dt, agmm_dtype_t c_dt,
                      uint64_t salt)
{
    const shape_t *s = &d->s;
    size_t nw = (size_t)(s->k * s->ldw), na = (size_t)(MMAX * s->lda),
           nc = (size_t)(MMAX * s->ldc);
    d->w32 = malloc(nw * 4);
    d->a32 = malloc(na * 4);
    d->c32 = malloc(nc * 4);
    d->w = make(d->dt, nw, salt + 1, d->w32);
    d->a =
        make(d->dt, na, salt + 2, d->a32); /* rounded through the user dtype */
    if (a_dt != d->dt) {                   /* the same values, as a_dt */
        free(d->a);
        d->a = malloc(na * agmm_dtype_size(a_dt));
        agmm_convert_from_f32(a_dt, d->a32, d->a, na);
    }
    d->c_old = make(c_dt, nc, salt + 3, d->c32);
    d->bias = malloc((size_t)s->ncols * 4);
    d->ws = malloc((size_t)s->ncols * 4);
    d->as = malloc(MMAX * 4);
    for (int64_t j = 0; j < s->ncols; j++) {
        d->bias[j] = val((uint64_t)j, salt + 4);
        d->ws[j] = 0.5f + fabsf(val((uint64_t)j, salt + 5));
    }
    for (int i = 0; i < MMAX; i++)
        d->as[i] = 0.5f + fabsf(val((uint64_t)i, salt + 6));
}

static void data_free(data_t *d)
{
    free(d->w32);
    free(d->a32);
    free(d->c32);
    free(d->w);
    free(d->a);
    free(d->c_old);
    free(d->bias);
    free(d->ws);
    free(d->as);
}

/* Run m rows of case cs on prep and compare with the reference. */
static int check_run(const data_t *d, const case_t *cs,
                     const agmm_gemm_attr_t *at, agmm_gemm_prep_t *prep,
                     int64_t m, void *scratch, const char *what)
{
    const shape_t *s = &d->s;
    size_t ces = agmm_dtype_size(at->c_dtype), nc = (size_t)(MMAX * s->ldc);
    void *c = malloc(nc * ces);
    memcpy(c, d->c_old, nc * ces);
    agmm_status_t st =
        d->e->run(prep, m, d->a, cs->a_scale ? d->as : NULL, c, scratch);
    int bad = st != AGMM_OK;
    double eps_c = at->c_dtype == AGMM_DTYPE_BF16   ? 1.0 / 256
                   : at->c_dtype == AGMM_DTYPE_FP16 ? 1.0 / 2048
                                                    : 0;
    for (int64_t i = 0; i < MMAX && !bad; i++)
        for (int64_t j = 0; j < s->ldc && !bad; j++) {
            float got = get_c(at->c_dtype, c, (size_t)(i * s->ldc + j));
            float old = d->c32[i * s->ldc + j];
            if (i >= m || j >= s->ncols) { /* untouched */
                bad = memcmp(&got, &old, 4) != 0;
                if (bad)
                    fprintf(stderr,
                            "  %s: row %lld col %lld (not C's): %.9g, was "
                            "%.9g\n",
                            what, (long long)i, (long long)j, got, old);
                continue;
            }
            double acc = 0, mag = 0;
            for (int64_t p = 0; p < s->k; p++) {
                double t = (double)d->a32[i * s->lda + p] *
                           (double)d->w32[p * s->ldw + j];
                acc += t;
                mag += fabs(t);
            }
            double sc =
                (cs->a_scale ? d->as[i] : 1) * (cs->w_scale ? d->ws[j] : 1);
            double v = sc * acc + (cs->bias ? d->bias[j] : 0) +
                       (cs->accumulate ? old : 0);
            double tol =
                (double)(s->k + 4) * 0x1p-23 *
                    (sc * mag + fabs(v) + (cs->bias ? fabs(d->bias[j]) : 0) +
                     (cs->accumulate ? fabs(old) : 0)) +
                1e-6 * (1 + fabs(v));
            double ref = act_d(cs->act, v);
            tol = 1.2 * tol + eps_c * fabs(ref) + 1e-7;
            if (fabs((double)got - ref) > tol) {
                fprintf(stderr,
                        "  %s: row %lld col %lld: %.9g, want %.9g (tol %.3g)\n",
                        what, (long long)i, (long long)j, got, ref, tol);
                bad = 1;
            }
        }
    free(c);
    return !bad;
}

/* The oneDNN engine's column parts for every attr made here (engine.h:
 * part_cols, part_buf_rows; 0: the engine's own). */
static int64_t g_part_cols, g_part_rows;

static void attr_init(agmm_gemm_attr_t *at, agmm_dtype_t a, agmm_dtype_t w)
{
    agmm_gemm_attr_init(at, a, w);
    at->part_cols = g_part_cols;
    at->part_buf_rows = g_part_rows;
}

static void fill_attr(agmm_gemm_attr_t *at, const data_t *d, const case_t *cs)
{
    attr_init(at, cs->a32 ? AGMM_DTYPE_FP32 : d->e->input_dtype(d->dt), d->dt);
    at->accumulate = cs->accumulate;
    at->bias = cs->bias;
    at->a_scale = cs->a_scale;
    at->w_scale = cs->w_scale;
    at->act = cs->act;
    at->c_dtype = cs->c_dtype;
}

static void test_case(const agmm_gemm_engine_t *e, agmm_dtype_t dt,
                      const case_t *cs, const shape_t *sh, int *refused)
{
    data_t d = {.e = e, .dt = dt, .s = *sh};
    agmm_gemm_attr_t at;
    fill_attr(&at, &d, cs);
    agmm_gemm_shape_t shape = {sh->k,   sh->ncols,  sh->ldw, sh->lda,
                               sh->ldc, k_prepared, 3,       0};
    char what[160];
    snprintf(what, sizeof what,
             "%s %s %s k=%lld ncols=%lld (%s%s%s%s%s, act %s, c %s)", e->name,
             agmm_dtype_name(dt), cs->name, (long long)sh->k,
             (long long)sh->ncols, cs->accumulate ? "acc " : "",
             cs->bias ? "bias " : "", cs->a_scale ? "a_scale " : "",
             cs->w_scale ? "w_scale " : "", cs->a32 ? "a fp32" : "",
             agmm_gemm_act_name(cs->act), agmm_dtype_name(cs->c_dtype));
    uint64_t ew = 0, es = 0;
    agmm_status_t est = e->estimate(&shape, &at, 0, &ew, &es);
    agmm_gemm_prep_t *prep = NULL;
    agmm_status_t st = e->prepare(&shape, &at, NULL, &prep);
    CHECK(st == est, "%s: estimate %d, prepare %d", what, est, st);
    if (st == AGMM_ERR_UNSUPPORTED) {
        CHECK(strstr(agmm_last_error(), cs->name) != NULL,
              "%s: refusal does not name '%s': %s", what, cs->name,
              agmm_last_error());
        *refused = 1;
        return;
    }
    CHECK(st == AGMM_OK, "%s: prepare: %s", what, agmm_last_error());
    if (st != AGMM_OK) return;
    CHECK(e->weight_bytes(prep) == ew && e->scratch_bytes(prep) == es,
          "%s: estimate %llu + %llu, prepared %llu + %zu", what,
          (unsigned long long)ew, (unsigned long long)es,
          (unsigned long long)e->weight_bytes(prep), e->scratch_bytes(prep));
    data_make(&d, at.a_dtype, at.c_dtype, (uint64_t)sh->k * 131 + (uint64_t)dt);
    agmm_gemm_operand_t op = {.w = d.w,
                              .bias = cs->bias ? d.bias : NULL,
                              .w_scale = cs->w_scale ? d.ws : NULL};
    CHECK(e->load(prep, &op) == AGMM_OK, "%s: load: %s", what,
          agmm_last_error());
    size_t sb = e->scratch_bytes(prep);
    void *scratch = sb ? malloc(sb) : NULL;
    for (int r = 0; r < 4; r++)
        CHECK(check_run(&d, cs, &at, prep, k_runs[r], scratch, what),
              "%s m=%lld: wrong result (%s)", what, (long long)k_runs[r],
              agmm_last_error());
    free(scratch);
    e->destroy(prep);
    data_free(&d);
}

/* Accumulate bit for bit, at k = 4096, through a prep sharing the plain
 * one's weight; then the base reloaded with another weight: the shared
 * prep must read the new one. */
static void test_accumulate_bits(const agmm_gemm_engine_t *e, agmm_dtype_t dt,
                                 int64_t LDC)
{
    enum { K = 4096, NC = 96, M = 32 };
    static const int64_t rows[] = {M};
    data_t d = {.e = e, .dt = dt, .s = {K, NC, NC, K, LDC}};
    agmm_gemm_attr_t plain, acc;
    attr_init(&plain, e->input_dtype(dt), dt);
    acc = plain;
    acc.accumulate = 1;
    agmm_gemm_shape_t shape = {K, NC, NC, K, LDC, rows, 1, 0};
    agmm_gemm_prep_t *base = NULL, *sh = NULL;
    CHECK(e->prepare(&shape, &plain, NULL, &base) == AGMM_OK &&
              e->prepare(&shape, &acc, base, &sh) == AGMM_OK,
          "%s %s: prepare: %s", e->name, agmm_dtype_name(dt),
          agmm_last_error());
    if (!base || !sh) {
        if (base) e->destroy(base);
        return;
    }
    uint64_t ew = 1, es = 0;
    CHECK(e->estimate(&shape, &acc, 1, &ew, &es) == AGMM_OK && ew == 0 &&
              e->weight_bytes(sh) == 0 && es == e->scratch_bytes(sh),
          "%s: shared estimate %llu + %llu, prepared %llu + %zu", e->name,
          (unsigned long long)ew, (unsigned long long)es,
          (unsigned long long)e->weight_bytes(sh), e->scratch_bytes(sh));
    size_t sb = e->scratch_bytes(base) > e->scratch_bytes(sh)
                    ? e->scratch_bytes(base)
                    : e->scratch_bytes(sh);
    void *scratch = sb ? malloc(sb) : NULL;
    float *p = calloc(M * LDC, 4), *c = malloc(M * LDC * 4), *p0 = NULL;
    for (int load = 0; load < 2; load++) {
        data_make(&d, plain.a_dtype, AGMM_DTYPE_FP32, 7 + (uint64_t)load);
        agmm_gemm_operand_t op = {.w = d.w, .bias = NULL, .w_scale = NULL};
        CHECK(e->load(base, &op) == AGMM_OK, "%s: load", e->name);
        CHECK(e->load(sh, &op) == AGMM_ERR_BAD_STATE,
              "%s: load on a shared prep must be refused", e->name);
        for (int mi = 0; mi < 2; mi++) {
            int64_t m = mi ? 5 : M; /* 5: on demand */
            memcpy(c, d.c32, M * LDC * 4);
            CHECK(e->run(base, m, d.a, NULL, p, scratch) == AGMM_OK &&
                      e->run(sh, m, d.a, NULL, c, scratch) == AGMM_OK,
                  "%s: run: %s", e->name, agmm_last_error());
            long bad = 0;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < NC; j++) {
                    float want = d.c32[i * LDC + j] + p[i * LDC + j];
                    bad += memcmp(&want, &c[i * LDC + j], 4) != 0;
                }
            printf("%s %s k=%d ldc=%lld m=%lld load %d: accumulate vs C_old "
                   "+ plain: %ld of %lld differ in bits\n",
                   e->name, agmm_dtype_name(dt), K, (long long)LDC,
                   (long long)m, load, bad, (long long)(m * NC));
            CHECK(bad == 0,
                  "%s %s m=%lld load %d: accumulate is not C_old + "
                  "plain bit for bit (%ld cells)",
                  e->name, agmm_dtype_name(dt), (long long)m, load, bad);
        }
        if (load == 0) {
            p0 = malloc(M * LDC * 4);
            memcpy(p0, p, M * LDC * 4);
        } else {
            CHECK(memcmp(p0, p, M * LDC * 4) != 0,
                  "%s: the reload changed nothing", e->name);
        }
        data_free(&d);
    }
    e->destroy(sh);
    e->destroy(base);
    free(p0);
    free(p);
    free(c);
    free(scratch);
}

/* What each engine must refuse, by name. */
static void test_refusals(const agmm_gemm_engine_t *e)
{
    static const int64_t rows[] = {4};
    agmm_gemm_shape_t shape = {8, 8, 8, 8, 8, rows, 1, 0};
    agmm_gemm_attr_t at;
    agmm_gemm_prep_t *prep = NULL;
    const char *name;
    if (e->kind == AGMM_GEMM_ENGINE_OPENBLAS) {
        attr_init(&at, AGMM_DTYPE_BF16, AGMM_DTYPE_BF16);
        name = "a_dtype bf16";
    } else {
        attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
        at.a_scale = 1;
        name = "a_scale";
    }
    agmm_status_t st = e->prepare(&shape, &at, NULL, &prep);
    CHECK(st == AGMM_ERR_UNSUPPORTED && strstr(agmm_last_error(), name) &&
              strstr(agmm_last_error(), e->name),
          "%s: %s must be refused naming it: %d %s", e->name, name, st,
          agmm_last_error());
    if (st == AGMM_OK) e->destroy(prep);
}

/* load_bias: a new bias alone takes effect on the next run (C changes by
 * exactly the difference of the biases when it is exact in fp32: small
 * integers), the weight untouched; refused on a prep without the bias
 * attribute and on one sharing another's weight. fp32 A, and INT8 where
 * the engine has it (its bias is in its own pass). */
static void test_load_bias(const agmm_gemm_engine_t *e, agmm_dtype_t dt)
{
    static const int64_t rows[] = {3};
    enum { K = 8, NC = 12 };
    agmm_gemm_shape_t shape = {K, NC, NC, K, NC, rows, 1, 0};
    agmm_gemm_attr_t at;
    attr_init(&at, dt, dt);
    at.bias = 1;
    int int8 = dt == AGMM_DTYPE_INT8;
    at.a_scale = at.w_scale = int8;
    float a32[3 * K], w32[K * NC], b1[NC], b2[NC], ones[NC], c1[3 * NC],
        c2[3 * NC];
    int8_t a8[3 * K], w8[K * NC];
    for (int i = 0; i < 3 * K; i++)
        a8[i] = (int8_t)(a32[i] = (float)(i % 5 - 2));
    for (int i = 0; i < K * NC; i++)
        w8[i] = (int8_t)(w32[i] = (float)(i % 3 - 1));
    for (int j = 0; j < NC; j++) {
        b1[j] = (float)j;
        b2[j] = (float)(3 - 2 * j);
        ones[j] = 1;
    }
    agmm_gemm_prep_t *p = NULL, *sh = NULL, *plain = NULL;
    agmm_gemm_operand_t op = {.w = int8 ? (const void *)w8 : (const void *)w32,
                              .bias = b1,
                              .w_scale = int8 ? ones : NULL};
    const void *a = int8 ? (const void *)a8 : (const void *)a32;
    agmm_status_t st = e->prepare(&shape, &at, NULL, &p);
    if (st == AGMM_ERR_UNSUPPORTED) return; /* int8 on OpenBLAS */
    size_t sb = st == AGMM_OK ? e->scratch_bytes(p) : 0;
    void *scratch = sb ? malloc(sb) : NULL;
    CHECK(st == AGMM_OK && e->load(p, &op) == AGMM_OK &&
              e->run(p, 3, a, int8 ? ones : NULL, c1, scratch) == AGMM_OK &&
              e->load_bias(p, b2) == AGMM_OK &&
              e->run(p, 3, a, int8 ? ones : NULL, c2, scratch) == AGMM_OK,
          "%s %s: load, run, load_bias, run", e->name, agmm_dtype_name(dt));
    int bad = 0;
    for (int i = 0; st == AGMM_OK && i < 3 * NC; i++)
        bad += c2[i] - c1[i] != b2[i % NC] - b1[i % NC];
    CHECK(bad == 0, "%s %s: load_bias: %d elements not moved by the new bias",
          e->name, agmm_dtype_name(dt), bad);
    agmm_gemm_attr_t acc = at;
    acc.accumulate = 1;
    if (st == AGMM_OK && e->prepare(&shape, &acc, p, &sh) == AGMM_OK)
        CHECK(e->load_bias(sh, b1) == AGMM_ERR_BAD_STATE,
              "%s: load_bias on a sharing prep must be refused", e->name);
    agmm_gemm_attr_t no = at;
    no.bias = 0;
    if (e->prepare(&shape, &no, NULL, &plain) == AGMM_OK)
        CHECK(e->load_bias(plain, b1) == AGMM_ERR_INVALID_ARG,
              "%s: load_bias without the bias attribute must be refused",
              e->name);
    if (sh) e->destroy(sh);
    if (plain) e->destroy(plain);
    if (p) e->destroy(p);
    free(scratch);
}

int main(void)
{
    agmm_blas_init();
    static const agmm_gemm_engine_kind_t kinds[] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                                    AGMM_GEMM_ENGINE_ONEDNN};
    static const agmm_dtype_t dts[] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16,
                                       AGMM_DTYPE_FP16};
    CHECK(!strcmp(agmm_gemm_act_name(AGMM_GEMM_ACT_GELU_TANH), "gelu-tanh") &&
              !strcmp(agmm_gemm_act_name(AGMM_GEMM_ACT_SILU), "silu"),
          "act names");
    /* ki 2: oneDNN again, every range in parts of 40 columns (the last
     * shorter) through a buffer of 16 rows (gemm/onednn/cols.c). */
    for (int ki = 0; ki < 3; ki++) {
        if (ki == 2) {
            g_part_cols = 40;
            g_part_rows = 16;
        }
        const agmm_gemm_engine_t *e =
            agmm_gemm_engine_get(kinds[ki % 2 + ki / 2]);
        if (!e) {
            printf("%s: not built in, skipped\n",
                   agmm_gemm_engine_name(kinds[ki]));
            continue;
        }
        test_refusals(e);
        test_load_bias(e, AGMM_DTYPE_FP32);
        test_load_bias(e, AGMM_DTYPE_INT8);
        for (int di = 0; di < 3; di++) {
            test_accumulate_bits(e, dts[di], 96);  /* dense C */
            test_accumulate_bits(e, dts[di], 100); /* ldc > ncols */
            for (int ci = 0; ci < NCASES; ci++) {
                int refused = 0;
                for (int si = 0; si < 3; si++)
                    test_case(e, dts[di], &k_cases[ci], &k_shapes[si],
                              &refused);
                if (refused)
                    printf("%s %s: refused: %s\n", e->name,
                           agmm_dtype_name(dts[di]), k_cases[ci].name);
                /* OpenBLAS computes every attribute (A is fp32 for it). */
                CHECK(!refused || e->kind != AGMM_GEMM_ENGINE_OPENBLAS,
                      "openblas refused %s", k_cases[ci].name);
            }
        }
    }
    CHECK_DONE("test_gemm_attr");
}
