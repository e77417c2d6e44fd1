/* The bf16-weight decode kernel's packing, variant choice and walk
 * (bf16w.h): for each 32-row chunk of A, for each block of 64 columns,
 * for each group of up to AGMM_BF16W_RB rows, the kernel; the block is
 * streamed from DRAM by the first group and re-read from L2 by the
 * others. Kernels: kern_bf16w_avx512.c, kern_bf16w_portable.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "common/log.h"
#include "common/param.h"
#include "common/util.h"
#include "gemm/wq/bf16w.h"

#define CHUNK_ROWS 32

static const char *const names[AGMM_BF16W_COUNT] = {"portable", "avx512-fma",
                                                    "avx512-bf16"};

const char *agmm_bf16w_kernel_name(agmm_bf16w_kernel_t kind)
{
    return (unsigned)kind < AGMM_BF16W_COUNT ? names[kind] : NULL;
}

int agmm_bf16w_kernel_supported(agmm_bf16w_kernel_t kind)
{
    switch (kind) {
    case AGMM_BF16W_PORTABLE:
        return 1;
#if defined(__x86_64__)
    case AGMM_BF16W_AVX512_FMA:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
    case AGMM_BF16W_AVX512_BF16:
        __builtin_cpu_init();
        /* AVX-512F's check covers the OS saving zmm state */
        return __builtin_cpu_supports("avx512f") && agmm_cpu_avx512_bf16();
#endif
    default:
        return 0;
    }
}

static int env_kind = -1; /* AGMM_BF16W_KERNEL, -1 unset or ignored */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    const char *env = agmm_param_str(AGMM_PARAM_BF16W_KERNEL);
    if (!env || !*env) return;
    for (int k = 0; k < AGMM_BF16W_COUNT; k++)
        if (!strcmp(env, names[k])) {
            if (agmm_bf16w_kernel_supported((agmm_bf16w_kernel_t)k))
                env_kind = k;
            else
                agmm_warn("AGMM_BF16W_KERNEL=%s: this CPU cannot run it, "
                          "ignored",
                          env);
            return;
        }
    agmm_warn("AGMM_BF16W_KERNEL=%s: not portable, avx512-fma or "
              "avx512-bf16, ignored",
              env);
}

agmm_bf16w_kernel_t agmm_bf16w_kernel(agmm_dtype_t a_dtype)
{
    pthread_once(&env_once, read_env);
    int bf16_ok = a_dtype == AGMM_DTYPE_BF16;
    if (env_kind >= 0 && (env_kind != AGMM_BF16W_AVX512_BF16 || bf16_ok))
        return (agmm_bf16w_kernel_t)env_kind;
    for (int k = AGMM_BF16W_COUNT - 1; k > 0; k--)
        if (agmm_bf16w_kernel_supported((agmm_bf16w_kernel_t)k) &&
            (k != AGMM_BF16W_AVX512_BF16 || bf16_ok))
            return (agmm_bf16w_kernel_t)k;
    return AGMM_BF16W_PORTABLE;
}

size_t agmm_bf16w_packed_bytes(int64_t k, int64_t n)
{
    if (k < 1 || n < 1) return 0;
    return (size_t)((n + AGMM_BF16W_NB - 1) / AGMM_BF16W_NB) *
           (size_t)((k + 1) / 2) * (AGMM_BF16W_NB * 4);
}

agmm_status_t agmm_bf16w_alloc(int64_t k, int64_t n, agmm_bf16w_t **out)
{
    *out = NULL;
    size_t bytes = agmm_bf16w_packed_bytes(k, n);
    if (bytes == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "bf16w: bad weight shape k %lld, n %lld",
                          (long long)k, (long long)n);
    agmm_bf16w_t *w = agmm_alloc(sizeof *w);
    if (w) w->data = agmm_alloc(bytes); /* zeroed, 64-byte aligned */
    if (!w || !w->data) {
        agmm_free(w);
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "bf16w: no memory for %zu packed bytes", bytes);
    }
    w->k = k;
    w->n = n;
    w->blocks = (n + AGMM_BF16W_NB - 1) / AGMM_BF16W_NB;
    w->pairs = (k + 1) / 2;
    w->block_bytes = (size_t)w->pairs * (AGMM_BF16W_NB * 4);
    *out = w;
    return AGMM_OK;
}

agmm_status_t agmm_bf16w_pack(agmm_bf16w_t *w, const uint16_t *b, int64_t ldb)
{
    if (!w || !b || ldb < w->n)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "bf16w: pack: weight %p, values %p, ldb %lld", w, b,
                          (long long)ldb);
    for (int64_t blk = 0; blk < w->blocks; blk++) {
        uint16_t *dst =
            w->data + (size_t)blk * w->block_bytes / sizeof(uint16_t);
        int64_t j0 = blk * AGMM_BF16W_NB;
        int64_t nc = AGMM_MIN((int64_t)AGMM_BF16W_NB, w->n - j0);
        for (int64_t q = 0; q < w->pairs; q++) {
            uint16_t *row = dst + q * (AGMM_BF16W_NB * 2);
            const uint16_t *s0 = b + 2 * q * ldb + j0;
            const uint16_t *s1 = 2 * q + 1 < w->k ? s0 + ldb : NULL;
            for (int64_t j = 0; j < nc; j++) {
                row[2 * j] = s0[j];
                row[2 * j + 1] = s1 ? s1[j] : 0;
            }
            for (int64_t j = nc; j < AGMM_BF16W_NB; j++)
                row[2 * j] = row[2 * j + 1] = 0;
        }
    }
    return AGMM_OK;
}

void agmm_bf16w_free(agmm_bf16w_t *w)
{
    if (!w) return;
    agmm_free(w->data);
    agmm_free(w);
}

static agmm_bf16w_block_fn block_fn(agmm_bf16w_kernel_t kind)
{
#if defined(__x86_64__)
    if (kind == AGMM_BF16W_AVX512_BF16) return agmm_bf16w_block_dpbf16;
    if (kind == AGMM_BF16W_AVX512_FMA) return agmm_bf16w_block_fma;
#endif
    (void)kind;
    return agmm_bf16w_block_portable;
}

agmm_status_t agmm_bf16w_gemm_with(agmm_bf16w_kernel_t kind,
                                   const agmm_bf16w_t *w, int64_t m,
                                   const void *a, agmm_dtype_t a_dtype,
                                   int64_t lda, float *c, int64_t ldc)
{
    if (!w || m < 0 ||
        (a_dtype != AGMM_DTYPE_BF16 && a_dtype != AGMM_DTYPE_FP32) ||
        (m > 0 && (!a || !c || lda < w->k || ldc < w->n)))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "bf16w: gemm: weight %p, m %lld, A %p (%s, lda "
                          "%lld), C %p (ldc %lld): allowed A bf16 or fp32",
                          (const void *)w, (long long)m, a,
                          agmm_dtype_name(a_dtype), (long long)lda, (void *)c,
                          (long long)ldc);
    if (!agmm_bf16w_kernel_supported(kind))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "bf16w: kernel %s is not supported on this CPU",
                          names[(unsigned)kind < AGMM_BF16W_COUNT ? kind : 0]);
    if (kind == AGMM_BF16W_AVX512_BF16 && a_dtype != AGMM_DTYPE_BF16)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "bf16w: kernel avx512-bf16 multiplies bf16 A only "
                          "(A is %s)",
                          agmm_dtype_name(a_dtype));
    agmm_bf16w_block_fn fn = block_fn(kind);
    int f32 = a_dtype == AGMM_DTYPE_FP32;
    size_t es = f32 ? 4 : 2;
    float out[CHUNK_ROWS * AGMM_BF16W_NB]; /* a partial block's sums */
    for (int64_t r0 = 0; r0 < m; r0 += CHUNK_ROWS) {
        int64_t rows = AGMM_MIN((int64_t)CHUNK_ROWS, m - r0);
        /* row groups of at most RB rows, as even as can be */
        int64_t ng = (rows + AGMM_BF16W_RB - 1) / AGMM_BF16W_RB;
        const char *ar = (const char *)a + (size_t)(r0 * lda) * es;
        for (int64_t blk = 0; blk < w->blocks; blk++) {
            const uint16_t *bp =
                w->data + (size_t)blk * w->block_bytes / sizeof(uint16_t);
            int64_t j0 = blk * AGMM_BF16W_NB;
            int64_t nc = AGMM_MIN((int64_t)AGMM_BF16W_NB, w->n - j0);
            float *o = nc == AGMM_BF16W_NB ? c + r0 * ldc + j0 : out;
            int64_t ldo = nc == AGMM_BF16W_NB ? ldc : AGMM_BF16W_NB;
            /* all of k per row group: the first streams the block from
             * memory, the others re-read it from L2 (chunks of k done by
             * every group while in L1 measured slower: 10.6-14.5 against
             * 7.7-8.0 ms at 32 rows, k 4096, n 5504, best of 24) */
            for (int64_t gi = 0, rb = 0; gi < ng; gi++) {
                int nr = (int)((rows - rb) / (ng - gi));
                fn(w, bp, 0, w->pairs, nr, ar + (size_t)(rb * lda) * es, f32,
                   lda, o + rb * ldo, ldo);
                rb += nr;
            }
            if (o == out)
                for (int64_t r = 0; r < rows; r++)
                    memcpy(c + (r0 + r) * ldc + j0, out + r * AGMM_BF16W_NB,
                           (size_t)nc * sizeof(float));
        }
    }
    return AGMM_OK;
}

agmm_status_t agmm_bf16w_gemm(const agmm_bf16w_t *w, int64_t m, const void *a,
                              agmm_dtype_t a_dtype, int64_t lda, float *c,
                              int64_t ldc)
{
    return agmm_bf16w_gemm_with(agmm_bf16w_kernel(a_dtype), w, m, a, a_dtype,
                                lda, c, ldc);
}
