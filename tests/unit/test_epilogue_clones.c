/* The epilogue pass (gemm/epilogue.c) is compiled in clones, one per
 * instruction set, the loader picking one for the CPU; its comment
 * promises the same bits from each (no contraction into FMAs, only
 * explicit exact fmaf() steps, the same operations in the same order), so
 * that a plan's output does not depend on the CPU it ran on. This builds the
 * file twice more, without clones (the baseline x86-64's loops) and with
 * x86-64-v3's clone alone (epilogue_clone_*.c), and compares the library's
 * result with both byte for byte (NaN for NaN: which NaN's payload an addition
 * of two keeps may differ, see same()): every activation, with and without a
 * bias, scales and accumulate, fp32, bf16 and fp16 out, in place, fp32 and
 * int32 sums; values over the activations' ranges, zeros of both signs, NaN,
 * infinities, huge, tiny and subnormal numbers; widths that end a vector
 * and a block early. Prints which clone the library's loader took, and
 * checks that agmm_gemm_epilogue_isa() names it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gemm/epilogue.h"

/* The copies' functions (epilogue_clone_*.c), typed as the library's. */
extern __typeof__(agmm_gemm_epilogue) base_gemm_epilogue, v3_gemm_epilogue;
extern __typeof__(agmm_gemm_epilogue_s32) base_gemm_epilogue_s32,
    v3_gemm_epilogue_s32;

enum { M = 4, LD = 613, NV = 3 }; /* NV: library, baseline, x86-64-v3 */

static float value(int64_t i)
{
    static const float special[] = {
        0.0f,   -0.0f,  1e30f,    -1e30f,    1e-40f, -1e-40f,  88.0f,
        -88.0f, 1e-45f, INFINITY, -INFINITY, NAN,    65504.0f, 70000.0f};
    size_t ns = sizeof special / sizeof special[0];
    if (i % 41 < (int64_t)ns) return special[i % 41];
    unsigned h = (unsigned)(i * 2654435761u) >> 8;
    return (float)h / (float)(1u << 24) * 40.0f - 20.0f;
}

/* The n elements of x and y (dtype dt) alike: the same bits, or both NaN.
 * An addition of two NaNs keeps one operand's payload (x86 the first's),
 * and the compiler may order a commutative addition either way in a
 * clone: which NaN comes out is the one thing the clones may differ in. */
static int same(agmm_dtype_t dt, const unsigned char *x, const unsigned char *y,
                int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t a = 0, b = 0, mag, inf;
        if (dt == AGMM_DTYPE_FP32) {
            memcpy(&a, x + 4 * i, 4);
            memcpy(&b, y + 4 * i, 4);
            mag = 0x7fffffffu;
            inf = 0x7f800000u;
        } else {
            uint16_t a16, b16;
            memcpy(&a16, x + 2 * i, 2);
            memcpy(&b16, y + 2 * i, 2);
            a = a16;
            b = b16;
            mag = 0x7fffu;
            inf = dt == AGMM_DTYPE_BF16 ? 0x7f80u : 0x7c00u;
        }
        if (a != b && !((a & mag) > inf && (b & mag) > inf)) return 0;
    }
    return 1;
}

/* The clone GCC's loader takes, from the CPU's features one by one: what
 * agmm_gemm_epilogue_isa() (plans' gemm info, the tool's gemm line) must
 * name. */
static const char *clone_taken(void)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512cd"))
        return "x86-64-v4";
    if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3";
#endif
    return "x86-64";
}

int main(void)
{
    static const agmm_gemm_act_t acts[] = {
        AGMM_GEMM_ACT_NONE, AGMM_GEMM_ACT_RELU, AGMM_GEMM_ACT_SILU,
        AGMM_GEMM_ACT_GELU_TANH, AGMM_GEMM_ACT_GELU_ERF};
    static const agmm_dtype_t outs[] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16,
                                        AGMM_DTYPE_FP16};
    static const int64_t widths[] = {1, 15, 17, 256, 257, 600};
    float *acc = malloc(sizeof(float) * M * LD);
    int32_t *acc32 = malloc(sizeof(int32_t) * M * LD);
    int32_t *comp = malloc(sizeof(int32_t) * LD);
    float *bias = malloc(sizeof(float) * LD), *ws = malloc(sizeof(float) * LD);
    float as[M];
    unsigned char *c[NV], *old = malloc(4 * M * LD);
    for (int v = 0; v < NV; v++)
        c[v] = malloc(4 * M * LD);
    for (int64_t i = 0; i < M * LD; i++) {
        acc[i] = value(i);
        acc32[i] = (int32_t)((uint32_t)(i * 2654435761u) >> 8) - (1 << 23);
        old[4 * i] = (unsigned char)(i * 13);
        old[4 * i + 1] = (unsigned char)(i * 7);
        old[4 * i + 2] = (unsigned char)(i * 5 + 60);
        old[4 * i + 3] = (unsigned char)(0x3c + i % 3);
    }
    for (int64_t j = 0; j < LD; j++) {
        bias[j] = value(7 * j + 3) * 0.5f;
        ws[j] = 1.0f + (float)(j % 9) * 0.013f;
        comp[j] = (int32_t)(j * 31) - 9000;
    }
    for (int i = 0; i < M; i++)
        as[i] = 0.25f + (float)i * 0.375f;
    int cases = 0;
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
        for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++)
            for (int flags = 0; flags < 16; flags++)
                for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
                    int b = flags & 1, sc = flags & 2, accu = flags & 4,
                        s32 = flags & 8;
                    int inplace =
                        !s32 && !accu && !sc && b && outs[o] == AGMM_DTYPE_FP32;
                    int64_t n = widths[w];
                    agmm_gemm_attr_t at;
                    agmm_gemm_attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
                    at.bias = b;
                    at.act = acts[a];
                    at.c_dtype = outs[o];
                    at.accumulate = accu != 0;
                    size_t bytes = agmm_dtype_size(outs[o]) * M * LD;
                    for (int v = 0; v < NV; v++) {
                        /* C_old for accumulate, the sums for in place */
                        memcpy(c[v], inplace ? (const void *)acc : old, bytes);
                        const float *src = inplace ? (const float *)c[v] : acc;
                        const float *bs = b ? bias : NULL;
                        const float *wsc = sc ? ws : NULL;
                        const float *asc = sc ? as : NULL;
                        if (s32)
                            (v == 0   ? agmm_gemm_epilogue_s32
                             : v == 1 ? base_gemm_epilogue_s32
                                      : v3_gemm_epilogue_s32)(
                                &at, M, n, acc32, LD, comp, asc, 1, wsc, bs,
                                c[v], LD);
                        else
                            (v == 0   ? agmm_gemm_epilogue
                             : v == 1 ? base_gemm_epilogue
                                      : v3_gemm_epilogue)(
                                &at, M, n, src, LD, asc, 1, wsc, bs, c[v], LD);
                    }
                    for (int v = 1; v < NV; v++) {
                        CHECK(same(outs[o], c[0], c[v], M * LD),
                              "%s differs from the library's clone: act %s, "
                              "out %s, bias %d, scales %d, accumulate %d, "
                              "int32 %d, in place %d, width %lld",
                              v == 1 ? "the baseline" : "x86-64-v3's",
                              agmm_gemm_act_name(acts[a]),
                              agmm_dtype_name(outs[o]), b, sc != 0, accu != 0,
                              s32 != 0, inplace, (long long)n);
                    }
                    cases++;
                }
    printf("epilogue clones: %d cases compared, the library's clone: %s\n",
           cases, agmm_gemm_epilogue_isa());
    CHECK(!strcmp(agmm_gemm_epilogue_isa(), clone_taken()),
          "agmm_gemm_epilogue_isa() says %s, the CPU's features %s",
          agmm_gemm_epilogue_isa(), clone_taken());
    for (int v = 0; v < NV; v++)
        free(c[v]);
    free(acc);
    free(acc32);
    free(comp);
    free(bias);
    free(ws);
    free(old);
    CHECK_DONE("unit_epilogue_clones_same_bits");
}
