/* The int8 (W8A8) GEMM (engine.h) of the oneDNN engine:
 *   - every case against the documented fp32 order computed here, bit for
 *     bit ((float)acc * w_scale[j] * a_scale[i] + bias + C_old, act, to
 *     c_dtype), and the plain cases against agmm_reference_int8 within
 *     agmm_int8_bound(1, |ref|) = 4 * 2^-24 * (1 + 2^-20) * |ref|;
 *   - run row counts prepared, not prepared (7) and above the most (100:
 *     through the scratch in chunks), k not a multiple of 4, ncols not of
 *     16, a column range of a wider W (ldw > ncols), C at a row offset
 *     with ldc > ncols (the rest untouched);
 *   - A scales contiguous (lda = k + 3) and in the all-gather window's
 *     layout (lda = round_up(k, 4) + 4 bytes, row i's scale at byte
 *     i * lda + round_up(k, 4): ld_a_scale = lda / 4);
 *   - accumulate (C_old fp32 and bf16), bias, relu, zero scales;
 *   - s8 x s8 and u8 x s8 (s8_as_u8) give the same bits (a zero's sign
 *     aside: engine.h);
 *   - +-127 everywhere at k = 4096 (exact in int32, both variants);
 *   - estimate = what prepare holds; runs of prepared rows create nothing;
 *   - two ranks' partials (the second accumulated onto the first) against
 *     agmm_reference_rs_int8 within agmm_int8_bound(2, mag);
 *   - all of it again with W as two 7-bit halves (gemm/onednn/s8.c: how
 *     INT8 runs where oneDNN's 8-bit sums saturate), forced;
 *   - refusals, and the rs oracle on hand values (run with or without
 *     oneDNN): test_gemm_int8_refuse.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/convert.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
#include "gemm/gemm.h"

/* The cases run with INT8 forced to two 7-bit weight halves. */
static int g_split;

enum { ROW_OFF = 3, C0 = 3, MAXM = 100 };
static const int64_t k_prep[] = {1, 16, 13, 64};
static const int64_t k_runs[] = {1, 16, 13, 64, 7, 100};
#define NPREP ((int)(sizeof k_prep / sizeof k_prep[0]))
#define NRUNS ((int)(sizeof k_runs / sizeof k_runs[0]))

static uint64_t hash(uint64_t i, uint64_t salt)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ salt * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static int8_t i8(uint64_t i, uint64_t salt)
{
    return (int8_t)((int)(hash(i, salt) % 255) - 127);
}

static float scale(uint64_t i, uint64_t salt, float base)
{
    return base * (float)(1 + hash(i, salt) % 1000) / 1000.0f;
}

typedef struct {
    int64_t k, ncols;
    int window; /* A scales in the window layout */
    int accumulate, bias, relu;
    agmm_dtype_t c_dtype;
    int extreme; /* +-127 everywhere, scales 1 */
} case_t;

typedef struct {
    int64_t k, ncols, ldw, lda, lds;
    int8_t *w;        /* [k, ldw] */
    float *w_scale;   /* [ldw] */
    float *bias;      /* [ldw] */
    unsigned char *a; /* MAXM rows of lda bytes (+ the scales: window) */
    float *a_scale;   /* row i's at a_scale[i * lds] */
    float *as_dense;  /* [MAXM], for the oracle */
} inputs_t;

static void make_inputs(const case_t *cs, inputs_t *in)
{
    in->k = cs->k;
    in->ncols = cs->ncols;
    in->ldw = cs->ncols + C0 + 2;
    int64_t k4 = (cs->k + 3) / 4 * 4;
    in->lda = cs->window ? k4 + 4 : cs->k + 3;
    in->lds = cs->window ? in->lda / 4 : 0;
    in->w = malloc((size_t)(in->k * in->ldw));
    in->w_scale = malloc(sizeof(float) * (size_t)in->ldw);
    in->bias = malloc(sizeof(float) * (size_t)in->ldw);
    in->a = calloc((size_t)(MAXM * in->lda), 1);
    in->as_dense = malloc(sizeof(float) * MAXM);
    for (int64_t i = 0; i < in->k * in->ldw; i++)
        in->w[i] = cs->extreme ? ((i % in->ldw) % 3 ? 127 : -127) : i8(i, 1);
    for (int64_t j = 0; j < in->ldw; j++) {
        in->w_scale[j] = cs->extreme ? 1.0f : scale(j, 2, 0.01f);
        in->bias[j] = scale(j, 3, 4.0f) - 2.0f;
    }
    in->w_scale[C0 + 1] = 0.0f; /* a zero column scale */
    static float contiguous[MAXM];
    in->a_scale = cs->window ? (float *)(in->a + k4) : contiguous;
    for (int64_t i = 0; i < MAXM; i++) {
        int8_t *row = (int8_t *)in->a + i * in->lda;
        for (int64_t kk = 0; kk < in->k; kk++)
            row[kk] = cs->extreme ? (i % 2 ? -127 : 127)
                                  : i8((uint64_t)(i * in->k + kk), 4);
        float s = cs->extreme ? 1.0f : i == 5 ? 0.0f : scale(i, 5, 0.05f);
        in->a_scale[i * (in->lds > 1 ? in->lds : 1)] = s;
        in->as_dense[i] = s;
    }
}

static void free_inputs(inputs_t *in)
{
    free(in->w);
    free(in->w_scale);
    free(in->bias);
    free(in->a);
    free(in->as_dense);
}

/* C_old (or NaN outside the block) as float, and the expected C. */
static float c_old(int64_t r, int64_t col)
{
    return (float)((int)(hash((uint64_t)(r * 1000 + col), 6) % 17) - 8) *
           0.375f;
}

/* The documented order (engine.h), in fp32, for row i col j. */
static float expect(const case_t *cs, const inputs_t *in, int64_t i, int64_t j,
                    float old)
{
    const int8_t *a = (const int8_t *)in->a + i * in->lda;
    int64_t d = 0;
    for (int64_t kk = 0; kk < in->k; kk++)
        d += (int64_t)a[kk] * in->w[kk * in->ldw + C0 + j];
    float x = (float)d;
    x = x * in->w_scale[C0 + j];
    x = x * in->as_dense[i];
    if (cs->bias) x = x + in->bias[C0 + j];
    if (cs->accumulate) x = x + old;
    if (cs->relu) x = x > 0.0f ? x : 0.0f;
    return x;
}

static void attr_of(const case_t *cs, int u8, agmm_gemm_attr_t *at)
{
    agmm_gemm_attr_init(at, AGMM_DTYPE_INT8, AGMM_DTYPE_INT8);
    at->a_scale = at->w_scale = 1;
    at->accumulate = cs->accumulate;
    at->bias = cs->bias;
    at->act = cs->relu ? AGMM_GEMM_ACT_RELU : AGMM_GEMM_ACT_NONE;
    at->c_dtype = cs->c_dtype;
    at->s8_as_u8 = u8;
    at->s8_split = g_split; /* the 7-bit halves forced (engine.h) */
}

/* m rows through prep into a fresh C; 1 when every element is as
 * expected (bit for bit) and the rest of C untouched. out: the block. */
static int run_check(const agmm_gemm_engine_t *e, agmm_gemm_prep_t *prep,
                     const case_t *cs, const inputs_t *in, int64_t m,
                     void *scratch, float *out)
{
    int bf = cs->c_dtype == AGMM_DTYPE_BF16;
    int64_t ldc = in->ncols + 5, rows = ROW_OFF + m + 2;
    size_t es = bf ? 2 : 4;
    unsigned char *c = malloc(es * (size_t)(rows * ldc));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t col = 0; col < ldc; col++) {
            float v = c_old(r, col);
            if (bf)
                ((uint16_t *)c)[r * ldc + col] = agmm_f32_to_bf16(v);
            else
                ((float *)c)[r * ldc + col] = v;
        }
    unsigned char *block = c + es * (size_t)(ROW_OFF * ldc);
    int ok = e->run(prep, m, in->a, in->a_scale, block, scratch) == AGMM_OK;
    for (int64_t r = 0; r < rows && ok; r++)
        for (int64_t col = 0; col < ldc && ok; col++) {
            int inside = r >= ROW_OFF && r < ROW_OFF + m && col < in->ncols;
            float old = c_old(r, col);
            uint32_t want, got;
            if (bf) {
                want = agmm_f32_to_bf16(old);
                if (inside)
                    want = agmm_f32_to_bf16(
                        expect(cs, in, r - ROW_OFF, col,
                               agmm_bf16_to_f32((uint16_t)want)));
                got = ((uint16_t *)c)[r * ldc + col];
            } else {
                float wf = inside ? expect(cs, in, r - ROW_OFF, col, old) : old;
                float gf = ((float *)c)[r * ldc + col];
                memcpy(&want, &wf, 4);
                memcpy(&got, &gf, 4);
                if (inside && out) out[(r - ROW_OFF) * in->ncols + col] = gf;
            }
            /* +0 and -0 alike (engine.h: the plain call's zero scales) */
            uint32_t mag = bf ? 0x7fffu : 0x7fffffffu;
            if (got != want && ((got | want) & mag) != 0) {
                fprintf(stderr, "m=%lld [%lld,%lld]: got 0x%x want 0x%x\n",
                        (long long)m, (long long)r, (long long)col, got, want);
                ok = 0;
            }
        }
    free(c);
    return ok;
}

/* A plain case's result against the oracle, within the stated bound. */
static void check_oracle(const inputs_t *in, int64_t m, const float *got,
                         const char *what)
{
    int8_t *shard = malloc((size_t)(m * in->k));
    int8_t *w = malloc((size_t)(in->k * in->ncols));
    float *ref = malloc(sizeof(float) * (size_t)(m * in->ncols));
    for (int64_t i = 0; i < m; i++)
        memcpy(shard + i * in->k, in->a + i * in->lda, (size_t)in->k);
    for (int64_t kk = 0; kk < in->k; kk++)
        memcpy(w + kk * in->ncols, in->w + kk * in->ldw + C0,
               (size_t)in->ncols);
    /* two ranks: rows [0, h) and [h, m) */
    int64_t h = m / 2, ml[2] = {h, m - h};
    const int8_t *sh[2] = {shard, shard + h * in->k};
    const float *as[2] = {in->as_dense, in->as_dense + h};
    CHECK(agmm_reference_int8(2, sh, as, ml, in->k, in->ncols, w,
                              in->w_scale + C0, ref) == AGMM_OK,
          "oracle: %s", agmm_last_error());
    int bad = 0;
    for (int64_t i = 0; i < m * in->ncols; i++)
        if (fabs((double)got[i] - ref[i]) > agmm_int8_bound(1, ref[i])) bad++;
    CHECK(!bad, "%s m=%lld: %d elements beyond agmm_int8_bound", what,
          (long long)m, bad);
    free(shard);
    free(w);
    free(ref);
}

static void test_case(const agmm_gemm_engine_t *e, const case_t *cs)
{
    inputs_t in;
    make_inputs(cs, &in);
    char what[128];
    snprintf(what, sizeof what, "k=%lld ncols=%lld%s%s%s%s c %s%s",
             (long long)cs->k, (long long)cs->ncols,
             cs->window ? " window" : "", cs->accumulate ? " accumulate" : "",
             cs->bias ? " bias" : "", cs->relu ? " relu" : "",
             agmm_dtype_name(cs->c_dtype), cs->extreme ? " extreme" : "");
    float *res[2] = {malloc(sizeof(float) * MAXM * (size_t)in.ncols),
                     malloc(sizeof(float) * MAXM * (size_t)in.ncols)};
    for (int u8 = 0; u8 < 2; u8++) {
        agmm_gemm_attr_t at;
        attr_of(cs, u8, &at);
        agmm_gemm_shape_t sh = {in.k,         in.ncols, in.ldw, in.lda,
                                in.ncols + 5, k_prep,   NPREP,  in.lds};
        uint64_t ew = 0, es = 0;
        agmm_gemm_prep_t *prep = NULL;
        agmm_status_t st = e->estimate(&sh, &at, 0, &ew, &es);
        CHECK(st == AGMM_OK, "%s u8=%d: estimate: %s", what, u8,
              agmm_last_error());
        st = e->prepare(&sh, &at, NULL, &prep);
        CHECK(st == AGMM_OK, "%s u8=%d: prepare: %s", what, u8,
              agmm_last_error());
        if (st != AGMM_OK) continue;
        CHECK(e->weight_bytes(prep) == ew && e->scratch_bytes(prep) == es,
              "%s u8=%d: estimate %llu + %llu, prepared %llu + %zu", what, u8,
              (unsigned long long)ew, (unsigned long long)es,
              (unsigned long long)e->weight_bytes(prep),
              e->scratch_bytes(prep));
        CHECK(!g_split || strstr(e->impl(prep), "7-bit weight halves"),
              "%s u8=%d: forced split, impl %s", what, u8, e->impl(prep));
        if (cs->k == 67 && !cs->window && !cs->accumulate)
            printf("int8 %s x s8 k=%lld ncols=%lld: %s\n", u8 ? "u8" : "s8",
                   (long long)cs->k, (long long)cs->ncols, e->impl(prep));
        agmm_gemm_operand_t op = {
            .w = in.w + C0, .bias = in.bias + C0, .w_scale = in.w_scale + C0};
        CHECK(e->load(prep, &op) == AGMM_OK, "%s: load: %s", what,
              agmm_last_error());
        void *scratch = aligned_alloc(64, (es + 63) / 64 * 64 + 64);
        uint64_t created = agmm_gemm_engine_created();
        for (int ri = 0; ri < NRUNS; ri++) {
            int64_t m = k_runs[ri];
            if (ri == NPREP) /* the prepared ones made nothing */
                CHECK(
                    agmm_gemm_engine_created() == created,
                    "%s u8=%d: runs of prepared rows created %llu", what, u8,
                    (unsigned long long)(agmm_gemm_engine_created() - created));
            float *out = m == MAXM ? res[u8] : NULL;
            CHECK(run_check(e, prep, cs, &in, m, scratch, out),
                  "%s u8=%d m=%lld: not the documented fp32 order (%s)", what,
                  u8, (long long)m, agmm_last_error());
        }
        if (cs->c_dtype == AGMM_DTYPE_FP32 && !cs->accumulate && !cs->bias &&
            !cs->relu)
            check_oracle(&in, MAXM, res[u8], what);
        /* a second prep on the same weight (share): no weight bytes */
        agmm_gemm_attr_t at2 = at;
        at2.accumulate = !at.accumulate;
        agmm_gemm_prep_t *p2 = NULL;
        CHECK(e->estimate(&sh, &at2, 1, &ew, &es) == AGMM_OK && ew == 0 &&
                  e->prepare(&sh, &at2, prep, &p2) == AGMM_OK &&
                  e->weight_bytes(p2) == 0 && e->scratch_bytes(p2) == es,
              "%s: share: %s", what, agmm_last_error());
        if (p2) {
            CHECK(e->load(p2, &op) == AGMM_ERR_BAD_STATE, "%s: load on share",
                  what);
            case_t c2 = *cs;
            c2.accumulate = at2.accumulate;
            /* its own scratch: the plain call's (s8_direct) has no sums */
            void *s2 = malloc(e->scratch_bytes(p2) + 1);
            CHECK(run_check(e, p2, &c2, &in, 13, s2, NULL), "%s: share's run",
                  what);
            free(s2);
            e->destroy(p2);
        }
        agmm_gemm_attr_t at3 = at;
        at3.s8_as_u8 = !u8;
        CHECK(e->prepare(&sh, &at3, prep, &p2) == AGMM_ERR_INVALID_ARG,
              "%s: share across variants must be refused", what);
        CHECK(e->run(prep, 4, in.a, NULL, res[u8], scratch) ==
                  AGMM_ERR_INVALID_ARG,
              "%s: a run without A scales must be refused", what);
        e->destroy(prep);
        free(scratch);
    }
    if (cs->c_dtype == AGMM_DTYPE_FP32) { /* bits, but zeros' signs */
        int64_t differ = 0;
        for (int64_t e2 = 0; e2 < MAXM * in.ncols; e2++) {
            uint32_t x, y;
            memcpy(&x, &res[0][e2], 4);
            memcpy(&y, &res[1][e2], 4);
            differ += x != y && ((x | y) & 0x7fffffffu) != 0;
        }
        CHECK(differ == 0, "%s: s8s8 and u8s8 differ in %lld elements", what,
              (long long)differ);
    }
    free(res[0]);
    free(res[1]);
    free_inputs(&in);
}

/* Two ranks' partials summed the way the reduce-scatter does (the second
 * accumulated onto the first: one fp32 add) against the rs oracle within
 * agmm_int8_bound(2, mag). */
static void test_rs_engine(const agmm_gemm_engine_t *e)
{
    enum { M = 40, N = 70, K0 = 67, K1 = 130 };
    static const int64_t rows[] = {M};
    int8_t *a[2], *w[2];
    float *as[2], *ws[2];
    const int64_t kl[2] = {K0, K1};
    float *c = calloc(M * N, sizeof(float)), *ref = malloc(4 * M * N);
    float *mag = malloc(4 * M * N);
    agmm_gemm_prep_t *p[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) {
        a[r] = malloc((size_t)(M * kl[r]));
        w[r] = malloc((size_t)(kl[r] * N));
        as[r] = malloc(4 * M);
        ws[r] = malloc(4 * N);
        for (int64_t i = 0; i < M * kl[r]; i++)
            a[r][i] = i8((uint64_t)i, 10 + (uint64_t)r);
        for (int64_t i = 0; i < kl[r] * N; i++)
            w[r][i] = i8((uint64_t)i, 20 + (uint64_t)r);
        for (int i = 0; i < M; i++)
            as[r][i] = scale((uint64_t)i, 30 + (uint64_t)r, 0.05f);
        for (int j = 0; j < N; j++)
            ws[r][j] = scale((uint64_t)j, 40 + (uint64_t)r, 0.01f);
        agmm_gemm_attr_t at;
        case_t cs = {kl[r], N, 0, r, 0, 0, AGMM_DTYPE_FP32, 0};
        attr_of(&cs, r, &at);
        agmm_gemm_shape_t sh = {kl[r], N, N, kl[r], N, rows, 1, 0};
        agmm_gemm_operand_t op = {.w = w[r], .bias = NULL, .w_scale = ws[r]};
        CHECK(e->prepare(&sh, &at, NULL, &p[r]) == AGMM_OK &&
                  e->load(p[r], &op) == AGMM_OK,
              "rs rank %d: %s", r, agmm_last_error());
    }
    if (p[0] && p[1]) {
        size_t sb = e->scratch_bytes(p[0]) > e->scratch_bytes(p[1])
                        ? e->scratch_bytes(p[0])
                        : e->scratch_bytes(p[1]);
        void *scratch = aligned_alloc(64, (sb + 63) / 64 * 64 + 64);
        CHECK(e->run(p[0], M, a[0], as[0], c, scratch) == AGMM_OK &&
                  e->run(p[1], M, a[1], as[1], c, scratch) == AGMM_OK,
              "rs runs: %s", agmm_last_error());
        free(scratch);
        const int8_t *ca[2] = {a[0], a[1]}, *cw[2] = {w[0], w[1]};
        const float *cas[2] = {as[0], as[1]}, *cws[2] = {ws[0], ws[1]};
        CHECK(agmm_reference_rs_int8(2, ca, cas, cw, cws, kl, M, N, 0, M,
                                     ref) == AGMM_OK &&
                  agmm_reference_rs_int8_mag(2, ca, cas, cw, cws, kl, M, N, 0,
                                             M, mag) == AGMM_OK,
              "rs oracle: %s", agmm_last_error());
        int bad = 0;
        for (int i = 0; i < M * N; i++)
            if (fabs((double)c[i] - ref[i]) > agmm_int8_bound(2, mag[i])) bad++;
        CHECK(!bad, "rs: %d elements beyond agmm_int8_bound(2, mag)", bad);
    }
    for (int r = 0; r < 2; r++) {
        if (p[r]) e->destroy(p[r]);
        free(a[r]);
        free(w[r]);
        free(as[r]);
        free(ws[r]);
    }
    free(c);
    free(ref);
    free(mag);
}

int main(void)
{
    agmm_blas_init();
    const agmm_gemm_engine_t *e = agmm_gemm_engine_get(AGMM_GEMM_ENGINE_ONEDNN);
    CHECK(e, "built only with oneDNN, which is not in this library");
    if (!e) CHECK_DONE("test_gemm_int8");
    static const case_t cases[] = {
        {67, 150, 0, 0, 0, 0, AGMM_DTYPE_FP32, 0},
        {67, 33, 1, 0, 0, 0, AGMM_DTYPE_FP32, 0},
        {301, 150, 1, 1, 1, 0, AGMM_DTYPE_FP32, 0},
        {67, 150, 0, 1, 0, 1, AGMM_DTYPE_BF16, 0},
        {64, 48, 0, 0, 1, 1, AGMM_DTYPE_FP32, 0},
        {4096, 20, 1, 0, 0, 0, AGMM_DTYPE_FP32, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_case(e, &cases[i]);
    test_rs_engine(e);
    /* Again with W as two 7-bit halves (how INT8 runs on a core whose
     * 16-bit pair sums saturate: no VNNI), forced where it is not needed:
     * the same bits. */
    g_split = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_case(e, &cases[i]);
    test_rs_engine(e);
    CHECK_DONE("test_gemm_int8");
}
