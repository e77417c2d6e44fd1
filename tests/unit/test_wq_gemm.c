/* The weight-quantized GEMM (src/gemm/wq/wq.h) against its oracle
 * (src/check/wq_ref.h), for every kernel variant this CPU runs:
 *   - hand values, exactly: integer A, power-of-two scales, nibbles -8 and
 *     +7, zero points 0 and 15, a last partial group, k odd, n not a
 *     multiple of 16, M = 0, 1, 2, 3, 4, 5, 31, 32, 33, a column range,
 *     lda > k and ldc > n, C's other columns untouched;
 *   - random weights through agmm_quantize_weight, random shapes, A in
 *     fp32, bf16 and fp16, C in fp32 and bf16, fp32 and bf16 scales,
 *     within the oracle's bound;
 *   - the dot kernel (avx512bf16, bf16 A: VDPBF16PS) on hand values with
 *     odd quad counts and M up to 17 (row blocks of 8), on random
 *     weights at M 1..33 in every format, and on subnormal bf16 A (which
 *     it must hand to the FMA kernel: exact results, not zeros);
 *   - the per-row-count choice (agmm_wq_kernel_for) follows the
 *     measurement agmm_wq_select_info reports; fp32 / fp16 A never run
 *     the dot kernel;
 *   - bad arguments refused.
 * With the argument "env": the variant AGMM_WQ_KERNEL names is the one
 * agmm_wq_kernel_name() reports, and agmm_wq_gemm runs it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check/wq_ref.h"
#include "common/log.h"
#include "gemm/convert.h"
#include "gemm/wq/wq.h"
#include "test_data.h"

#define SENTINEL 12345.0f

typedef struct weight {
    agmm_wq_desc_t d;
    uint8_t *q, *zeros;
    void *scales;
} weight_t;

static void weight_free(weight_t *w)
{
    free(w->q);
    free(w->zeros);
    free(w->scales);
}

/* A hand weight (exact products): see the file comment. */
static weight_t hand_weight(int64_t k, int64_t n, int bits, int sym,
                            int64_t group)
{
    weight_t w = {0};
    int64_t G = group ? group : k, ng = (k + G - 1) / G;
    int64_t rows = bits == 4 ? (k + 1) / 2 : k;
    w.q = calloc((size_t)(rows * n), 1);
    w.zeros = sym ? NULL : malloc((size_t)(ng * n));
    float *s = malloc(sizeof(float) * (size_t)(ng * n));
    for (int64_t g = 0; g < ng; g++)
        for (int64_t j = 0; j < n; j++) {
            s[g * n + j] = ldexpf(1.0f, (int)((g + j) % 3) - 1);
            if (!sym)
                w.zeros[g * n + j] =
                    bits == 4 ? ((g + j) % 2 ? 15 : 0) : (uint8_t)(g * 77 + j);
        }
    for (int64_t kk = 0; kk < k; kk++)
        for (int64_t j = 0; j < n; j++) {
            if (bits == 8) {
                w.q[kk * n + j] = (uint8_t)(kk * 37 + j * 11);
                continue;
            }
            int v = (int)((kk * 3 + j * 5) % 16); /* nibbles 0..15 */
            uint8_t *b = &w.q[(kk / 2) * n + j];
            *b |= (uint8_t)(kk % 2 ? v << 4 : v); /* sym: -8..7 */
        }
    w.scales = s;
    w.d = (agmm_wq_desc_t){k, n, bits, group, sym, w.q, s, 0, w.zeros, 0};
    return w;
}

/* A random weight through the quantizer (scales bf16 when asked). */
static weight_t random_weight(int64_t k, int64_t n, int bits, int sym,
                              int64_t group, int scales_bf16, int id)
{
    weight_t w = {0};
    int64_t G = group ? group : k, ng = (k + G - 1) / G;
    float *f = test_values(id, k * n);
    w.q = malloc((size_t)(k * n));
    w.zeros = sym ? NULL : malloc((size_t)(ng * n));
    float *s = malloc(sizeof(float) * (size_t)(ng * n));
    CHECK(agmm_quantize_weight(f, k, n, bits, group, sym, w.q, s, w.zeros) ==
              AGMM_OK,
          "quantize k %lld n %lld", (long long)k, (long long)n);
    if (scales_bf16) {
        uint16_t *h = (uint16_t *)s; /* in place: each read before written */
        for (int64_t i = 0; i < ng * n; i++)
            h[i] = agmm_f32_to_bf16(s[i]);
    }
    free(f);
    w.scales = s;
    w.d = (agmm_wq_desc_t){k,   n, bits,        group,   sym,
                           w.q, s, scales_bf16, w.zeros, 0};
    return w;
}

/* A (m x k, stride lda) in dtype dt from fp32 values, and those values as
 * the kernel sees them (exact: rounded to dt and back). */
static void *make_a(agmm_dtype_t dt, int64_t m, int64_t k, int64_t lda,
                    int hand, int id, float *exact)
{
    size_t es = agmm_dtype_size(dt);
    (void)k; /* the padding columns up to lda are filled too */
    void *a = malloc(es * (size_t)(m * lda + 1));
    for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < lda; kk++) {
            float v = hand ? (float)((i * 7 + kk * 3) % 9 - 4)
                           : test_value(id, i * lda + kk);
            agmm_convert_from_f32(dt, &v, (char *)a + es * (i * lda + kk), 1);
            agmm_convert_to_f32(dt, (char *)a + es * (i * lda + kk),
                                &exact[i * lda + kk], 1);
        }
    return a;
}

/* One case for every variant: C's columns [n0, n1) against the oracle
 * (exact when `exact`, else within the bound), the others untouched. */
static void run_case(const weight_t *wt, int64_t m, agmm_dtype_t adt,
                     agmm_dtype_t cdt, int64_t n0, int64_t n1, int hand, int id)
{
    const agmm_wq_desc_t *d = &wt->d;
    int64_t k = d->k, n = d->n, lda = k + 3, ldc = n + 2;
    agmm_wq_t *w = NULL;
    CHECK(agmm_wq_pack(d, &w) == AGMM_OK, "pack");
    if (!w) return;
    float *ax = malloc(sizeof(float) * (size_t)(m * lda + 1));
    void *a = make_a(adt, m, k, lda, hand, id, ax);
    double *ref = malloc(sizeof(double) * (size_t)(m * ldc + 1));
    double *bnd = malloc(sizeof(double) * (size_t)(m * ldc + 1));
    agmm_wq_ref(d, m, ax, lda, ref, bnd, ldc, cdt == AGMM_DTYPE_BF16);
    float *c = malloc(sizeof(float) * (size_t)(m * ldc + 1));
    for (int kind = 0; kind < AGMM_WQ_KERNEL_COUNT; kind++) {
        if (!agmm_wq_kernel_supported((agmm_wq_kernel_t)kind) ||
            agmm_wq_kernel_is_a8((agmm_wq_kernel_t)kind)) /* a8_cases */
            continue;
        const char *name = agmm_wq_kernel_kind_name((agmm_wq_kernel_t)kind);
        for (int64_t i = 0; i < m * ldc; i++) {
            if (cdt == AGMM_DTYPE_FP32)
                c[i] = SENTINEL;
            else
                ((uint16_t *)c)[i] = agmm_f32_to_bf16(SENTINEL);
        }
        CHECK(agmm_wq_gemm_with((agmm_wq_kernel_t)kind, w, m, a, adt, lda, c,
                                cdt, ldc, n0, n1) == AGMM_OK,
              "%s gemm", name);
        int64_t bad = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float got =
                    cdt == AGMM_DTYPE_FP32
                        ? c[i * ldc + j]
                        : agmm_bf16_to_f32(((uint16_t *)c)[i * ldc + j]);
                double want =
                    j >= n0 && j < n1 ? ref[i * ldc + j]
                    : cdt == AGMM_DTYPE_FP32
                        ? SENTINEL
                        : agmm_bf16_to_f32(agmm_f32_to_bf16(SENTINEL));
                double tol = j >= n0 && j < n1 && !hand ? bnd[i * ldc + j] : 0;
                if (hand && cdt == AGMM_DTYPE_BF16 && j >= n0 && j < n1)
                    want = agmm_bf16_to_f32(agmm_f32_to_bf16((float)want));
                if (fabs(got - want) > tol && bad++ < 3)
                    CHECK(0,
                          "%s bits %d sym %d G %lld k %lld n %lld m %lld "
                          "[%lld,%lld) a %s c %s: C[%lld][%lld] = %.9g, "
                          "want %.9g (bound %.3g)",
                          name, d->bits, d->symmetric, (long long)d->group,
                          (long long)k, (long long)n, (long long)m,
                          (long long)n0, (long long)n1, agmm_dtype_name(adt),
                          agmm_dtype_name(cdt), (long long)i, (long long)j,
                          (double)got, want, tol);
            }
        CHECK(bad == 0, "%lld wrong elements", (long long)bad);
    }
    /* The caller's scratch (of 3 rows: any m done 3 at a time) gives
     * agmm_wq_gemm's bits, and so does a weight packed in two steps
     * (agmm_wq_alloc, then agmm_wq_repack). */
    size_t cb = sizeof(float) * (size_t)(m * ldc + 1);
    float *c1 = malloc(cb), *c2 = malloc(cb);
    memset(c1, 0, cb);
    memset(c2, 0, cb);
    size_t sb = agmm_wq_scratch_bytes(k, d->group, 3);
    void *scratch = aligned_alloc(64, (sb + 63) / 64 * 64);
    CHECK(agmm_wq_gemm(w, m, a, adt, lda, c1, cdt, ldc, n0, n1) == AGMM_OK &&
              agmm_wq_gemm_scratch(w, m, a, adt, lda, c2, cdt, ldc, n0, n1,
                                   scratch, 3) == AGMM_OK &&
              !memcmp(c1, c2, cb),
          "agmm_wq_gemm_scratch differs from agmm_wq_gemm (k %lld m %lld)",
          (long long)k, (long long)m);
    agmm_wq_t *w2 = NULL;
    CHECK(agmm_wq_alloc(k, n, d->bits, d->group, d->symmetric, &w2) ==
                  AGMM_OK &&
              agmm_wq_repack(w2, d) == AGMM_OK &&
              agmm_wq_bytes(w2) ==
                  agmm_wq_packed_bytes(k, n, d->bits, d->group) &&
              agmm_wq_bytes(w2) == agmm_wq_bytes(w),
          "alloc + repack");
    memset(c2, 0, cb);
    CHECK(w2 &&
              agmm_wq_gemm(w2, m, a, adt, lda, c2, cdt, ldc, n0, n1) ==
                  AGMM_OK &&
              !memcmp(c1, c2, cb),
          "a weight packed by alloc + repack computes otherwise");
    agmm_wq_free(w2);
    free(scratch);
    free(c1);
    free(c2);
    free(c);
    free(ref);
    free(bnd);
    free(a);
    free(ax);
    agmm_wq_free(w);
}

static void hand_cases(void)
{
    static const int64_t ms[] = {0, 1, 2, 3, 4, 5, 31, 32, 33};
    for (int bits = 4; bits <= 8; bits += 4)
        for (int sym = 0; sym < 2; sym++) {
            weight_t w = hand_weight(37, 19, bits, sym, 32);
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                run_case(&w, ms[mi], AGMM_DTYPE_FP32, AGMM_DTYPE_FP32, 0, 19, 1,
                         0);
                run_case(&w, ms[mi], AGMM_DTYPE_BF16, AGMM_DTYPE_FP32, 3, 18, 1,
                         0);
            }
            run_case(&w, 5, AGMM_DTYPE_FP16, AGMM_DTYPE_BF16, 16, 19, 1, 0);
            run_case(&w, 5, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32, 7, 7, 1, 0);
            weight_free(&w);
            /* G = all of k (k odd), and G = 128 > k. */
            w = hand_weight(37, 19, bits, sym, 0);
            run_case(&w, 4, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32, 0, 19, 1, 0);
            weight_free(&w);
            w = hand_weight(37, 19, bits, sym, 128);
            run_case(&w, 4, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32, 0, 19, 1, 0);
            run_case(&w, 9, AGMM_DTYPE_BF16, AGMM_DTYPE_FP32, 0, 19, 1, 0);
            weight_free(&w);
            /* Odd quad counts for the dot kernel's two-quad steps: k 41
             * in groups of 32 (8 quads, then 3), and as one group (11);
             * M = 6, 7, 8, 9, 16, 17 (its row blocks are 8). */
            static const int64_t dms[] = {6, 7, 8, 9, 16, 17};
            for (int64_t G = 0; G <= 32; G += 32) {
                w = hand_weight(41, 35, bits, sym, G);
                for (size_t mi = 0; mi < sizeof dms / sizeof dms[0]; mi++)
                    run_case(&w, dms[mi], AGMM_DTYPE_BF16,
                             mi % 2 ? AGMM_DTYPE_BF16 : AGMM_DTYPE_FP32, 0, 35,
                             1, 0);
                weight_free(&w);
            }
        }
}

/* Random weights with bf16 A at every row count class of the dot kernel
 * (1, 2: four chains; 3..8: two; partial blocks of 8), in every format. */
static void dot_cases(void)
{
    static const int64_t ks[] = {8, 100, 129, 300};
    static const int64_t ms[] = {1, 2, 3, 5, 8, 13, 32, 33};
    static const int64_t gs[] = {0, 32, 128};
    int id = 5000;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
        for (int bits = 4; bits <= 8; bits += 4)
            for (int sym = 0; sym < 2; sym++)
                for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
                    id++;
                    int64_t n = id % 2 ? 33 : 16;
                    weight_t w = random_weight(ks[ki], n, bits, sym, gs[gi],
                                               id % 3 == 0, id);
                    run_case(&w, ms[id % 8], AGMM_DTYPE_BF16,
                             id % 5 == 0 ? AGMM_DTYPE_BF16 : AGMM_DTYPE_FP32, 0,
                             n, 0, id);
                    weight_free(&w);
                }
    /* More than 8 rows convert quads into a buffer 32 quads at a time: a
     * group of 75 quads (k 300 as one group) spans three chunks, the
     * last odd; run_case's scratch of 3 rows gives the same bits. */
    for (int bits = 4; bits <= 8; bits += 4)
        for (int sym = 0; sym < 2; sym++) {
            weight_t w = random_weight(300, 33, bits, sym, 0, 0, ++id);
            run_case(&w, 17, AGMM_DTYPE_BF16, AGMM_DTYPE_FP32, 0, 33, 0, id);
            weight_free(&w);
        }
}

/* bf16 A with subnormal values: VDPBF16PS would read them as 0, so the
 * dot variant must run them on the FMA kernel, which multiplies them
 * exactly here (power-of-two scales, small integer weights). */
static void dot_subnormal_case(void)
{
    if (!agmm_wq_kernel_supported(AGMM_WQ_KERNEL_AVX512_BF16)) return;
    weight_t wt = hand_weight(37, 19, 4, 0, 32);
    int64_t m = 3, k = 37, n = 19;
    uint16_t a[3 * 37];
    float ax[3 * 37];
    for (int64_t i = 0; i < m * k; i++) {
        /* row 0 normal, rows 1 and 2 subnormal (one chunk: all to FMA) */
        uint16_t b =
            i < k ? (uint16_t)(0x3f80 + i % 64) : (uint16_t)(1 + (i * 7) % 127);
        a[i] = (uint16_t)(b | (i % 3 == 0 ? 0x8000 : 0));
        ax[i] = agmm_bf16_to_f32(a[i]);
    }
    agmm_wq_t *w = NULL;
    CHECK(agmm_wq_pack(&wt.d, &w) == AGMM_OK, "pack");
    double ref[3 * 19];
    agmm_wq_ref(&wt.d, m, ax, k, ref, NULL, n, 0);
    float c[3 * 19];
    CHECK(agmm_wq_gemm_with(AGMM_WQ_KERNEL_AVX512_BF16, w, m, a,
                            AGMM_DTYPE_BF16, k, c, AGMM_DTYPE_FP32, n, 0,
                            n) == AGMM_OK,
          "dot gemm");
    int nonzero = 0;
    for (int64_t i = 0; i < m * n; i++) {
        CHECK(c[i] == ref[i], "subnormal A: C[%lld][%lld] = %g, want %g",
              (long long)(i / n), (long long)(i % n), (double)c[i], ref[i]);
        nonzero += i >= n && ref[i] != 0;
    }
    CHECK(nonzero > 0, "the subnormal rows' products are all 0");
    agmm_wq_free(w);
    weight_free(&wt);
}

/* The A8 variants (W4A8 / W8A8 in groups: a plan's a_quant INT8, or
 * named): each this CPU runs against check/wq_ref.h's A8 oracle (A
 * quantized per row with the library's float steps, so the same
 * integers) within its bound (the kernels' few roundings: tight); the
 * VNNI kernel and the portable loop the same bits; and the bound tight
 * enough to tell: some element of every case is outside it against the
 * product of A unquantized (a kernel that skipped A's rounding fails). */
static void a8_case(const weight_t *wt, int64_t m, agmm_dtype_t adt, int id)
{
    const agmm_wq_desc_t *d = &wt->d;
    int64_t k = d->k, n = d->n, lda = k + 3, ldc = n + 2;
    agmm_wq_t *w = NULL;
    CHECK(agmm_wq_pack(d, &w) == AGMM_OK, "pack");
    if (!w) return;
    float *ax = malloc(sizeof(float) * (size_t)(m * lda + 1));
    void *a = make_a(adt, m, k, lda, 0, id, ax);
    double *ref = malloc(sizeof(double) * (size_t)(m * ldc + 1));
    double *bnd = malloc(sizeof(double) * (size_t)(m * ldc + 1));
    double *plain = malloc(sizeof(double) * (size_t)(m * ldc + 1));
    agmm_wq_ref_a8(d, m, ax, lda, ref, bnd, ldc, 0);
    agmm_wq_ref(d, m, ax, lda, plain, NULL, ldc, 0);
    float *c = malloc(sizeof(float) * (size_t)(m * ldc + 1));
    float *first = malloc(sizeof(float) * (size_t)(m * ldc + 1));
    int runs = 0;
    static const agmm_wq_kernel_t kinds[2] = {AGMM_WQ_KERNEL_PORTABLE_A8,
                                              AGMM_WQ_KERNEL_AVX512_VNNI};
    for (int v = 0; v < 2; v++) {
        if (!agmm_wq_kernel_supported(kinds[v])) continue;
        const char *name = agmm_wq_kernel_kind_name(kinds[v]);
        CHECK(agmm_wq_gemm_with(kinds[v], w, m, a, adt, lda, c, AGMM_DTYPE_FP32,
                                ldc, 0, n) == AGMM_OK,
              "%s gemm", name);
        int64_t bad = 0, apart = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double x = c[i * ldc + j], want = ref[i * ldc + j];
                double tol = bnd[i * ldc + j];
                apart += !(fabs(x - plain[i * ldc + j]) <= tol);
                if (!(fabs(x - want) <= tol) && bad++ < 3)
                    CHECK(0,
                          "%s bits %d sym %d G %lld k %lld m %lld a %s: "
                          "C[%lld][%lld] = %.9g, want %.9g (bound %.3g)",
                          name, d->bits, d->symmetric, (long long)d->group,
                          (long long)k, (long long)m, agmm_dtype_name(adt),
                          (long long)i, (long long)j, x, want, tol);
                if (runs && c[i * ldc + j] != first[i * ldc + j] && bad++ < 3)
                    CHECK(0, "%s C[%lld][%lld] = %.9g, portable-a8 %.9g", name,
                          (long long)i, (long long)j, x,
                          (double)first[i * ldc + j]);
            }
        CHECK(bad == 0, "%s: %lld wrong elements", name, (long long)bad);
        CHECK(apart > 0,
              "%s bits %d k %lld m %lld: every element within the A8 bound "
              "of unquantized A's product (the check cannot tell)",
              name, d->bits, (long long)k, (long long)m);
        memcpy(first, c, sizeof(float) * (size_t)(m * ldc));
        runs++;
    }
    CHECK(runs >= 1, "no A8 variant ran");
    free(c);
    free(first);
    free(ref);
    free(bnd);
    free(plain);
    free(a);
    free(ax);
    agmm_wq_free(w);
}

static void a8_cases(void)
{
    static const int64_t ks[] = {7, 100, 129, 300};
    /* 1 and 2 rows: the VNNI kernel's panels side by side (n 33: 3 panels) */
    static const int64_t ms[] = {1, 2, 3, 8, 9, 17, 33};
    static const int64_t gs[] = {0, 32, 128};
    static const agmm_dtype_t adts[] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16,
                                        AGMM_DTYPE_FP16};
    int id = 9000;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
        for (int bits = 4; bits <= 8; bits += 4)
            for (int sym = 0; sym < 2; sym++)
                for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
                    id++;
                    weight_t w = random_weight(ks[ki], id % 2 ? 33 : 64, bits,
                                               sym, gs[gi], 0, id);
                    a8_case(&w, ms[id % 7], adts[id % 3], id);
                    weight_free(&w);
                }
    /* never chosen unless named or asked for */
    CHECK(!agmm_wq_kernel_is_a8(agmm_wq_kernel()) || getenv("AGMM_WQ_KERNEL"),
          "an A8 variant chosen by default");
    CHECK(agmm_wq_kernel_is_a8(agmm_wq_kernel_a8()) &&
              agmm_wq_kernel_supported(agmm_wq_kernel_a8()),
          "agmm_wq_kernel_a8: %s",
          agmm_wq_kernel_kind_name(agmm_wq_kernel_a8()));
}

/* A row of A with a NaN or an infinity gives a NaN row of C on both A8
 * variants (quantized alone it would become 0 or 127: gemm.c's
 * quantize_rows), as the oracle's; the other rows keep their values.
 * k 300 (3 groups of 128, the last partial) and 100 (one group of all of
 * k), so the vector quantizer's masked tails are crossed. */
static void a8_nonfinite(void)
{
    for (int t = 0; t < 2; t++) {
        int64_t k = t ? 100 : 300, n = 33, m = 4, lda = k, ldc = n;
        weight_t wt = random_weight(k, n, 4, t, t ? 0 : 128, 0, 9100 + t);
        agmm_wq_t *w = NULL;
        CHECK(agmm_wq_pack(&wt.d, &w) == AGMM_OK, "pack");
        float *a = malloc(sizeof(float) * (size_t)(m * lda));
        float *ax = malloc(sizeof(float) * (size_t)(m * lda));
        free(make_a(AGMM_DTYPE_FP32, m, k, lda, 0, 9200 + t, ax));
        memcpy(a, ax, sizeof(float) * (size_t)(m * lda));
        a[1 * lda + k - 1] = NAN; /* the last element: a masked tail */
        a[2 * lda + 5] = -INFINITY;
        a[3 * lda + 17] = INFINITY;
        double *ref = malloc(2 * sizeof(double) * (size_t)(m * ldc));
        double *bnd = ref + m * ldc; /* the same allocation */
        agmm_wq_ref_a8(&wt.d, m, a, lda, ref, bnd, ldc, 0);
        float *c = malloc(sizeof(float) * (size_t)(m * ldc));
        static const agmm_wq_kernel_t kinds[2] = {AGMM_WQ_KERNEL_PORTABLE_A8,
                                                  AGMM_WQ_KERNEL_AVX512_VNNI};
        for (int v = 0; v < 2; v++) {
            if (!agmm_wq_kernel_supported(kinds[v])) continue;
            const char *name = agmm_wq_kernel_kind_name(kinds[v]);
            CHECK(agmm_wq_gemm_with(kinds[v], w, m, a, AGMM_DTYPE_FP32, lda, c,
                                    AGMM_DTYPE_FP32, ldc, 0, n) == AGMM_OK,
                  "%s gemm", name);
            int64_t bad = 0;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double x = c[i * ldc + j], want = ref[i * ldc + j];
                    int ok = i ? isnan(x) && isnan(want)
                               : fabs(x - want) <= bnd[i * ldc + j];
                    if (!ok && bad++ < 3)
                        CHECK(0, "%s k %lld: C[%lld][%lld] = %.9g, want %.9g",
                              name, (long long)k, (long long)i, (long long)j, x,
                              want);
                }
            CHECK(bad == 0, "%s: %lld wrong elements (rows with NaN or inf)",
                  name, (long long)bad);
        }
        free(c);
        free(ref);
        free(a);
        free(ax);
        agmm_wq_free(w);
        weight_free(&wt);
    }
}

/* agmm_wq_kernel_for against the measurement it follows. */
static void selection(void)
{
    agmm_wq_kernel_t set = agmm_wq_kernel();
    for (int bits = 4; bits <= 8; bits += 4) {
        CHECK(agmm_wq_kernel_for(bits, AGMM_DTYPE_FP32, 1) !=
                      AGMM_WQ_KERNEL_AVX512_BF16 &&
                  agmm_wq_kernel_for(bits, AGMM_DTYPE_FP16, 32) !=
                      AGMM_WQ_KERNEL_AVX512_BF16,
              "fp32 / fp16 A on the dot kernel");
        for (int i = 0; i < AGMM_WQ_SELECT_ROWS; i++) {
            int64_t rows = 0;
            double fma = 0, dot = 0, took = 0;
            int got = agmm_wq_select_info(bits, i, &rows, &fma, &dot, &took);
            CHECK(got == agmm_wq_kernel_supported(AGMM_WQ_KERNEL_AVX512_BF16),
                  "select_info %d for bits %d", got, bits);
            if (!got) continue;
            CHECK(rows == (int64_t)1 << i && fma > 0 && dot > 0 && took > 0,
                  "select_info bits %d #%d: rows %lld fma %g dot %g", bits, i,
                  (long long)rows, fma, dot);
            printf("select int%d rows %lld: fma %.1f us, dot %.1f us -> %s "
                   "(measured in %.2f ms)\n",
                   bits, (long long)rows, fma * 1e6, dot * 1e6,
                   dot < fma ? "avx512bf16" : "avx512", took * 1e3);
            if (set == AGMM_WQ_KERNEL_AVX512_BF16 && !getenv("AGMM_WQ_KERNEL"))
                CHECK(agmm_wq_kernel_for(bits, AGMM_DTYPE_BF16, rows) ==
                          (dot < fma ? AGMM_WQ_KERNEL_AVX512_BF16
                                     : AGMM_WQ_KERNEL_AVX512),
                      "bits %d rows %lld: kernel_for disagrees with the "
                      "measurement",
                      bits, (long long)rows);
        }
    }
    CHECK(agmm_wq_select_info(4, AGMM_WQ_SELECT_ROWS, &(int64_t){0},
                              &(double){0}, &(double){0}, &(double){0}) == 0 &&
              agmm_wq_select_info(2, 0, &(int64_t){0}, &(double){0},
                                  &(double){0}, &(double){0}) == 0,
          "select_info out of range");
}

static void random_cases(void)
{
    static const int64_t ks[] = {1, 7, 64, 100, 129, 256, 300};
    static const int64_t ns[] = {1, 16, 17, 45};
    static const int64_t ms[] = {1, 8, 33};
    static const int64_t gs[] = {0, 32, 64, 128};
    static const agmm_dtype_t adts[] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16,
                                        AGMM_DTYPE_FP16};
    int id = 100;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int bits = 4; bits <= 8; bits += 4)
                for (int sym = 0; sym < 2; sym++)
                    for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++) {
                        id++;
                        weight_t w = random_weight(ks[ki], ns[ni], bits, sym,
                                                   gs[gi], id % 3 == 0, id);
                        int64_t n = ns[ni];
                        int64_t n0 = id % 4 == 1 ? n / 3 : 0;
                        int64_t n1 = id % 4 == 2 ? n - n / 4 : n;
                        run_case(&w, ms[id % 3], adts[id % 3],
                                 id % 5 == 0 ? AGMM_DTYPE_BF16
                                             : AGMM_DTYPE_FP32,
                                 n0, n1, 0, id);
                        weight_free(&w);
                    }
}

static void refusals(void)
{
    agmm_log_set_quiet(1);
    weight_t wt = hand_weight(37, 19, 4, 1, 32);
    agmm_wq_t *w = NULL;
    float a[40] = {0}, c[40];
    CHECK(agmm_wq_pack(&wt.d, &w) == AGMM_OK, "pack");
    CHECK(agmm_wq_gemm(w, 1, a, AGMM_DTYPE_FP32, 37, c, AGMM_DTYPE_FP32, 19, 0,
                       20) == AGMM_ERR_INVALID_ARG,
          "n1 > n");
    CHECK(agmm_wq_gemm(w, 1, a, AGMM_DTYPE_INT8, 37, c, AGMM_DTYPE_FP32, 19, 0,
                       19) == AGMM_ERR_INVALID_ARG,
          "A int8");
    CHECK(agmm_wq_gemm(w, 1, a, AGMM_DTYPE_FP32, 36, c, AGMM_DTYPE_FP32, 19, 0,
                       19) == AGMM_ERR_INVALID_ARG,
          "lda < k");
    CHECK(agmm_wq_gemm(w, 1, a, AGMM_DTYPE_FP32, 37, c, AGMM_DTYPE_FP16, 19, 0,
                       19) == AGMM_ERR_INVALID_ARG,
          "C fp16");
    CHECK(agmm_wq_gemm_with(AGMM_WQ_KERNEL_COUNT, w, 1, a, AGMM_DTYPE_FP32, 37,
                            c, AGMM_DTYPE_FP32, 19, 0,
                            19) == AGMM_ERR_UNSUPPORTED,
          "no such kernel");
    agmm_wq_free(w);
    agmm_wq_desc_t d = wt.d;
    d.bits = 2;
    CHECK(agmm_wq_pack(&d, &w) == AGMM_ERR_INVALID_ARG && !w, "bits 2");
    d = wt.d;
    d.group = 16;
    CHECK(agmm_wq_pack(&d, &w) == AGMM_ERR_INVALID_ARG && !w, "group 16");
    d = wt.d;
    uint8_t zeros[19 * 2];
    memset(zeros, 16, sizeof zeros);
    d.symmetric = 0;
    d.zeros = zeros;
    CHECK(agmm_wq_pack(&d, &w) == AGMM_ERR_INVALID_ARG && !w, "int4 zero 16");
    float *s = wt.scales;
    s[3] = INFINITY;
    CHECK(agmm_wq_pack(&wt.d, &w) == AGMM_ERR_INVALID_ARG && !w, "inf scale");
    CHECK(strstr(agmm_last_error(), "scale[0][3]") != NULL, "%s",
          agmm_last_error());
    weight_free(&wt);
    agmm_log_set_quiet(0);
}

static int env_mode(void)
{
    const char *want = getenv("AGMM_WQ_KERNEL");
    for (int k = 0; want && k < AGMM_WQ_KERNEL_COUNT; k++)
        if (!strcmp(want, agmm_wq_kernel_kind_name((agmm_wq_kernel_t)k)) &&
            !agmm_wq_kernel_supported((agmm_wq_kernel_t)k)) {
            printf("test_wq_gemm env: %s does not run here: skipped\n", want);
            return 0;
        }
    /* Forced: every row count of bf16 A runs it (no measurement), and
     * the dot variant's fp32 A runs the FMA kernel. */
    agmm_wq_kernel_t set = agmm_wq_kernel();
    for (int64_t rows = 1; rows <= 33; rows++)
        CHECK(agmm_wq_kernel_for(4, AGMM_DTYPE_BF16, rows) == set &&
                  agmm_wq_kernel_for(8, AGMM_DTYPE_FP32, rows) ==
                      (set == AGMM_WQ_KERNEL_AVX512_BF16 ? AGMM_WQ_KERNEL_AVX512
                                                         : set),
              "AGMM_WQ_KERNEL=%s: %lld rows run another variant",
              want ? want : "(unset)", (long long)rows);
    CHECK(want && strcmp(agmm_wq_kernel_name(), want) == 0,
          "AGMM_WQ_KERNEL=%s, kernel %s", want ? want : "(unset)",
          agmm_wq_kernel_name());
    weight_t w = hand_weight(37, 19, 4, 0, 32);
    agmm_wq_t *p = NULL;
    CHECK(agmm_wq_pack(&w.d, &p) == AGMM_OK, "pack");
    float a[37], c[19], ax[37];
    void *ab = make_a(AGMM_DTYPE_FP32, 1, 37, 37, 1, 0, ax);
    memcpy(a, ab, sizeof a);
    free(ab);
    double ref[19];
    agmm_wq_ref(&w.d, 1, ax, 37, ref, NULL, 19, 0);
    CHECK(agmm_wq_gemm(p, 1, a, AGMM_DTYPE_FP32, 37, c, AGMM_DTYPE_FP32, 19, 0,
                       19) == AGMM_OK,
          "gemm");
    for (int j = 0; j < 19; j++)
        CHECK(c[j] == ref[j], "C[%d] = %g, want %g", j, (double)c[j], ref[j]);
    agmm_wq_free(p);
    weight_free(&w);
    CHECK_DONE("test_wq_gemm env");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "env") == 0) return env_mode();
    for (int k = 0; k < AGMM_WQ_KERNEL_COUNT; k++)
        printf("kernel %s: %s\n", agmm_wq_kernel_kind_name((agmm_wq_kernel_t)k),
               agmm_wq_kernel_supported((agmm_wq_kernel_t)k) ? "runs"
                                                             : "not on this "
                                                               "CPU");
    hand_cases();
    random_cases();
    dot_cases();
    dot_subnormal_case();
    a8_cases();
    a8_nonfinite();
    selection();
    refusals();
    CHECK_DONE("test_wq_gemm");
}
