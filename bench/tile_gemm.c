/* What a GEMM call per row tile costs against one call over all rows, on
 * one thread with one of the library's GEMM engines (src/gemm/engine.h):
 * C[M, N] = A[M, K] @ W[K, N] computed as M / ROWS calls of ROWS rows each,
 * for several ROWS, rounds alternating so noise hits all alike. With
 * OpenBLAS every call packs W again; this shows how much that costs, and so
 * how much coalescing runs of arrived tiles saves. With oneDNN the weight
 * is prepared once (as a plan does), so tile calls should cost nothing.
 *
 * PARTS=both (oneDNN) times every row count twice, side by side: on a prep
 * made as one range and on one the engine split into column parts
 * (src/gemm/onednn/cols.c), and prints parts / whole.
 *
 * usage: [ENGINE=openblas|onednn] [DTYPE=fp32|bf16|fp16] [PARTS=both] \
 *        agmm_tile_gemm [M K N [ROUNDS [ROWS...]]]
 *        (openblas, fp32; 2048 4096 4096, 5, rows 128 256 512 1024 and M) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
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
    const char *en = getenv("ENGINE"), *dn = getenv("DTYPE");
    const agmm_gemm_engine_t *e = agmm_gemm_engine_get(
        en && !strcmp(en, "onednn") ? AGMM_GEMM_ENGINE_ONEDNN
                                    : AGMM_GEMM_ENGINE_OPENBLAS);
    agmm_dtype_t dt = dn && !strcmp(dn, "bf16")   ? AGMM_DTYPE_BF16
                      : dn && !strcmp(dn, "fp16") ? AGMM_DTYPE_FP16
                                                  : AGMM_DTYPE_FP32;
    if (!e) {
        fprintf(stderr, "%s: engine %s is not built in\n", argv[0], en);
        return 2;
    }
    agmm_dtype_t in = e->input_dtype(dt);
    size_t ies = agmm_dtype_size(in);
    float *a32 = agmm_alloc((size_t)(M * K) * sizeof(float));
    float *w32 = agmm_alloc((size_t)(K * N) * sizeof(float));
    void *a = agmm_alloc((size_t)(M * K) * ies);
    void *w = agmm_alloc((size_t)(K * N) * agmm_dtype_size(dt));
    float *c = agmm_alloc((size_t)(M * N) * sizeof(float));
    double *t = calloc((size_t)(2 * nv * rounds), sizeof *t);
    if (!a32 || !w32 || !a || !w || !c || !t) return 1;
    for (int64_t i = 0; i < M * K; i++)
        a32[i] = (float)((i * 7) % 13) * 0.1f;
    for (int64_t i = 0; i < K * N; i++)
        w32[i] = (float)((i * 5) % 11) * 0.1f;
    agmm_convert_from_f32(in, a32, a, (size_t)(M * K));
    agmm_convert_from_f32(dt, w32, w, (size_t)(K * N));
    /* Every row count a call uses, remainders included. */
    int64_t counts[2 * MAXV];
    int nc = 0;
    for (int v = 0; v < nv; v++) {
        counts[nc++] = AGMM_MIN(rows[v], M);
        if (M % rows[v]) counts[nc++] = M % rows[v];
    }
    agmm_gemm_attr_t attr;
    agmm_gemm_attr_init(&attr, in, dt);
    agmm_gemm_operand_t wop = {.w = w, .bias = NULL, .w_scale = NULL};
    agmm_gemm_shape_t shape = {.k = K,
                               .ncols = N,
                               .ldw = N,
                               .lda = K,
                               .ldc = N,
                               .rows = counts,
                               .nrows = nc};
    const char *pe = getenv("PARTS");
    int np = pe && !strcmp(pe, "both") ? 2 : 1; /* prep 0: whole, 1: parts */
    agmm_gemm_prep_t *prep[2] = {NULL, NULL};
    void *scratch[2] = {NULL, NULL};
    for (int p = 0; p < np; p++) {
        if (np == 2) attr.part_cols = p ? 0 : -1; /* engine.h */
        if (e->prepare(&shape, &attr, NULL, &prep[p]) != AGMM_OK ||
            e->load(prep[p], &wop) != AGMM_OK)
            return 1;
        size_t sb = e->scratch_bytes(prep[p]);
        scratch[p] = sb ? agmm_alloc(sb) : NULL;
    }
    for (int r = -1; r < rounds; r++) /* round -1 warms up */
        for (int v = 0; v < nv; v++)
            for (int p = 0; p < np; p++) {
                double t0 = agmm_now();
                for (int64_t r0 = 0; r0 < M; r0 += rows[v]) {
                    int64_t m = AGMM_MIN(rows[v], M - r0);
                    if (e->run(prep[p], m,
                               (const char *)a + (size_t)(r0 * K) * ies, NULL,
                               c + r0 * N, scratch[p]) != AGMM_OK)
                        return 1;
                }
                if (r >= 0) t[(v * np + p) * rounds + r] = agmm_now() - t0;
            }
    printf("tile_gemm: M=%lld K=%lld N=%lld %s, 1 thread, %s %s impl %s, "
           "median of %d rounds%s\n",
           (long long)M, (long long)K, (long long)N, agmm_dtype_name(dt),
           e->name, e->version(), e->impl(prep[0]), rounds,
           np == 2 ? " (whole range, then column parts)" : "");
    double med[2 * MAXV];
    for (int i = 0; i < nv * np; i++) {
        qsort(t + i * rounds, (size_t)rounds, sizeof *t, cmp_double);
        med[i] = t[i * rounds + rounds / 2];
    }
    double mono = med[(nv - 1) * np];
    printf("%10s %6s %8s %12s %12s %12s %9s %8s\n", "rows/call", "prep",
           "calls", "median_ms", "min_ms", "max_ms", "vs_one", "GF/s");
    for (int i = 0; i < nv * np; i++) {
        int v = i / np;
        printf("%10lld %6s %8lld %12.2f %12.2f %12.2f %9.3f %8.1f\n",
               (long long)rows[v], i % np ? "parts" : "whole",
               (long long)AGMM_DIV_UP(M, rows[v]), med[i] * 1e3,
               t[i * rounds] * 1e3, t[i * rounds + rounds - 1] * 1e3,
               med[i] / mono,
               2.0 * (double)M * (double)K * (double)N / med[i] / 1e9);
    }
    if (np == 2)
        for (int v = 0; v < nv; v++)
            printf("rows %lld: parts / whole %.3f\n", (long long)rows[v],
                   med[v * 2 + 1] / med[v * 2]);
    for (int p = 0; p < np; p++) {
        e->destroy(prep[p]);
        agmm_free(scratch[p]);
    }
    agmm_free(a32);
    agmm_free(w32);
    agmm_free(a);
    agmm_free(w);
    agmm_free(c);
    free(t);
    return 0;
}
