/* What a GEMM call per row tile costs against one call over all rows, on
 * one thread with the library's CBLAS: C[M, N] = A[M, K] @ W[K, N] computed
 * as M / ROWS calls of ROWS rows each, for several ROWS, rounds alternating
 * so noise hits all alike. Every call packs W again; this shows how much
 * that costs, and so how much coalescing runs of arrived tiles saves.
 *
 * usage: agmm_tile_gemm [M K N [ROUNDS [ROWS...]]]
 *        (2048 4096 4096, 5, rows 128 256 512 1024 and M) */
#include <stdio.h>
#include <stdlib.h>

#include "agmm.h"
#include "common/util.h"
#include "gemm/gemm.h"

#define MAXV 16

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int64_t M = 2048, K = 4096, N = 4096;
    int rounds = 5, nv = 0;
    int64_t rows[MAXV];
    if (argc > 1 && argc < 4) {
        fprintf(stderr, "usage: %s [M K N [ROUNDS [ROWS...]]]\n", argv[0]);
        return 2;
    }
    if (argc >= 4) {
        M = atoll(argv[1]);
        K = atoll(argv[2]);
        N = atoll(argv[3]);
    }
    if (argc >= 5) rounds = atoi(argv[4]);
    for (int i = 5; i < argc && nv < MAXV - 1; i++)
        rows[nv++] = atoll(argv[i]);
    if (nv == 0) {
        int64_t d[] = {128, 256, 512, 1024};
        for (int i = 0; i < 4; i++)
            if (d[i] < M) rows[nv++] = d[i];
    }
    rows[nv++] = M; /* the monolithic call, the reference */
    if (M < 1 || K < 1 || N < 1 || rounds < 1) {
        fprintf(stderr, "%s: sizes and rounds must be >= 1\n", argv[0]);
        return 2;
    }
    agmm_blas_init();
    float *a = agmm_alloc((size_t)(M * K) * sizeof(float));
    float *w = agmm_alloc((size_t)(K * N) * sizeof(float));
    float *c = agmm_alloc((size_t)(M * N) * sizeof(float));
    double *t = calloc((size_t)(nv * rounds), sizeof *t);
    if (!a || !w || !c || !t) return 1;
    for (int64_t i = 0; i < M * K; i++)
        a[i] = (float)((i * 7) % 13) * 0.1f;
    for (int64_t i = 0; i < K * N; i++)
        w[i] = (float)((i * 5) % 11) * 0.1f;
    for (int r = -1; r < rounds; r++) /* round -1 warms up */
        for (int v = 0; v < nv; v++) {
            double t0 = agmm_now();
            for (int64_t r0 = 0; r0 < M; r0 += rows[v]) {
                int64_t m = AGMM_MIN(rows[v], M - r0);
                agmm_gemm_f32(m, N, K, a + r0 * K, K, w, N, c + r0 * N, N);
            }
            if (r >= 0) t[v * rounds + r] = agmm_now() - t0;
        }
    printf("tile_gemm: M=%lld K=%lld N=%lld, 1 thread, %s kernel %s, "
           "median of %d rounds\n",
           (long long)M, (long long)K, (long long)N, agmm_blas_name(),
           agmm_blas_kernel(), rounds);
    double mono = 0;
    double med[MAXV];
    for (int v = 0; v < nv; v++) {
        qsort(t + v * rounds, (size_t)rounds, sizeof *t, cmp_double);
        med[v] = t[v * rounds + rounds / 2];
    }
    mono = med[nv - 1];
    printf("%10s %8s %12s %12s %12s %9s\n", "rows/call", "calls", "median_ms",
           "min_ms", "max_ms", "vs_one");
    for (int v = 0; v < nv; v++)
        printf("%10lld %8lld %12.2f %12.2f %12.2f %9.3f\n", (long long)rows[v],
               (long long)AGMM_DIV_UP(M, rows[v]), med[v] * 1e3,
               t[v * rounds] * 1e3, t[v * rounds + rounds - 1] * 1e3,
               med[v] / mono);
    agmm_free(a);
    agmm_free(w);
    agmm_free(c);
    free(t);
    return 0;
}
