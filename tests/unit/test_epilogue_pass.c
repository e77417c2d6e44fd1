/* The engines' epilogue pass (gemm/epilogue.c) takes one of two loops: a
 * fused one for the common case (no scales, no accumulate, fp32 or bf16
 * out, an activation with a vector form) and one step per pass for the
 * rest. Both must give the same bits, or a plan's output would depend on
 * which loop ran. Forcing the stepwise loop with unit scales (p * 1.0f is
 * p exactly, -0 and NaN included) and comparing byte for byte, for every
 * activation, with and without a bias, fp32 and bf16 out, a C in place of
 * the sums (fp32) and row strides wider than the row; values over the
 * activations' ranges, zeros of both signs, NaN, infinities, huge and tiny
 * numbers; widths that end a vector and a block early. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gemm/epilogue.h"

enum { M = 5, LD = 613 };

static float value(int64_t i)
{
    static const float special[] = {0.0f,     -0.0f,     1e30f, -1e30f,
                                    1e-40f,   -1e-40f,   88.0f, -88.0f,
                                    INFINITY, -INFINITY, NAN};
    size_t ns = sizeof special / sizeof special[0];
    if (i % 37 < (int64_t)ns) return special[i % 37];
    unsigned h = (unsigned)(i * 2654435761u) >> 8;
    return (float)h / (float)(1u << 24) * 40.0f - 20.0f;
}

int main(void)
{
    static const agmm_gemm_act_t acts[] = {
        AGMM_GEMM_ACT_NONE, AGMM_GEMM_ACT_RELU, AGMM_GEMM_ACT_SILU,
        AGMM_GEMM_ACT_GELU_TANH, AGMM_GEMM_ACT_GELU_ERF};
    static const int64_t widths[] = {1, 15, 17, 256, 257, 600};
    float *acc = malloc(sizeof(float) * M * LD);
    float *bias = malloc(sizeof(float) * LD),
          *ones = malloc(sizeof(float) * LD);
    unsigned char *c = malloc(4 * M * LD), *want = malloc(4 * M * LD);
    for (int64_t i = 0; i < M * LD; i++)
        acc[i] = value(i);
    for (int64_t j = 0; j < LD; j++)
        bias[j] = value(7 * j + 3) * 0.5f;
    for (int64_t j = 0; j < LD; j++)
        ones[j] = 1.0f;
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
        for (int b = 0; b < 2; b++)
            for (int bf = 0; bf < 2; bf++)
                for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
                    int64_t n = widths[w];
                    agmm_gemm_attr_t at;
                    agmm_gemm_attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
                    at.bias = b;
                    at.act = acts[a];
                    at.c_dtype = bf ? AGMM_DTYPE_BF16 : AGMM_DTYPE_FP32;
                    size_t bytes = (size_t)(bf ? 2 : 4) * M * LD;
                    const float *bs = b ? bias : NULL;
                    memset(want, 0x5a, bytes);
                    memset(c, 0x5a, bytes);
                    /* stepwise: unit scales (a row's and a column's) keep
                     * it off the fused loop */
                    agmm_gemm_epilogue(&at, M, n, acc, LD, ones, 1, ones, bs,
                                       want, LD);
                    agmm_gemm_epilogue(&at, M, n, acc, LD, NULL, 0, NULL, bs, c,
                                       LD);
                    CHECK(!memcmp(c, want, bytes),
                          "act %d bias %d bf16 %d width %lld: other bits",
                          (int)acts[a], b, bf, (long long)n);
                    if (bf) continue;
                    /* in place: C is the sums (fp32, same stride) */
                    memcpy(c, acc, bytes);
                    agmm_gemm_epilogue(&at, M, n, (float *)(void *)c, LD, NULL,
                                       0, NULL, bs, c, LD);
                    for (int64_t i = 0; i < M; i++)
                        CHECK(!memcmp(c + 4 * (size_t)(i * LD),
                                      want + 4 * (size_t)(i * LD),
                                      4 * (size_t)n),
                              "in place: act %d bias %d width %lld row %lld",
                              (int)acts[a], b, (long long)n, (long long)i);
                }
    free(acc), free(bias), free(ones), free(c), free(want);
    CHECK_DONE("epilogue_pass");
}
