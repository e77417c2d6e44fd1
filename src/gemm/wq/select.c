/* Which kernel variant a call runs (wq.h): the best this CPU runs, or the
 * one AGMM_WQ_KERNEL names (agmm_wq_kernel); per plan, between the FMA
 * and the dot kernel, by measurement (agmm_wq_kernel_for_rows); and the
 * calls that run the chosen variant (agmm_wq_gemm, agmm_wq_gemm_scratch:
 * gemm.c runs a given one, and the measurement times it there).
 *
 * Which of the FMA kernel (avx512, kern_avx512.c) and the dot kernel
 * (avx512bf16, kern_avx512bf16.c) runs a call of bf16 A, per row count:
 * measured once per process and weight bits, at the first query (a
 * plan's prepare, through agmm_wq_kernel_for: plan creation pays it, not
 * a call).
 *
 * The measurement: a symmetric weight of k 2048, n 1024, groups of 128
 * (int4: 1.1 MB packed, int8: 2.2 MB: more than a Zen 4 core's 1 MiB L2,
 * so each call streams it from L3; from DRAM both kernels would wait on
 * the same bytes, so the one with fewer instructions is never the worse
 * there), bf16 A of 1, 2, 4 and 8 rows, each kernel once to warm up then
 * SEL_REPS (2) times, interleaved, this thread's CPU time (as bench/wq_decode.c
 * and the DRAM probe time themselves: another process on the core does
 * not count), the minimum kept.
 *
 * The choice, for a list of row counts (a plan's calls: one kernel for
 * all of them, so that a row's bits do not depend on the size of the call
 * it is in): the dot kernel when the sum over the list of its estimated
 * times is the smaller. A row count's estimate is the measured time of
 * the next measured count (3 rows: 4's; 5..7: 8's), above 8 rows 8's
 * scaled by rows / 8 (both kernels are then bound by their instructions,
 * and scale alike). About 4-6 ms per bits on this shared machine
 * (agmm_wq_select_info reports it): paid once per process, by the first
 * plan with a weight of those bits and bf16 A.
 *
 * Threads: pthread_once per bits, and once for agmm_wq_kernel; the tables
 * are read-only after it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/param.h"
#include "gemm/wq/wq_internal.h"

#define SEL_K    2048
#define SEL_N    1024
#define SEL_G    128
#define SEL_REPS 2

static const int64_t sel_rows[AGMM_WQ_SELECT_ROWS] = {1, 2, 4, 8};

typedef struct table {
    int measured;
    int wins[AGMM_WQ_SELECT_ROWS];
    double fma_s[AGMM_WQ_SELECT_ROWS], dot_s[AGMM_WQ_SELECT_ROWS];
    double took_s; /* the whole measurement */
} table_t;

static table_t tables[2]; /* int4, int8 */
static pthread_once_t once4 = PTHREAD_ONCE_INIT, once8 = PTHREAD_ONCE_INIT;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void measure(int bits, table_t *t)
{
    if (!agmm_wq_kernel_supported(AGMM_WQ_KERNEL_AVX512_BF16)) return;
    double t0 = cpu_now();
    const int64_t k = SEL_K, n = SEL_N;
    const int64_t mmax = sel_rows[AGMM_WQ_SELECT_ROWS - 1];
    uint16_t *a = malloc(sizeof(uint16_t) * (size_t)(mmax * k));
    float *c = malloc(sizeof(float) * (size_t)(mmax * n));
    agmm_wq_t *w = NULL;
    if (!a || !c || agmm_wq_alloc(k, n, bits, SEL_G, 1, &w) != AGMM_OK)
        goto out;
    /* Random stored values written into the packed layout directly
     * (quantizing and packing a weight would cost more than the timing):
     * every group's scales 1/64, zeros 8 (the int4 zero term), values any
     * byte (k is a multiple of 4: no padding rows). */
    uint64_t s = 88172645463325252ull;
    size_t head = 2 * AGMM_WQ_NP * sizeof(float);
    size_t qbytes = (size_t)agmm_wq_quads(w, 0) * w->quad_bytes;
    for (int64_t p = 0; p < w->panels; p++)
        for (int64_t g = 0; g < w->ng; g++) {
            uint8_t *dst = w->data + (size_t)p * w->panel_bytes +
                           (size_t)g * (head + qbytes);
            float hv[2 * AGMM_WQ_NP];
            for (int j = 0; j < AGMM_WQ_NP; j++) {
                hv[j] = 1.0f / 64;
                hv[AGMM_WQ_NP + j] = w->has_zero ? 8.0f : 0.0f;
            }
            memcpy(dst, hv, head);
            for (size_t i = 0; i < qbytes; i += 8) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                memcpy(dst + head + i, &s, 8);
            }
        }
    for (int64_t i = 0; i < mmax * k; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        /* bf16 in [1, 2) with either sign: no subnormals */
        a[i] = (uint16_t)(0x3f80 | (s >> 57) | ((s >> 40) & 1) << 15);
    }
    const agmm_wq_kernel_t kinds[2] = {AGMM_WQ_KERNEL_AVX512,
                                       AGMM_WQ_KERNEL_AVX512_BF16};
    double best[2][AGMM_WQ_SELECT_ROWS];
    for (int i = 0; i < AGMM_WQ_SELECT_ROWS; i++)
        best[0][i] = best[1][i] = 1e30;
    for (int rep = -1; rep < SEL_REPS; rep++) /* -1: the warm-up */
        for (int i = 0; i < AGMM_WQ_SELECT_ROWS; i++)
            for (int v = 0; v < 2; v++) {
                double ts = cpu_now();
                if (agmm_wq_gemm_with(kinds[v], w, sel_rows[i], a,
                                      AGMM_DTYPE_BF16, k, c, AGMM_DTYPE_FP32, n,
                                      0, n) != AGMM_OK)
                    goto out;
                double el = cpu_now() - ts;
                if (rep >= 0 && el < best[v][i]) best[v][i] = el;
            }
    for (int i = 0; i < AGMM_WQ_SELECT_ROWS; i++) {
        t->fma_s[i] = best[0][i];
        t->dot_s[i] = best[1][i];
        t->wins[i] = best[1][i] < best[0][i];
    }
    t->measured = 1;
out:
    t->took_s = cpu_now() - t0;
    agmm_wq_free(w);
    free(a);
    free(c);
}

static void measure4(void)
{
    measure(4, &tables[0]);
}
static void measure8(void)
{
    measure(8, &tables[1]);
}

static const table_t *table_of(int bits)
{
    if (bits == 4) {
        pthread_once(&once4, measure4);
        return &tables[0];
    }
    if (bits == 8) {
        pthread_once(&once8, measure8);
        return &tables[1];
    }
    return NULL;
}

/* A call's time at `rows` from the measured ones: the next measured row
 * count's at most 8 rows, 8's scaled by rows / 8 above. */
static double estimate(const double *t, int64_t rows)
{
    if (rows <= 8) {
        int i = rows <= 1 ? 0 : rows == 2 ? 1 : rows <= 4 ? 2 : 3;
        return t[i];
    }
    return t[AGMM_WQ_SELECT_ROWS - 1] * (double)rows / 8.0;
}

/* 1 when the dot kernel is the faster over calls of these row counts of
 * bf16 A on a weight of `bits`; 0 when this CPU cannot run it. */
static int dot_wins(int bits, const int64_t *rows, int nrows)
{
    const table_t *t = table_of(bits);
    if (!t || !t->measured) return 0;
    double fma = 0, dot = 0;
    for (int i = 0; i < nrows; i++)
        if (rows[i] > 0) {
            fma += estimate(t->fma_s, rows[i]);
            dot += estimate(t->dot_s, rows[i]);
        }
    return dot < fma;
}

int agmm_wq_select_info(int bits, int i, int64_t *rows, double *fma_s,
                        double *dot_s, double *took_s)
{
    if (i < 0 || i >= AGMM_WQ_SELECT_ROWS) return 0;
    const table_t *t = table_of(bits);
    if (!t || !t->measured) return 0;
    *rows = sel_rows[i];
    *fma_s = t->fma_s[i];
    *dot_s = t->dot_s[i];
    *took_s = t->took_s;
    return 1;
}

/* ------------------------------------------ the variant a call runs */

static agmm_wq_kernel_t chosen = AGMM_WQ_KERNEL_PORTABLE;
static int forced; /* AGMM_WQ_KERNEL named a variant this CPU runs */
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    /* the A8 variants (W4A8) change results: only when named */
    for (int k = AGMM_WQ_KERNEL_AVX512_BF16; k >= 0; k--)
        if (agmm_wq_kernel_supported((agmm_wq_kernel_t)k)) {
            chosen = (agmm_wq_kernel_t)k;
            break;
        }
    const char *env = agmm_param_str(AGMM_PARAM_WQ_KERNEL);
    if (!env || !*env) return;
    for (int k = 0; k < AGMM_WQ_KERNEL_COUNT; k++)
        if (strcmp(env, agmm_wq_kernel_kind_name((agmm_wq_kernel_t)k)) == 0) {
            if (agmm_wq_kernel_supported((agmm_wq_kernel_t)k)) {
                chosen = (agmm_wq_kernel_t)k;
                forced = 1;
            } else
                agmm_warn("AGMM_WQ_KERNEL=%s: this CPU cannot run it, "
                          "using %s",
                          env, agmm_wq_kernel_kind_name(chosen));
            return;
        }
    agmm_warn("AGMM_WQ_KERNEL=%s: not portable, avx2, avx512, avx512bf16, "
              "avx512vnni or portable-a8, using %s",
              env, agmm_wq_kernel_kind_name(chosen));
}

agmm_wq_kernel_t agmm_wq_kernel(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}

agmm_wq_kernel_t agmm_wq_kernel_a8(void)
{
    agmm_wq_kernel_t k = agmm_wq_kernel();
    if (forced && agmm_wq_kernel_is_a8(k)) return k;
    return agmm_wq_kernel_supported(AGMM_WQ_KERNEL_AVX512_VNNI)
               ? AGMM_WQ_KERNEL_AVX512_VNNI
               : AGMM_WQ_KERNEL_PORTABLE_A8;
}

const char *agmm_wq_kernel_name(void)
{
    return agmm_wq_kernel_kind_name(agmm_wq_kernel());
}

agmm_wq_kernel_t agmm_wq_kernel_for(int bits, agmm_dtype_t a_dtype,
                                    int64_t rows)
{
    return agmm_wq_kernel_for_rows(bits, a_dtype, &rows, 1);
}

agmm_wq_kernel_t agmm_wq_kernel_for_rows(int bits, agmm_dtype_t a_dtype,
                                         const int64_t *rows, int nrows)
{
    agmm_wq_kernel_t k = agmm_wq_kernel();
    if (k != AGMM_WQ_KERNEL_AVX512_BF16) return k;
    /* The dot kernel multiplies bf16 A only (fp32 / fp16 rows rounded to
     * bf16 would change results): the FMA kernel for the others. */
    if (a_dtype != AGMM_DTYPE_BF16) return AGMM_WQ_KERNEL_AVX512;
    if (forced) return k;
    return dot_wins(bits, rows, nrows) ? k : AGMM_WQ_KERNEL_AVX512;
}

/* The calls whose variant is chosen here (gemm.c runs a given one). */

agmm_status_t agmm_wq_gemm_scratch(const agmm_wq_t *w, int64_t m, const void *a,
                                   agmm_dtype_t a_dtype, int64_t lda, void *c,
                                   agmm_dtype_t c_dtype, int64_t ldc,
                                   int64_t n0, int64_t n1, void *scratch,
                                   int64_t scratch_rows)
{
    return agmm_wq_gemm_scratch_with(
        agmm_wq_kernel_for(w ? w->bits : 0, a_dtype, m), w, m, a, a_dtype, lda,
        c, c_dtype, ldc, n0, n1, scratch, scratch_rows);
}

agmm_status_t agmm_wq_gemm(const agmm_wq_t *w, int64_t m, const void *a,
                           agmm_dtype_t a_dtype, int64_t lda, void *c,
                           agmm_dtype_t c_dtype, int64_t ldc, int64_t n0,
                           int64_t n1)
{
    return agmm_wq_gemm_with(agmm_wq_kernel_for(w ? w->bits : 0, a_dtype, m), w,
                             m, a, a_dtype, lda, c, c_dtype, ldc, n0, n1);
}
