/* The attributes' epilogue pass; see epilogue.h. */
#include "gemm/epilogue.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "common/util.h"
#include "gemm/convert.h"

float agmm_gemm_act_f32(agmm_gemm_act_t act, float x)
{
    switch (act) {
    case AGMM_GEMM_ACT_NONE:
        return x;
    case AGMM_GEMM_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case AGMM_GEMM_ACT_GELU_TANH: {
        const float s = 0.7978845608028654f; /* sqrt(2 / pi) */
        return 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
    }
    case AGMM_GEMM_ACT_GELU_ERF:
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case AGMM_GEMM_ACT_SILU:
        return x / (1.0f + expf(-x));
    }
    return x;
}

/* e^x for the activations' loops, in plain float operations without a
 * branch or a call, so that -O3 vectorizes the loops around it (expf does
 * not vectorize without -ffast-math): Cody-Waite reduction by ln 2, then
 * Cephes' degree-6 polynomial on [-ln2/2, ln2/2] (about 2 ulp), scaled by
 * 2^k through the exponent bits. |x| is clamped to 87.4667, so k stays
 * in [-126, 126] (0 and infinity are approached, never reached: the
 * activations below need neither; a NaN x comes out a number, but the
 * activations multiply or divide x itself, so their NaN stays NaN). */
static inline float exp_vec(float x)
{
    /* |x| clamped on its bits (integer compares vectorize, float ones
     * keep the loop scalar or slow: measured 1.8 against 19 ns per SiLU) */
    union {
        float f;
        int32_t i;
    } v = {.f = x};
    int32_t mag = v.i & 0x7fffffff, sign = v.i & (int32_t)0x80000000;
    mag = mag > 0x42aeeeee ? 0x42aeeeee : mag; /* 87.4667f */
    v.i = sign | mag;
    x = v.f;
    float k = (x * 1.44269504088896341f + 0x1.8p23f) - 0x1.8p23f; /* rint */
    float f = x - k * 0.693359375f;
    f = f - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * f + 1.3981999507e-3f;
    p = p * f + 8.3334519073e-3f;
    p = p * f + 4.1665795894e-2f;
    p = p * f + 1.6666665459e-1f;
    p = p * f + 5.0000001201e-1f;
    p = p * f * f + f + 1.0f;
    union {
        uint32_t u;
        float f;
    } s = {.u = (uint32_t)((int32_t)k + 127) << 23};
    return p * s.f;
}

/* x[0..n) = act(x), one loop per activation (a switch per element would
 * keep the loop scalar). SiLU and the tanh GELU go through exp_vec
 * (tanh(y) = 1 - 2 / (e^2y + 1)); the erf GELU stays on erff. Measured:
 * docs/performance.md, "The epilogue's cost". */
static inline __attribute__((always_inline)) void activate(agmm_gemm_act_t act,
                                                           float *x, int64_t n)
{
    switch (act) {
    case AGMM_GEMM_ACT_NONE:
        return;
    case AGMM_GEMM_ACT_RELU:
        for (int64_t j = 0; j < n; j++)
            x[j] = x[j] > 0.0f ? x[j] : 0.0f;
        return;
    case AGMM_GEMM_ACT_SILU:
        for (int64_t j = 0; j < n; j++)
            x[j] = x[j] / (1.0f + exp_vec(-x[j]));
        return;
    case AGMM_GEMM_ACT_GELU_TANH:
        for (int64_t j = 0; j < n; j++) {
            const float s = 0.7978845608028654f; /* sqrt(2 / pi) */
            float y = s * (x[j] + 0.044715f * x[j] * x[j] * x[j]);
            float t = 1.0f - 2.0f / (exp_vec(2.0f * y) + 1.0f);
            x[j] = 0.5f * x[j] * (1.0f + t);
        }
        return;
    case AGMM_GEMM_ACT_GELU_ERF:
        for (int64_t j = 0; j < n; j++)
            x[j] = agmm_gemm_act_f32(act, x[j]);
        return;
    }
}

/* C_old[j] of one row of c in dtype dt. */
static float old_value(agmm_dtype_t dt, const void *row, int64_t j)
{
    switch (dt) {
    case AGMM_DTYPE_FP32:
        return ((const float *)row)[j];
    case AGMM_DTYPE_BF16:
        return agmm_bf16_to_f32(((const uint16_t *)row)[j]);
    case AGMM_DTYPE_FP16:
        return agmm_fp16_to_f32(((const uint16_t *)row)[j]);
    case AGMM_DTYPE_INT8: /* never a C dtype (agmm_gemm_check) */
        break;
    }
    return 0.0f;
}

/* finish() compiled for AVX-512 and AVX2 as well as the baseline x86-64,
 * the loader picking one for the CPU (GCC's target_clones, an ifunc): the
 * baseline's 4-lane SSE loops left SiLU at 3.2 ns an element on a Zen 4
 * core, most of an epilogue's cost (docs/performance.md, "The epilogue's
 * cost"). Neither target enables FMA, so every clone rounds each step
 * alike: the same bits on every CPU (checked by the output's hash before
 * and after, not by a test: a test cannot call the baseline clone on a
 * CPU that has AVX-512). Kept out of clang and sanitizer builds, where it
 * was not tried; they keep the one baseline version. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define AGMM_EPI_CLONES                                                        \
    __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AGMM_EPI_CLONES
#endif

/* Columns per block of the passes below: a row goes through a stack
 * buffer of this many floats, one simple loop per step (no branch inside
 * a loop: the compiler may vectorize them; L1-resident). */
enum { BLK = 256 };

/* The steps after the product for columns [j0, j0 + nb) of one row, x
 * holding the products: in the order of epilogue.h, one fp32 operation
 * per element per step, each its own statement (compilers contract a * b
 * + c into an fma within one expression at most); then stored into crow
 * in c_dtype. Both passes below go through here, so they round alike. */
AGMM_EPI_CLONES
static void finish(const agmm_gemm_attr_t *attr, float *x, int64_t nb,
                   int64_t j0, const float *w_scale, const float *a_scale,
                   const float *bias, void *crow)
{
    if (w_scale)
        for (int64_t j = 0; j < nb; j++)
            x[j] = x[j] * w_scale[j0 + j];
    if (a_scale) {
        float s = *a_scale;
        for (int64_t j = 0; j < nb; j++)
            x[j] = x[j] * s;
    }
    if (bias)
        for (int64_t j = 0; j < nb; j++)
            x[j] = x[j] + bias[j0 + j];
    if (attr->accumulate && attr->c_dtype == AGMM_DTYPE_FP32) {
        const float *old = (const float *)crow + j0;
        for (int64_t j = 0; j < nb; j++)
            x[j] = x[j] + old[j];
    } else if (attr->accumulate) {
        for (int64_t j = 0; j < nb; j++)
            x[j] = x[j] + old_value(attr->c_dtype, crow, j0 + j);
    }
    activate(attr->act, x, nb);
    size_t es = agmm_dtype_size(attr->c_dtype);
    if (attr->c_dtype == AGMM_DTYPE_BF16) { /* a loop that vectorizes */
        uint16_t *d = (uint16_t *)(void *)crow + j0;
        for (int64_t j = 0; j < nb; j++)
            d[j] = agmm_f32_to_bf16_inline(x[j]);
        return;
    }
    agmm_convert_from_f32(attr->c_dtype, x,
                          (unsigned char *)crow + (size_t)j0 * es, (size_t)nb);
}

void agmm_gemm_epilogue(const agmm_gemm_attr_t *attr, int64_t m, int64_t ncols,
                        const float *acc, int64_t ldacc, const float *a_scale,
                        int64_t ld_a_scale, const float *w_scale,
                        const float *bias, void *c, int64_t ldc)
{
    size_t es = agmm_dtype_size(attr->c_dtype);
    size_t lds = ld_a_scale > 1 ? (size_t)ld_a_scale : 1;
    float x[BLK];
    for (int64_t i = 0; i < m; i++) {
        const float *v = acc + (size_t)i * (size_t)ldacc;
        unsigned char *crow = (unsigned char *)c + (size_t)i * (size_t)ldc * es;
        const float *as = a_scale ? a_scale + (size_t)i * lds : NULL;
        for (int64_t j0 = 0; j0 < ncols; j0 += BLK) {
            int64_t nb = AGMM_MIN((int64_t)BLK, ncols - j0);
            memcpy(x, v + j0, (size_t)nb * sizeof(float));
            finish(attr, x, nb, j0, w_scale, as, bias, crow);
        }
    }
}

void agmm_gemm_epilogue_s32(const agmm_gemm_attr_t *attr, int64_t m,
                            int64_t ncols, const int32_t *acc, int64_t ldacc,
                            const int32_t *comp, const float *a_scale,
                            int64_t ld_a_scale, const float *w_scale,
                            const float *bias, void *c, int64_t ldc)
{
    size_t es = agmm_dtype_size(attr->c_dtype);
    size_t lds = ld_a_scale > 1 ? (size_t)ld_a_scale : 1;
    float x[BLK];
    for (int64_t i = 0; i < m; i++) {
        const int32_t *v = acc + (size_t)i * (size_t)ldacc;
        unsigned char *crow = (unsigned char *)c + (size_t)i * (size_t)ldc * es;
        const float *as = a_scale ? a_scale + (size_t)i * lds : NULL;
        for (int64_t j0 = 0; j0 < ncols; j0 += BLK) {
            int64_t nb = AGMM_MIN((int64_t)BLK, ncols - j0);
            /* exact: the true sum fits (k <= 65536), so no wrap */
            if (comp)
                for (int64_t j = 0; j < nb; j++)
                    x[j] = (float)(v[j0 + j] - comp[j0 + j]);
            else
                for (int64_t j = 0; j < nb; j++)
                    x[j] = (float)v[j0 + j];
            finish(attr, x, nb, j0, w_scale, as, bias, crow);
        }
    }
}
