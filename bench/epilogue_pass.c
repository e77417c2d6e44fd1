/* The engines' epilogue pass (src/gemm/epilogue.c) on one thread: its
 * fused loop (the common case: no scales, no accumulate) against its
 * stepwise one (forced with unit scales, which change no bit), side by
 * side, rounds alternating so noise hits both alike. For each activation
 * and output dtype, with a bias: ROWS rows of N fp32 sums, each row's pass
 * a call of its own as the reduction of gemm-rs/gemm-ar makes them (the
 * row hot in cache, like a row just summed), repeated over the rows of a
 * tile (128 x N sums, so the tile stays in L2 as it does in a round).
 * Prints the median ns per element of each loop and stepwise / fused.
 *
 * usage: agmm_epilogue_pass [N [ROUNDS]]   (4096, 9) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gemm/epilogue.h"

enum { ROWS = 2048, TILE = 128 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds for ROWS row calls over the tile, stepwise or fused. */
static double pass(const agmm_gemm_attr_t *at, int64_t n, const float *acc,
                   const float *ones, const float *bias, void *c, int stepwise)
{
    size_t es = agmm_dtype_size(at->c_dtype);
    double t0 = agmm_now();
    for (int64_t i = 0; i < ROWS; i++) {
        int64_t r = i % TILE;
        agmm_gemm_epilogue(at, 1, n, acc + (size_t)(r * n), n,
                           stepwise ? ones : NULL, 1, stepwise ? ones : NULL,
                           bias, (unsigned char *)c + (size_t)(r * n) * es, n);
    }
    return agmm_now() - t0;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    if (n < 1 || n > (1 << 20) || rounds < 1 || rounds > 1000) {
        fprintf(stderr, "usage: agmm_epilogue_pass [N (1..1048576) "
                        "[ROUNDS (1..1000)]]\n");
        return 2;
    }
    float *acc = agmm_alloc(sizeof(float) * (size_t)(TILE * n));
    float *ones = agmm_alloc(sizeof(float) * (size_t)n);
    float *bias = agmm_alloc(sizeof(float) * (size_t)n);
    void *c = agmm_alloc(sizeof(float) * (size_t)(TILE * n));
    double *tf = malloc(sizeof(double) * (size_t)rounds);
    double *ts = malloc(sizeof(double) * (size_t)rounds);
    if (!acc || !ones || !bias || !c || !tf || !ts) return 1;
    for (int64_t i = 0; i < TILE * n; i++)
        acc[i] = (float)((unsigned)(i * 2654435761u) % 20000) / 1000.0f - 10;
    for (int64_t j = 0; j < n; j++)
        ones[j] = 1.0f, bias[j] = 0.001f * j - 2;
    static const agmm_gemm_act_t acts[] = {
        AGMM_GEMM_ACT_NONE, AGMM_GEMM_ACT_RELU, AGMM_GEMM_ACT_SILU,
        AGMM_GEMM_ACT_GELU_TANH};
    static const char *names[] = {"none", "relu", "silu", "gelu_tanh"};
    printf("bias, %d rows x %lld, ns per element, median of %d "
           "(fused / stepwise alternating)\n",
           ROWS, (long long)n, rounds);
    printf("%-10s %-5s %8s %8s %16s\n", "act", "out", "fused", "stepwise",
           "stepwise/fused");
    for (int a = 0; a < 4; a++)
        for (int bf = 0; bf < 2; bf++) {
            agmm_gemm_attr_t at;
            agmm_gemm_attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
            at.bias = 1;
            at.act = acts[a];
            at.c_dtype = bf ? AGMM_DTYPE_BF16 : AGMM_DTYPE_FP32;
            pass(&at, n, acc, ones, bias, c, 0); /* warm up */
            for (int r = 0; r < rounds; r++) {
                tf[r] = pass(&at, n, acc, ones, bias, c, 0);
                ts[r] = pass(&at, n, acc, ones, bias, c, 1);
            }
            double f = median(tf, rounds), s = median(ts, rounds);
            double per = 1e9 / ((double)ROWS * (double)n);
            printf("%-10s %-5s %8.3f %8.3f %16.3f\n", names[a],
                   bf ? "bf16" : "fp32", f * per, s * per, s / f);
        }
    agmm_free(acc), agmm_free(ones), agmm_free(bias), agmm_free(c);
    free(tf), free(ts);
    return 0;
}
