/* dtype conversion; see convert.h. */
#include "gemm/convert.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ------------------------------------------------------------ public */

size_t agmm_dtype_size(agmm_dtype_t dtype)
{
    switch (dtype) {
    case AGMM_DTYPE_FP16:
        return 2;
    case AGMM_DTYPE_BF16:
        return 2;
    case AGMM_DTYPE_FP32:
        return 4;
    case AGMM_DTYPE_INT8:
        return 1;
    }
    return 0;
}

const char *agmm_dtype_name(agmm_dtype_t dtype)
{
    switch (dtype) {
    case AGMM_DTYPE_FP16:
        return "fp16";
    case AGMM_DTYPE_BF16:
        return "bf16";
    case AGMM_DTYPE_FP32:
        return "fp32";
    case AGMM_DTYPE_INT8:
        return "int8";
    }
    return "invalid";
}

/* -------------------------------------------------------------- fp16 */

float agmm_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;

    if (e == 0x1f) {
        /* Inf, or NaN: payload moves to the top of the f32 mantissa and the
         * quiet bit is set, as VCVTPH2PS does (so both paths agree). */
        uint32_t q = m ? 0x00400000u : 0;
        return bits_f32(sign | 0x7f800000u | (m << 13) | q);
    }
    if (e == 0) {
        /* Zero or subnormal: m * 2^-24, exact in f32 (a normal number). */
        float v = (float)m * 0x1p-24f;
        return bits_f32(sign | f32_bits(v));
    }
    /* Normal: rebias the exponent from 15 to 127. */
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t agmm_f32_to_fp16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;

    if (x >= 0x7f800000u) {
        if (x == 0x7f800000u) return sign | 0x7c00u;
        /* NaN: keep the top 10 payload bits and force the quiet bit, so a
         * NaN whose payload lives only in the low 13 bits stays a NaN. */
        return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
    }
    /* 65520 = 0x477ff000 is exactly halfway between the largest half
     * (65504) and 65536; ties go to even, i.e. up, i.e. to infinity. */
    if (x >= 0x477ff000u) return sign | 0x7c00u;

    if (x < 0x38800000u) {
        /* Below 2^-14: the result is a half subnormal (or zero), counted in
         * units of 2^-24. Anything up to and including 2^-25 (exactly half
         * a unit, tie to the even 0) becomes zero. */
        if (x <= 0x33000000u) return sign;
        uint32_t e = x >> 23; /* 102..112 */
        uint32_t m = (x & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        /* Round to nearest, ties to even. Rounding 0x3ff up gives 0x400,
         * the smallest normal, which is the right encoding. */
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }

    /* Normal: rebias (subtract (127-15) << 23), then drop 13 mantissa bits
     * rounding to nearest even: adding 0xfff plus the kept lsb carries into
     * the kept bits exactly when the dropped part is above half, or equal
     * to half with an odd lsb. A carry out of the mantissa bumps the
     * exponent, which is correct; the overflow check above keeps it finite. */
    uint32_t r = x - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

/* -------------------------------------------------------------- bf16 */

float agmm_bf16_to_f32(uint16_t b)
{
    /* bf16 is the top half of an f32: exact, NaN payloads kept as is. */
    return bits_f32((uint32_t)b << 16);
}

uint16_t agmm_f32_to_bf16(float f)
{
    return agmm_f32_to_bf16_inline(f);
}

/* ------------------------------------------------------------ arrays */

void agmm_convert_to_f32_scalar(agmm_dtype_t dt, const void *src, float *dst,
                                size_t n)
{
    size_t i;
    switch (dt) {
    case AGMM_DTYPE_FP16: {
        const uint16_t *s = src;
        for (i = 0; i < n; i++)
            dst[i] = agmm_fp16_to_f32(s[i]);
        break;
    }
    case AGMM_DTYPE_BF16: {
        const uint16_t *s = src;
        for (i = 0; i < n; i++)
            dst[i] = agmm_bf16_to_f32(s[i]);
        break;
    }
    case AGMM_DTYPE_FP32:
        if (n) memcpy(dst, src, n * sizeof(float));
        break;
    case AGMM_DTYPE_INT8: { /* the values, unscaled */
        const int8_t *s = src;
        for (i = 0; i < n; i++)
            dst[i] = (float)s[i];
        break;
    }
    }
}

void agmm_convert_from_f32(agmm_dtype_t dt, const float *src, void *dst,
                           size_t n)
{
    size_t i;
    switch (dt) {
    case AGMM_DTYPE_FP16: {
        uint16_t *d = dst;
        for (i = 0; i < n; i++)
            d[i] = agmm_f32_to_fp16(src[i]);
        break;
    }
    case AGMM_DTYPE_BF16: {
        uint16_t *d = dst;
        for (i = 0; i < n; i++)
            d[i] = agmm_f32_to_bf16(src[i]);
        break;
    }
    case AGMM_DTYPE_FP32:
        if (n) memcpy(dst, src, n * sizeof(float));
        break;
    case AGMM_DTYPE_INT8: { /* round to nearest even, clamp to +-127 */
        int8_t *d = dst;
        for (i = 0; i < n; i++) {
            float v = nearbyintf(src[i]);
            d[i] = (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : v);
        }
        break;
    }
    }
}

#if defined(__x86_64__)

/* The tail (n % 8 elements) goes through the same instructions via a
 * zero-padded stack buffer, so vector and scalar paths can be compared on
 * every element. */

__attribute__((target("avx2,f16c"))) static void
fp16_to_f32_avx2(const uint16_t *s, float *d, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i h0 = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i h1 =
            _mm_loadu_si128((const __m128i *)(const void *)(s + i + 8));
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h0));
        _mm256_storeu_ps(d + i + 8, _mm256_cvtph_ps(h1));
    }
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    }
    if (i < n) {
        uint16_t tin[8] = {0};
        float tout[8];
        memcpy(tin, s + i, (n - i) * sizeof(uint16_t));
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)tin);
        _mm256_storeu_ps(tout, _mm256_cvtph_ps(h));
        memcpy(d + i, tout, (n - i) * sizeof(float));
    }
}

__attribute__((target("avx2,f16c"))) static void
bf16_to_f32_avx2(const uint16_t *s, float *d, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        __m256i lo = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(h));
        __m256i hi = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1));
        _mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)));
        _mm256_storeu_ps(d + i + 8,
                         _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16)));
    }
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m256i w = _mm256_cvtepu16_epi32(h);
        _mm256_storeu_ps(d + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    if (i < n) {
        uint16_t tin[8] = {0};
        float tout[8];
        memcpy(tin, s + i, (n - i) * sizeof(uint16_t));
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)tin);
        __m256i w = _mm256_cvtepu16_epi32(h);
        _mm256_storeu_ps(tout, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
        memcpy(d + i, tout, (n - i) * sizeof(float));
    }
}

#endif /* __x86_64__ */

enum { PATH_UNKNOWN = 0, PATH_SCALAR = 1, PATH_AVX2_F16C = 2 };

/* Chosen once. The detection is idempotent and has no side effects, so
 * threads racing on the first call all compute and store the same value;
 * the atomic makes that race well defined. */
static _Atomic int convert_path = PATH_UNKNOWN;

static int detect_path(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    /* "avx2" also checks that the OS saves the YMM state (XGETBV). F16C is
     * read from CPUID leaf 1 directly: not every compiler accepts "f16c" in
     * __builtin_cpu_supports. */
    unsigned eax, ebx, ecx, edx;
    if (__builtin_cpu_supports("avx2") &&
        __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C))
        return PATH_AVX2_F16C;
#endif
    return PATH_SCALAR;
}

static int get_path(void)
{
    int p = atomic_load_explicit(&convert_path, memory_order_relaxed);
    if (p == PATH_UNKNOWN) {
        p = detect_path();
        atomic_store_explicit(&convert_path, p, memory_order_relaxed);
    }
    return p;
}

const char *agmm_convert_path(void)
{
    return get_path() == PATH_AVX2_F16C ? "avx2+f16c" : "scalar";
}

void agmm_convert_to_f32(agmm_dtype_t dt, const void *src, float *dst, size_t n)
{
#if defined(__x86_64__)
    if (get_path() == PATH_AVX2_F16C) {
        switch (dt) {
        case AGMM_DTYPE_FP16:
            fp16_to_f32_avx2(src, dst, n);
            return;
        case AGMM_DTYPE_BF16:
            bf16_to_f32_avx2(src, dst, n);
            return;
        case AGMM_DTYPE_FP32:
        case AGMM_DTYPE_INT8:
            break;
        }
    }
#endif
    agmm_convert_to_f32_scalar(dt, src, dst, n);
}
