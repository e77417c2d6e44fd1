/* dtype conversion: exhaustive fp16/bf16 checks, rounding edge cases, and
 * the vectorised path against the scalar one. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "check.h"
#include "gemm/convert.h"

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* NaN / inf tests on the bits, so they hold under -ffast-math too */
static int f32_isnan(float f)
{
    return (fbits(f) & 0x7fffffffu) > 0x7f800000u;
}
static int f32_isinf(float f)
{
    return (fbits(f) & 0x7fffffffu) == 0x7f800000u;
}

static int fp16_is_nan(uint16_t h)
{
    return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
}
static int bf16_is_nan(uint16_t b)
{
    return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu);
}

/* f32 -> fp16 expecting exact bits */
#define CHECK_H(fval, want)                                                    \
    do {                                                                       \
        float f_ = (fval);                                                     \
        uint16_t got_ = agmm_f32_to_fp16(f_);                                  \
        CHECK(got_ == (uint16_t)(want),                                        \
              "f32_to_fp16(%a = 0x%08x) = 0x%04x, want 0x%04x", (double)f_,    \
              fbits(f_), got_, (unsigned)(want));                              \
    } while (0)

#define CHECK_B(fval, want)                                                    \
    do {                                                                       \
        float f_ = (fval);                                                     \
        uint16_t got_ = agmm_f32_to_bf16(f_);                                  \
        CHECK(got_ == (uint16_t)(want),                                        \
              "f32_to_bf16(%a = 0x%08x) = 0x%04x, want 0x%04x", (double)f_,    \
              fbits(f_), got_, (unsigned)(want));                              \
    } while (0)

static void test_dtype_info(void)
{
    CHECK(agmm_dtype_size(AGMM_DTYPE_FP16) == 2, "fp16 size %zu",
          agmm_dtype_size(AGMM_DTYPE_FP16));
    CHECK(agmm_dtype_size(AGMM_DTYPE_BF16) == 2, "bf16 size %zu",
          agmm_dtype_size(AGMM_DTYPE_BF16));
    CHECK(agmm_dtype_size(AGMM_DTYPE_FP32) == 4, "fp32 size %zu",
          agmm_dtype_size(AGMM_DTYPE_FP32));
    CHECK(agmm_dtype_size((agmm_dtype_t)7) == 0, "invalid size %zu",
          agmm_dtype_size((agmm_dtype_t)7));
    CHECK(strcmp(agmm_dtype_name(AGMM_DTYPE_FP16), "fp16") == 0, "%s",
          agmm_dtype_name(AGMM_DTYPE_FP16));
    CHECK(strcmp(agmm_dtype_name(AGMM_DTYPE_BF16), "bf16") == 0, "%s",
          agmm_dtype_name(AGMM_DTYPE_BF16));
    CHECK(strcmp(agmm_dtype_name(AGMM_DTYPE_FP32), "fp32") == 0, "%s",
          agmm_dtype_name(AGMM_DTYPE_FP32));
    CHECK(strcmp(agmm_dtype_name((agmm_dtype_t)-1), "invalid") == 0, "%s",
          agmm_dtype_name((agmm_dtype_t)-1));
}

static void test_fp16_exhaustive(void)
{
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = agmm_fp16_to_f32(h);
        uint16_t back = agmm_f32_to_fp16(f);
        if (fp16_is_nan(h)) {
            CHECK(f32_isnan(f), "fp16 0x%04x is NaN but f32 is %a", h,
                  (double)f);
            CHECK(fp16_is_nan(back) && (back & 0x8000u) == (h & 0x8000u),
                  "fp16 NaN 0x%04x -> 0x%04x", h, back);
            /* quiet NaN payload survives both ways */
            CHECK(!(h & 0x200u) || back == h, "quiet NaN 0x%04x -> 0x%04x", h,
                  back);
        } else {
            CHECK(back == h, "fp16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
            /* value matches the definition */
            int e = (h >> 10) & 0x1f, m = h & 0x3ff;
            double v = e == 0x1f ? INFINITY
                       : e == 0  ? ldexp(m, -24)
                                 : ldexp(1024 + m, e - 25);
            if (h & 0x8000u) v = -v;
            CHECK((double)f == v && !signbit(f) == !signbit(v),
                  "fp16 0x%04x = %a, want %a", h, (double)f, v);
        }
    }
}

static void test_fp16_values(void)
{
    CHECK(agmm_fp16_to_f32(0x3c00) == 1.0f, "%a",
          (double)agmm_fp16_to_f32(0x3c00));
    CHECK(agmm_fp16_to_f32(0x7bff) == 65504.0f, "%a",
          (double)agmm_fp16_to_f32(0x7bff));
    CHECK(agmm_fp16_to_f32(0x0001) == 0x1p-24f, "%a",
          (double)agmm_fp16_to_f32(0x0001));
    CHECK(agmm_fp16_to_f32(0x03ff) == 1023 * 0x1p-24f, "%a",
          (double)agmm_fp16_to_f32(0x03ff));
    CHECK(agmm_fp16_to_f32(0x0400) == 0x1p-14f, "%a",
          (double)agmm_fp16_to_f32(0x0400));
    CHECK(fbits(agmm_fp16_to_f32(0x8000)) == 0x80000000u, "-0 -> 0x%08x",
          fbits(agmm_fp16_to_f32(0x8000)));
    CHECK(agmm_fp16_to_f32(0xc000) == -2.0f, "%a",
          (double)agmm_fp16_to_f32(0xc000));
    CHECK(f32_isinf(agmm_fp16_to_f32(0x7c00)) && agmm_fp16_to_f32(0x7c00) > 0,
          "+inf");
    CHECK(f32_isinf(agmm_fp16_to_f32(0xfc00)) && agmm_fp16_to_f32(0xfc00) < 0,
          "-inf");
    CHECK(f32_isnan(agmm_fp16_to_f32(0x7e00)), "nan");
    CHECK(f32_isnan(agmm_fp16_to_f32(0x7c01)), "snan");

    CHECK_H(1.0f, 0x3c00);
    CHECK_H(-2.0f, 0xc000);
    CHECK_H(65504.0f, 0x7bff);
    CHECK_H(0x1p-24f, 0x0001);
    CHECK_H(0.0f, 0x0000);
    CHECK_H(-0.0f, 0x8000);
    CHECK_H(0.333251953125f, 0x3555);
    /* ties to even around 1.0 (ulp 2^-10) */
    CHECK_H(1.0f + 0x1p-11f, 0x3c00);            /* tie, 1.0 is even */
    CHECK_H(1.0f + 3 * 0x1p-11f, 0x3c02);        /* tie, up to even 1+2^-9 */
    CHECK_H(1.0f + 0x1p-11f + 0x1p-20f, 0x3c01); /* above the tie */
    CHECK_H(1.0f + 0x1p-11f - 0x1p-20f, 0x3c00); /* below the tie */
    CHECK_H(-(1.0f + 3 * 0x1p-11f), 0xbc02);
    CHECK_H(2047.5f, 0x6800); /* 2047.5: tie between 2047 (odd) and 2048 */
    CHECK_H(2046.5f, 0x67fe); /* tie between 2046 (even) and 2047 */
    /* overflow */
    CHECK_H(65519.0f, 0x7bff);
    CHECK_H(65519.996f, 0x7bff);
    CHECK_H(65520.0f, 0x7c00); /* tie between 65504 and 65536: to inf */
    CHECK_H(-65520.0f, 0xfc00);
    CHECK_H(65536.0f, 0x7c00);
    CHECK_H(1e10f, 0x7c00);
    CHECK_H(3.4028235e38f, 0x7c00);
    CHECK_H(-3.4028235e38f, 0xfc00);
    CHECK_H(INFINITY, 0x7c00);
    CHECK_H(-INFINITY, 0xfc00);
    /* subnormals and underflow, unit 2^-24 */
    CHECK_H(0x1p-26f, 0x0000);
    CHECK_H(-0x1p-26f, 0x8000);
    CHECK_H(0x1p-25f, 0x0000);            /* tie to even 0 */
    CHECK_H(0x1p-25f + 0x1p-40f, 0x0001); /* just above the tie */
    CHECK_H(-(0x1p-25f + 0x1p-40f), 0x8001);
    CHECK_H(0x1p-25f - 0x1p-40f, 0x0000);
    CHECK_H(1.5f * 0x1p-24f, 0x0002); /* tie 1|2 -> 2 */
    CHECK_H(2.5f * 0x1p-24f, 0x0002); /* tie 2|3 -> 2 */
    CHECK_H(3.5f * 0x1p-24f, 0x0004); /* tie 3|4 -> 4 */
    CHECK_H(2.75f * 0x1p-24f, 0x0003);
    CHECK_H(1022.5f * 0x1p-24f, 0x03fe); /* tie 1022|1023 -> 1022 */
    CHECK_H(1023.5f * 0x1p-24f, 0x0400); /* tie -> smallest normal */
    CHECK_H(1023.25f * 0x1p-24f, 0x03ff);
    CHECK_H(0x1p-14f, 0x0400);
    CHECK_H(0x1p-14f + 0x1p-25f, 0x0400); /* tie at the normal edge */
    CHECK_H(0x1p-14f + 0x1p-24f + 0x1p-25f, 0x0402);
    CHECK_H(bitsf(0x00000001u), 0x0000); /* f32 denormal */
    CHECK_H(bitsf(0x80000001u), 0x8000);
    /* NaN */
    {
        uint16_t h = agmm_f32_to_fp16(NAN);
        CHECK(fp16_is_nan(h) && (h & 0x200u), "NAN -> 0x%04x", h);
        h = agmm_f32_to_fp16(bitsf(0xffc00000u));
        CHECK(h == 0xfe00, "-qNaN -> 0x%04x", h);
        h = agmm_f32_to_fp16(bitsf(0x7f800001u));
        CHECK(fp16_is_nan(h), "sNaN low payload -> 0x%04x", h);
        h = agmm_f32_to_fp16(bitsf(0x7fffffffu));
        CHECK(h == 0x7fff, "0x7fffffff -> 0x%04x", h);
        h = agmm_f32_to_fp16(bitsf(0x7fc02000u));
        CHECK(h == 0x7e01, "payload 0x7fc02000 -> 0x%04x", h);
    }
}

static void test_bf16_exhaustive(void)
{
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t b = (uint16_t)i;
        float f = agmm_bf16_to_f32(b);
        uint16_t back = agmm_f32_to_bf16(f);
        CHECK(fbits(f) == (uint32_t)b << 16, "bf16 0x%04x -> 0x%08x", b,
              fbits(f));
        if (bf16_is_nan(b)) {
            CHECK(f32_isnan(f), "bf16 0x%04x not NaN", b);
            CHECK(bf16_is_nan(back) && (back & 0x8000u) == (b & 0x8000u),
                  "bf16 NaN 0x%04x -> 0x%04x", b, back);
            CHECK(!(b & 0x40u) || back == b, "quiet NaN 0x%04x -> 0x%04x", b,
                  back);
        } else {
            CHECK(back == b, "bf16 0x%04x -> %a -> 0x%04x", b, (double)f, back);
        }
    }
}

static void test_bf16_values(void)
{
    CHECK(agmm_bf16_to_f32(0x3f80) == 1.0f, "%a",
          (double)agmm_bf16_to_f32(0x3f80));
    CHECK(fbits(agmm_bf16_to_f32(0x8000)) == 0x80000000u, "-0");
    CHECK_B(1.0f, 0x3f80);
    CHECK_B(-0.0f, 0x8000);
    CHECK_B(1.0f + 0x1p-8f, 0x3f80);     /* tie, 1.0 even */
    CHECK_B(1.0f + 3 * 0x1p-8f, 0x3f82); /* tie, up to even */
    CHECK_B(1.0f + 0x1p-8f + 0x1p-20f, 0x3f81);
    CHECK_B(1.0f + 0x1p-8f - 0x1p-20f, 0x3f80);
    CHECK_B(-(1.0f + 3 * 0x1p-8f), 0xbf82);
    CHECK_B(bitsf(0x7f7fffffu), 0x7f80); /* FLT_MAX rounds to inf */
    CHECK_B(bitsf(0x7f7f7fffu), 0x7f7f);
    CHECK_B(bitsf(0x7f7f8000u), 0x7f80); /* tie, 0x7f7f odd: up */
    CHECK_B(bitsf(0x7f7e8000u), 0x7f7e); /* tie, 0x7f7e even: stays */
    CHECK_B(bitsf(0xff7fffffu), 0xff80);
    CHECK_B(INFINITY, 0x7f80);
    CHECK_B(-INFINITY, 0xff80);
    CHECK_B(bitsf(0x00008000u), 0x0000); /* subnormal tie to 0 */
    CHECK_B(bitsf(0x00018000u), 0x0002); /* subnormal tie up */
    CHECK_B(bitsf(0x00008001u), 0x0001);
    CHECK_B(bitsf(0x007fffffu), 0x0080); /* to smallest normal */
    {
        uint16_t b = agmm_f32_to_bf16(bitsf(0x7fffffffu));
        CHECK(bf16_is_nan(b), "0x7fffffff -> 0x%04x", b);
        CHECK(b == 0x7fff, "0x7fffffff -> 0x%04x", b);
        b = agmm_f32_to_bf16(bitsf(0x7f800001u));
        CHECK(bf16_is_nan(b), "0x7f800001 -> 0x%04x (rounded into inf?)", b);
        b = agmm_f32_to_bf16(bitsf(0xff800001u));
        CHECK(bf16_is_nan(b) && (b & 0x8000u), "0xff800001 -> 0x%04x", b);
        b = agmm_f32_to_bf16(bitsf(0x7fbfffffu));
        CHECK(bf16_is_nan(b), "0x7fbfffff -> 0x%04x", b);
        b = agmm_f32_to_bf16(NAN);
        CHECK(bf16_is_nan(b), "NAN -> 0x%04x", b);
    }
}

/* The dispatched path against the scalar one, bit for bit. */
static void test_paths(agmm_dtype_t dt)
{
    enum { N = 65536, PAD = 64 };
    uint16_t *src = malloc((N + PAD) * sizeof *src);
    float *v = malloc((N + PAD) * sizeof *v);
    float *s = malloc((N + PAD) * sizeof *s);
    if (!src || !v || !s) {
        CHECK(0, "malloc failed");
        free(src), free(v), free(s);
        return;
    }
    for (uint32_t i = 0; i < N + PAD; i++)
        src[i] =
            (uint16_t)(i * 40503u + 7u); /* odd multiplier: a permutation */
    /* full array: every bit pattern once */
    for (uint32_t i = 0; i < N; i++)
        src[i] = (uint16_t)i;
    agmm_convert_to_f32(dt, src, v, N);
    agmm_convert_to_f32_scalar(dt, src, s, N);
    long bad = 0;
    uint32_t first = 0;
    for (uint32_t i = 0; i < N; i++)
        if (fbits(v[i]) != fbits(s[i]) && bad++ == 0) first = i;
    CHECK(bad == 0,
          "%s: %ld of 65536 differ, first 0x%04x: 0x%08x vs scalar 0x%08x",
          agmm_dtype_name(dt), bad, first, fbits(v[first]), fbits(s[first]));

    /* short and unaligned runs: tails, no writes past n */
    for (size_t off = 1; off < 40; off += 2) {
        for (size_t n = 0; n <= 37; n++) {
            const uint16_t *in = src + off * 997 % (N - 64) + (off & 1);
            float *vo = v + off, *so = s + off;
            for (size_t i = 0; i < n + 8; i++)
                vo[i] = so[i] = bitsf(0xdeadbeefu);
            agmm_convert_to_f32(dt, in, vo, n);
            agmm_convert_to_f32_scalar(dt, in, so, n);
            int ok = 1;
            for (size_t i = 0; i < n + 8; i++)
                ok &= fbits(vo[i]) == fbits(so[i]);
            int guard = 1;
            for (size_t i = n; i < n + 8; i++)
                guard &= fbits(vo[i]) == 0xdeadbeefu;
            CHECK(ok, "%s: off %zu n %zu: vector and scalar differ",
                  agmm_dtype_name(dt), off, n);
            CHECK(guard, "%s: off %zu n %zu: wrote past n", agmm_dtype_name(dt),
                  off, n);
        }
    }
    free(src), free(v), free(s);
}

static void test_arrays(void)
{
    float in[7] = {
        1.0f, -2.5f, 65504.0f, 65520.0f, 0x1p-25f + 0x1p-40f, 1.0f + 0x1p-11f,
        -0.0f};
    uint16_t h[7], b[7];
    float f32[7], back[7];
    agmm_convert_from_f32(AGMM_DTYPE_FP16, in, h, 7);
    agmm_convert_from_f32(AGMM_DTYPE_BF16, in, b, 7);
    for (int i = 0; i < 7; i++) {
        CHECK(h[i] == agmm_f32_to_fp16(in[i]), "from_f32 fp16 [%d] 0x%04x", i,
              h[i]);
        CHECK(b[i] == agmm_f32_to_bf16(in[i]), "from_f32 bf16 [%d] 0x%04x", i,
              b[i]);
    }
    agmm_convert_from_f32(AGMM_DTYPE_FP32, in, f32, 7);
    CHECK(memcmp(f32, in, sizeof in) == 0, "from_f32 fp32 is not a copy");
    agmm_convert_to_f32(AGMM_DTYPE_FP32, in, back, 7);
    CHECK(memcmp(back, in, sizeof in) == 0, "to_f32 fp32 is not a copy");
    agmm_convert_to_f32_scalar(AGMM_DTYPE_FP32, in, back, 7);
    CHECK(memcmp(back, in, sizeof in) == 0, "to_f32_scalar fp32 is not a copy");
    agmm_convert_to_f32(AGMM_DTYPE_FP16, h, back, 7);
    CHECK(back[0] == 1.0f && back[1] == -2.5f && back[2] == 65504.0f &&
              f32_isinf(back[3]) && back[4] == 0x1p-24f && back[5] == 1.0f &&
              fbits(back[6]) == 0x80000000u,
          "fp16 array round trip: %a %a %a %a %a %a %a", (double)back[0],
          (double)back[1], (double)back[2], (double)back[3], (double)back[4],
          (double)back[5], (double)back[6]);
    /* n = 0 with NULL pointers is harmless */
    agmm_convert_to_f32(AGMM_DTYPE_FP16, NULL, NULL, 0);
    agmm_convert_to_f32(AGMM_DTYPE_FP32, NULL, NULL, 0);
    agmm_convert_from_f32(AGMM_DTYPE_BF16, NULL, NULL, 0);
    CHECK(1, "n = 0");
}

int main(void)
{
    const char *path = agmm_convert_path();
    printf("test_convert: path %s\n", path);
    CHECK(strcmp(path, "avx2+f16c") == 0 || strcmp(path, "scalar") == 0,
          "path %s", path);
    test_dtype_info();
    test_fp16_exhaustive();
    test_fp16_values();
    test_bf16_exhaustive();
    test_bf16_values();
    test_paths(AGMM_DTYPE_FP16);
    test_paths(AGMM_DTYPE_BF16);
    test_arrays();
    CHECK_DONE("test_convert");
}
