/* The decode kernels of src/gemm/wq/ on one thread: C[M, N] = A[M, K]
 * (bf16) x dequant(W)[K, N] for M = 1, 8, 16, 32 and each format (int8
 * symmetric G128, int4 symmetric G128, int4 asymmetric G128). Several
 * packed weights are rotated, together at least 3x the last-level cache
 * (src/gemm/dram.h), so each call streams its weight from DRAM, as a
 * model's layers do. Prints ms per call, the packed weight's bytes over
 * that time (GB/s) and its fraction of the DRAM read rate the probe of
 * src/gemm/dram.c measures on this thread.
 *
 * usage: agmm_wq_decode [K N [CALLS]]   (4096 4096, 200 calls per point)
 *        agmm_wq_decode --smoke          (tiny, checks C against the
 *                                         oracle, no DRAM probe; exit 1 on
 *                                         a mismatch)
 * AGMM_WQ_KERNEL picks the kernel variant (gemm/wq/wq.h); the column
 * "kernel" is the variant each M ran (agmm_wq_kernel_for: with the dot
 * kernel, chosen per row count by measurement, printed first). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agmm.h"
#include "check/wq_ref.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/dram.h"
#include "gemm/wq/wq.h"

#define MAX_SETS 64

typedef struct format {
    const char *name;
    int bits, symmetric;
    int64_t group;
} format_t;

/* This thread's CPU time in seconds: as the DRAM probe times itself, so a
 * process sharing the core does not count (a core stalled on memory does). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

/* C of one call against the oracle; 0 when within its bound. */
static int check(const agmm_wq_desc_t *d, int64_t m, const uint16_t *a,
                 const float *c)
{
    int64_t k = d->k, n = d->n;
    float *ax = malloc(sizeof(float) * (size_t)(m * k));
    double *ref = malloc(sizeof(double) * (size_t)(m * n));
    double *bnd = malloc(sizeof(double) * (size_t)(m * n));
    agmm_convert_to_f32(AGMM_DTYPE_BF16, a, ax, (size_t)(m * k));
    agmm_wq_ref(d, m, ax, k, ref, bnd, n, 0);
    int bad = 0;
    for (int64_t i = 0; i < m * n; i++)
        if (!(fabs(c[i] - ref[i]) <= bnd[i])) bad++;
    free(ax);
    free(ref);
    free(bnd);
    return bad;
}

int main(int argc, char **argv)
{
    int smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
    int64_t K = smoke ? 256 : 4096, N = smoke ? 80 : 4096;
    int calls = smoke ? 4 : 200;
    if (!smoke && argc >= 3) {
        K = atoll(argv[1]);
        N = atoll(argv[2]);
        if (argc >= 4) calls = atoi(argv[3]);
    }
    if (K < 1 || N < 1 || calls < 1) {
        fprintf(stderr, "usage: %s [K N [CALLS]] | --smoke\n", argv[0]);
        return 2;
    }
    static const format_t formats[] = {{"int8 sym G128", 8, 1, 128},
                                       {"int4 sym G128", 4, 1, 128},
                                       {"int4 asym G128", 4, 0, 128}};
    static const int64_t ms[] = {1, 2, 8, 16, 32};
    double dram = smoke ? 0 : agmm_dram_read_gbps();
    /* the sets rotated stream 3 x the LLC (assumed where the OS lists
     * none: VMs without sysfs cache entries) */
    int assumed;
    size_t llc = agmm_dram_cache_bytes(&assumed), stream = 3 * llc;
    printf("wq_decode: K %lld N %lld, kernel %s, 1 thread, LLC %zu MiB%s, "
           "DRAM read %.2f GB/s (probe %s)\n",
           (long long)K, (long long)N, agmm_wq_kernel_name(), llc >> 20,
           assumed ? " (assumed: the OS lists none)" : "", dram,
           agmm_dram_probe_isa());
    for (int bits = 4; bits <= 8; bits += 4)
        for (int i = 0; !smoke && i < AGMM_WQ_SELECT_ROWS; i++) {
            int64_t rows;
            double fma, dot, took;
            if (!agmm_wq_select_info(bits, i, &rows, &fma, &dot, &took)) break;
            printf("select int%d M %lld: avx512 %.1f us, avx512bf16 %.1f us "
                   "(measured in %.2f ms)\n",
                   bits, (long long)rows, fma * 1e6, dot * 1e6, took * 1e3);
        }
    printf("%-15s %3s %5s %10s %10s %9s %7s  %s\n", "format", "M", "sets",
           "wall ms", "cpu ms", "GB/s", "of DRAM", "kernel");

    uint64_t seed = 1;
    float *w = malloc(sizeof(float) * (size_t)(K * N));
    for (int64_t i = 0; i < K * N; i++)
        w[i] = frand(&seed);
    uint16_t *a = malloc(sizeof(uint16_t) * (size_t)(32 * K));
    for (int64_t i = 0; i < 32 * K; i++)
        a[i] = agmm_f32_to_bf16(frand(&seed));
    float *c = malloc(sizeof(float) * (size_t)(32 * N));
    int64_t ng = (K + 127) / 128;
    uint8_t *q = malloc((size_t)(K * N)), *zeros = malloc((size_t)(ng * N));
    float *scales = malloc(sizeof(float) * (size_t)(ng * N));
    int failed = 0;
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        const format_t *fm = &formats[f];
        if (agmm_quantize_weight(w, K, N, fm->bits, fm->group, fm->symmetric, q,
                                 scales, zeros) != AGMM_OK)
            return 1;
        agmm_wq_desc_t d = {K,
                            N,
                            fm->bits,
                            fm->group,
                            fm->symmetric,
                            q,
                            scales,
                            0,
                            fm->symmetric ? NULL : zeros,
                            0};
        agmm_wq_t *sets[MAX_SETS];
        int nsets = 0;
        size_t bytes = 0;
        do {
            if (agmm_wq_pack(&d, &sets[nsets]) != AGMM_OK) return 1;
            bytes = agmm_wq_bytes(sets[nsets++]);
        } while (nsets < MAX_SETS && !smoke && bytes * (size_t)nsets < stream);
        if (smoke && nsets < 2 && agmm_wq_pack(&d, &sets[nsets]) == AGMM_OK)
            nsets++;
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
            int64_t m = ms[mi];
            for (int i = 0; i < nsets; i++) /* warm-up: page faults, code */
                agmm_wq_gemm(sets[i], m, a, AGMM_DTYPE_BF16, K, c,
                             AGMM_DTYPE_FP32, N, 0, N);
            if (smoke && check(&d, m, a, c)) {
                fprintf(stderr, "%s M %lld: C differs from the oracle\n",
                        fm->name, (long long)m);
                failed = 1;
            }
            double t0 = agmm_now(), c0 = cpu_now();
            for (int it = 0; it < calls; it++)
                agmm_wq_gemm(sets[it % nsets], m, a, AGMM_DTYPE_BF16, K, c,
                             AGMM_DTYPE_FP32, N, 0, N);
            double wall = (agmm_now() - t0) / calls;
            double dt = (cpu_now() - c0) / calls;
            double gbps = (double)bytes / dt / 1e9;
            printf("%-15s %3lld %5d %10.3f %10.3f %9.2f %7.2f  %s\n", fm->name,
                   (long long)m, nsets, wall * 1e3, dt * 1e3, gbps,
                   dram > 0 ? gbps / dram : 0.0,
                   agmm_wq_kernel_kind_name(
                       agmm_wq_kernel_for(fm->bits, AGMM_DTYPE_BF16, m)));
        }
        for (int i = 0; i < nsets; i++)
            agmm_wq_free(sets[i]);
    }
    free(w);
    free(a);
    free(c);
    free(q);
    free(zeros);
    free(scales);
    return failed;
}
