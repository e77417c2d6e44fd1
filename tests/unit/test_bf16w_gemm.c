/* agmm's bf16-weight decode kernel (src/gemm/wq/bf16w.h) against an
 * exact oracle (double sums of the bf16 / fp32 values), for every variant
 * this CPU runs:
 *   - hand values (small integers: every product and sum exact in fp32),
 *     exactly: M = 0, 1, 2, 5, 6, 7, 31, 32, 33; k odd and not a multiple
 *     of 8; n not a multiple of 16 or 64; lda > k, ldc > n with C's
 *     columns past n untouched; A bf16 and fp32;
 *   - random values within fp32 accumulation's bound over k;
 *   - refusals: avx512-bf16 with fp32 A, bad strides. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/log.h"
#include "gemm/convert.h"
#include "gemm/wq/bf16w.h"

#define SENTINEL 12345.0f

static float widen(uint16_t b)
{
    return agmm_bf16_to_f32(b);
}

static unsigned long long rng = 88172645463325252ull;
static double unif(void) /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

/* One case: W [k, n] bf16 (row stride n), A [m, k] (lda = k + 3) in
 * a_dtype, C [m, n] fp32 (ldc = n + 5); hand: integers in -4..4. */
static void one_case(agmm_bf16w_kernel_t kind, agmm_dtype_t adt, int64_t m,
                     int64_t k, int64_t n, int hand)
{
    int64_t lda = k + 3, ldc = n + 5;
    uint16_t *w = malloc(sizeof *w * (size_t)(k * n));
    float *af = malloc(sizeof *af * (size_t)((m + 1) * lda));
    uint16_t *ab = malloc(sizeof *ab * (size_t)((m + 1) * lda));
    float *c = malloc(sizeof *c * (size_t)((m + 1) * ldc));
    for (int64_t i = 0; i < k * n; i++)
        w[i] =
            agmm_f32_to_bf16(hand ? (float)((int)(unif() * 5)) : (float)unif());
    for (int64_t i = 0; i < (m + 1) * lda; i++) {
        ab[i] =
            agmm_f32_to_bf16(hand ? (float)((int)(unif() * 5)) : (float)unif());
        af[i] = adt == AGMM_DTYPE_FP32 && !hand ? (float)unif() : widen(ab[i]);
    }
    for (int64_t i = 0; i < (m + 1) * ldc; i++)
        c[i] = SENTINEL;
    agmm_bf16w_t *pw = NULL;
    agmm_status_t st = agmm_bf16w_alloc(k, n, &pw);
    if (st == AGMM_OK) st = agmm_bf16w_pack(pw, w, n);
    const void *a = adt == AGMM_DTYPE_FP32 ? (const void *)af : ab;
    if (st == AGMM_OK)
        st = agmm_bf16w_gemm_with(kind, pw, m, a, adt, lda, c, ldc);
    CHECK(st == AGMM_OK, "%s m %lld k %lld n %lld: status %d",
          agmm_bf16w_kernel_name(kind), (long long)m, (long long)k,
          (long long)n, (int)st);
    long bad = 0;
    for (int64_t i = 0; st == AGMM_OK && i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            for (int64_t kk = 0; kk < k; kk++) {
                double av = adt == AGMM_DTYPE_FP32 ? af[i * lda + kk]
                                                   : widen(ab[i * lda + kk]);
                double p = av * widen(w[kk * n + j]);
                s += p;
                sa += fabs(p);
            }
            double bound = hand ? 0 : (double)(k + 2) * 1.2e-7 * sa + 1e-30;
            double got = c[i * ldc + j];
            if (!(fabs(got - s) <= bound) && bad++ < 5)
                CHECK(0,
                      "%s %s m %lld k %lld n %lld: C[%lld,%lld] %.9g, "
                      "oracle %.9g (bound %.3g)",
                      agmm_bf16w_kernel_name(kind), agmm_dtype_name(adt),
                      (long long)m, (long long)k, (long long)n, (long long)i,
                      (long long)j, got, s, bound);
        }
        for (int64_t j = n; j < ldc; j++)
            if (c[i * ldc + j] != SENTINEL && bad++ < 5)
                CHECK(0, "C[%lld,%lld] past n written", (long long)i,
                      (long long)j);
    }
    for (int64_t j = 0; j < ldc; j++) /* row m: untouched */
        if (c[m * ldc + j] != SENTINEL && bad++ < 5)
            CHECK(0, "C row %lld (past m) written", (long long)m);
    CHECK(bad == 0, "%s %s m %lld k %lld n %lld hand %d: %ld bad values",
          agmm_bf16w_kernel_name(kind), agmm_dtype_name(adt), (long long)m,
          (long long)k, (long long)n, hand, bad);
    agmm_bf16w_free(pw);
    free(w);
    free(af);
    free(ab);
    free(c);
}

/* The kernels' k ranges (bf16w.h): two chunks give the bits of one. */
static void chunks(void)
{
    int64_t k = 77, n = 64;
    uint16_t *w = malloc(sizeof *w * (size_t)(k * n)), a[3 * 77];
    for (int64_t i = 0; i < k * n; i++)
        w[i] = agmm_f32_to_bf16((float)unif());
    for (int i = 0; i < 3 * 77; i++)
        a[i] = agmm_f32_to_bf16((float)unif());
    agmm_bf16w_t *pw = NULL;
    CHECK(agmm_bf16w_alloc(k, n, &pw) == AGMM_OK &&
              agmm_bf16w_pack(pw, w, n) == AGMM_OK,
          "chunks: pack");
    agmm_bf16w_block_fn fns[AGMM_BF16W_COUNT] = {agmm_bf16w_block_portable};
#if defined(__x86_64__)
    fns[AGMM_BF16W_AVX512_FMA] = agmm_bf16w_block_fma;
    fns[AGMM_BF16W_AVX512_BF16] = agmm_bf16w_block_dpbf16;
#endif
    for (int kd = 0; pw && kd < AGMM_BF16W_COUNT; kd++) {
        if (!fns[kd] || !agmm_bf16w_kernel_supported((agmm_bf16w_kernel_t)kd))
            continue;
        float one[3 * 64], two[3 * 64];
        fns[kd](pw, pw->data, 0, pw->pairs, 3, a, 0, k, one, 64);
        fns[kd](pw, pw->data, 0, 10, 3, a, 0, k, two, 64);
        fns[kd](pw, pw->data, 10, pw->pairs, 3, a, 0, k, two, 64);
        CHECK(!memcmp(one, two, sizeof one), "%s: k in two chunks differs",
              agmm_bf16w_kernel_name((agmm_bf16w_kernel_t)kd));
    }
    agmm_bf16w_free(pw);
    free(w);
}

static void refusals(void)
{
    agmm_log_set_quiet(1);
    agmm_bf16w_t *pw = NULL;
    CHECK(agmm_bf16w_alloc(0, 5, &pw) == AGMM_ERR_INVALID_ARG, "k 0 refused");
    CHECK(agmm_bf16w_alloc(4, 5, &pw) == AGMM_OK, "alloc 4 x 5");
    float a[8] = {0}, c[8];
    if (agmm_bf16w_kernel_supported(AGMM_BF16W_AVX512_BF16))
        CHECK(agmm_bf16w_gemm_with(AGMM_BF16W_AVX512_BF16, pw, 1, a,
                                   AGMM_DTYPE_FP32, 4, c,
                                   5) == AGMM_ERR_INVALID_ARG,
              "avx512-bf16 with fp32 A refused");
    CHECK(agmm_bf16w_gemm(pw, 1, a, AGMM_DTYPE_FP32, 3, c, 5) ==
              AGMM_ERR_INVALID_ARG,
          "lda < k refused");
    CHECK(agmm_bf16w_gemm(pw, 1, a, AGMM_DTYPE_FP16, 4, c, 5) ==
              AGMM_ERR_INVALID_ARG,
          "fp16 A refused");
    CHECK(agmm_bf16w_kernel(AGMM_DTYPE_FP32) != AGMM_BF16W_AVX512_BF16,
          "fp32 A never gets avx512-bf16");
    agmm_bf16w_free(pw);
    agmm_log_set_quiet(0);
}

int main(void)
{
    static const int64_t ms[] = {0, 1, 2, 5, 6, 7, 31, 32, 33};
    static const int64_t ks[][2] = {
        {1, 1}, {7, 17}, {33, 70}, {100, 64}, {255, 130}};
    for (int kd = 0; kd < AGMM_BF16W_COUNT; kd++) {
        agmm_bf16w_kernel_t kind = (agmm_bf16w_kernel_t)kd;
        printf("kernel %s: %s\n", agmm_bf16w_kernel_name(kind),
               agmm_bf16w_kernel_supported(kind) ? "runs" : "not on this CPU");
        if (!agmm_bf16w_kernel_supported(kind)) continue;
        for (int d = 0; d < 2; d++) {
            agmm_dtype_t adt = d ? AGMM_DTYPE_FP32 : AGMM_DTYPE_BF16;
            if (kind == AGMM_BF16W_AVX512_BF16 && adt == AGMM_DTYPE_FP32)
                continue;
            for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
                for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
                    for (int hand = 0; hand < 2; hand++)
                        one_case(kind, adt, ms[i], ks[j][0], ks[j][1], hand);
        }
    }
    chunks();
    refusals();
    CHECK_DONE("test_bf16w_gemm");
}
