/* A wq GEMM on a given kernel variant (agmm_wq_gemm_with and
 * agmm_wq_gemm_scratch_with, wq.h): the arguments, the rows of A in fp32
 * (the scratch; bf16 for the dot kernel), the walk over panels and row
 * blocks, the stores into C; and the variants' names and which of them
 * this CPU runs. Which variant a call runs is select.c's (agmm_wq_gemm
 * and agmm_wq_gemm_scratch are there): it measures through this file.
 *
 * Order of work: for each 32-row chunk of A (one chunk when M <= 32: the
 * decode case), for each panel of 16 columns in [n0, n1), for each block
 * of up to 4 rows, the kernel: the panel is streamed from DRAM by the
 * first block and re-read from L1/L2 by the others. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "common/log.h"
#include "gemm/convert.h"
#include "gemm/wq/wq_internal.h"

#define CHUNK_ROWS 32

static const char *const names[AGMM_WQ_KERNEL_COUNT] = {
    "portable", "avx2", "avx512", "avx512bf16", "avx512vnni", "portable-a8"};

const char *agmm_wq_kernel_kind_name(agmm_wq_kernel_t kind)
{
    return (unsigned)kind < AGMM_WQ_KERNEL_COUNT ? names[kind] : NULL;
}

int agmm_wq_kernel_supported(agmm_wq_kernel_t kind)
{
    switch (kind) {
    case AGMM_WQ_KERNEL_PORTABLE:
    case AGMM_WQ_KERNEL_PORTABLE_A8:
        return 1;
#if defined(__x86_64__)
    case AGMM_WQ_KERNEL_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case AGMM_WQ_KERNEL_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw");
    case AGMM_WQ_KERNEL_AVX512_BF16:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && agmm_cpu_avx512_bf16();
    case AGMM_WQ_KERNEL_AVX512_VNNI:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni") &&
               __builtin_cpu_supports("avx512vbmi");
#endif
    default:
        return 0;
    }
}

static agmm_wq_panel_fn panel_fn(agmm_wq_kernel_t kind)
{
#if defined(__x86_64__)
    /* The dot variant's FMA fallback (A not bf16, or subnormal). */
    if (kind == AGMM_WQ_KERNEL_AVX512 || kind == AGMM_WQ_KERNEL_AVX512_BF16)
        return agmm_wq_panel_avx512;
    if (kind == AGMM_WQ_KERNEL_AVX2) return agmm_wq_panel_avx2;
#endif
    (void)kind;
    return agmm_wq_panel_portable;
}

static agmm_status_t gemm_check(const agmm_wq_t *w, int64_t m, const void *a,
                                agmm_dtype_t a_dtype, int64_t lda,
                                const void *c, agmm_dtype_t c_dtype,
                                int64_t ldc, int64_t n0, int64_t n1)
{
    if (!w || m < 0 || n0 < 0 || n1 < n0 || n1 > w->n)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_gemm: bad weight, m %lld or columns "
                          "[%lld, %lld)",
                          (long long)m, (long long)n0, (long long)n1);
    if (a_dtype != AGMM_DTYPE_FP32 && a_dtype != AGMM_DTYPE_BF16 &&
        a_dtype != AGMM_DTYPE_FP16)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_gemm: A's dtype %s (fp32, bf16 or fp16)",
                          agmm_dtype_name(a_dtype));
    if (c_dtype != AGMM_DTYPE_FP32 && c_dtype != AGMM_DTYPE_BF16)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_gemm: C's dtype %s (fp32 or bf16)",
                          agmm_dtype_name(c_dtype));
    if (m > 0 && n1 > n0 && (!a || !c || lda < w->k || ldc < n1))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_gemm: A %p (lda %lld) or C %p (ldc %lld) "
                          "for k %lld, n1 %lld",
                          a, (long long)lda, c, (long long)ldc, (long long)w->k,
                          (long long)n1);
    return AGMM_OK;
}

/* Rows r0..r0+rows-1 of A into the scratch layout (wq_internal.h), and
 * each group's fp32 sum. */
static void load_rows(const agmm_wq_t *w, const void *a, agmm_dtype_t dt,
                      int64_t lda, int64_t r0, int rows, float *as, int64_t kp,
                      float *asum)
{
    size_t es = agmm_dtype_size(dt);
    memset(as, 0, (size_t)rows * (size_t)kp * sizeof(float));
    for (int r = 0; r < rows; r++)
        for (int64_t g = 0; g < w->ng; g++) {
            int64_t k0 = g * w->group;
            int64_t len = k0 + w->group < w->k ? w->group : w->k - k0;
            float *dst = as + r * kp + g * w->gq * 4;
            agmm_convert_to_f32(
                dt, (const char *)a + ((r0 + r) * lda + k0) * (int64_t)es, dst,
                (size_t)len);
            float s = 0;
            for (int64_t i = 0; i < len; i++)
                s += dst[i];
            asum[r * w->ng + g] = s;
        }
}

/* The same rows from a bf16 A for the dot kernel: bf16 in the scratch
 * layout (the fp32 layout's element positions, kp elements a row), the
 * same fp32 group sums as load_rows. Returns 1, the scratch then
 * unusable, when a value is subnormal (VDPBF16PS would read it as 0). */
static int load_rows_bf16(const agmm_wq_t *w, const uint16_t *a, int64_t lda,
                          int64_t r0, int rows, uint16_t *as, int64_t kp,
                          float *asum)
{
    memset(as, 0, (size_t)rows * (size_t)kp * sizeof(uint16_t));
    for (int r = 0; r < rows; r++)
        for (int64_t g = 0; g < w->ng; g++) {
            int64_t k0 = g * w->group;
            int64_t len = k0 + w->group < w->k ? w->group : w->k - k0;
            const uint16_t *src = a + (r0 + r) * lda + k0;
            uint16_t *dst = as + r * kp + g * w->gq * 4;
            float s = 0;
            for (int64_t i = 0; i < len; i++) {
                uint16_t b = src[i];
                if ((b & 0x7f80) == 0 && (b & 0x7f) != 0) return 1;
                dst[i] = b;
                uint32_t bits = (uint32_t)b << 16;
                float f;
                memcpy(&f, &bits, sizeof f);
                s += f;
            }
            asum[r * w->ng + g] = s;
        }
    return 0;
}

static void store(const float *out, int rows, void *c, agmm_dtype_t dt,
                  int64_t ldc, int64_t r0, int64_t j0, int64_t c0, int64_t c1)
{
    for (int r = 0; r < rows; r++)
        for (int64_t j = c0; j < c1; j++) {
            float v = out[r * AGMM_WQ_NP + (j - j0)];
            if (dt == AGMM_DTYPE_FP32)
                ((float *)c)[(r0 + r) * ldc + j] = v;
            else
                ((uint16_t *)c)[(r0 + r) * ldc + j] =
                    agmm_f32_to_bf16_inline(v);
        }
}

/* The bytes of the fp32 rows of `chunk` rows (kp floats each, padded to
 * 64) and of their group sums (ng floats each, padded to 64). */
static size_t rows_bytes(int64_t chunk, int64_t kp)
{
    return ((size_t)chunk * (size_t)kp * sizeof(float) + 63) / 64 * 64;
}
static size_t sums_bytes(int64_t chunk, int64_t ng)
{
    /* + one float a row: the W4A8 kernel's row scales */
    return ((size_t)chunk * (size_t)(ng + 1) * sizeof(float) + 63) / 64 * 64;
}

size_t agmm_wq_scratch_bytes(int64_t k, int64_t group, int64_t rows)
{
    if (k < 1 || rows < 1) return 0;
    int64_t g = group > 0 ? group : k, ng = (k + g - 1) / g;
    int64_t chunk = rows < CHUNK_ROWS ? rows : CHUNK_ROWS;
    return rows_bytes(chunk, ng * ((g + 7) / 8) * 8) + sums_bytes(chunk, ng);
}

/* The A8 kernels' rows (kern_avx512vnni.c, kern_a8_portable.c): the fp32 rows
 * load_rows wrote, quantized in place to int8 (row r's bytes at r x kp,
 * over fp32 rows already read), sa[r] = max |a| / 127 (1 for a zero
 * row), a_q = a / sa rounded to nearest even (within -127..127), and
 * asum[r][g] replaced by the group's sum of a_q (exact: summed in int32).
 * A row with a NaN or an infinity: sa[r] = NaN and a_q = 0, so its C row
 * is NaN, as a GEMM's row is where A has one (a_q alone would lose it).
 * The AVX-512 variant (agmm_wq_quantize_avx512vnni) gives the same bytes
 * and sums. */
static void quantize_rows(const agmm_wq_t *w, int rows, float *as, int64_t kp,
                          float *asum, float *sa)
{
    static const int64_t swap12[4] = {0, 2, 1, 3};
    for (int r = 0; r < rows; r++) {
        const float *src = as + r * kp;
        float amax = 0;
        int bad = 0;
        for (int64_t i = 0; i < kp; i++) {
            float x = fabsf(src[i]);
            bad |= !(x <= FLT_MAX);
            amax = x > amax ? x : amax;
        }
        float s = bad ? NAN : amax > 0 ? amax / 127.0f : 1.0f;
        sa[r] = s;
        int8_t *dst = (int8_t *)(void *)as + r * kp;
        for (int64_t g = 0; g < w->ng; g++) {
            int32_t sum = 0;
            for (int64_t i = g * w->gq * 4; i < (g + 1) * w->gq * 4; i++) {
                float q = bad ? 0 : nearbyintf(src[i] / s);
                q = q > 127 ? 127 : q < -127 ? -127 : q;
                /* int4: a quad's rows 1 and 2 swapped, as the VNNI
                 * kernel reads the weight's (kern_avx512vnni.c); byte i' <=
                 * i + 1 lies in a float already read */
                int64_t at =
                    w->bits == 4 ? (i & ~(int64_t)3) | swap12[i & 3] : i;
                dst[at] = (int8_t)q;
                sum += (int32_t)q;
            }
            asum[r * w->ng + g] = (float)sum;
        }
    }
}

/* Columns [n0, n1) of `rows` rows (C's from r0) loaded in the scratch
 * (as, kp elements a row, and asum): dot 0 on fn (fp32 rows), 1 on the
 * dot kernel (bf16 rows), 2 and 3 on the A8 kernels (int8 rows: VNNI,
 * portable), in blocks of its rows per call. A row's bits do not depend
 * on the block it is in (every kernel). */
static void panels(const agmm_wq_t *w, agmm_wq_panel_fn fn, int dot, int rows,
                   const float *as, int64_t kp, const float *asum, void *c,
                   agmm_dtype_t c_dtype, int64_t ldc, int64_t r0, int64_t n0,
                   int64_t n1)
{
    const float *sa = NULL; /* dot >= 2: the A8 kernels, sa after asum */
    if (dot >= 2) sa = asum + rows * w->ng;
    float out[AGMM_WQ_PANELS_DOT * AGMM_WQ_RB_DOT * AGMM_WQ_NP];
    int rb_rows = dot >= 2 ? AGMM_WQ_RB_VNNI
                  : dot    ? AGMM_WQ_RB_DOT
                           : AGMM_WQ_RB;
#if defined(__x86_64__)
    /* the dot kernel over several panels a call (kern_avx512bf16.c): int4
     * at any rows (up to 4 panels), int8 at one row (2); the VNNI kernel
     * 4 panels at one row, 2 at two (kern_avx512vnni.c; 2 panels of 3-8
     * rows measured slower than one: its header) */
    int many = dot == 2       ? (rows == 1   ? 4
                                 : rows == 2 ? 2
                                             : 1)
               : dot != 1     ? 1
               : w->bits == 4 ? AGMM_WQ_PANELS_DOT
               : rows == 1    ? 2
                              : 1;
    int64_t pend = (n1 + AGMM_WQ_NP - 1) / AGMM_WQ_NP;
    for (int64_t p = n0 / AGMM_WQ_NP; many > 1 && p < pend;) {
        int np = pend - p < many ? (int)(pend - p) : many;
        for (int rb = 0; rb < rows; rb += AGMM_WQ_RB_DOT) {
            int nr = rows - rb < AGMM_WQ_RB_DOT ? rows - rb : AGMM_WQ_RB_DOT;
            if (dot == 2) /* rows <= 2: one block */
                agmm_wq_panels_avx512vnni(
                    w, w->data + (size_t)p * w->panel_bytes, np, nr,
                    (const int8_t *)(const void *)as, kp, asum, sa, out);
            else
                agmm_wq_panels_avx512bf16(
                    w, w->data + (size_t)p * w->panel_bytes, np, nr,
                    (const uint16_t *)(const void *)as + rb * kp, kp,
                    asum + rb * w->ng, out);
            for (int j = 0; j < np; j++) {
                int64_t j0 = (p + j) * AGMM_WQ_NP;
                int64_t c0 = j0 > n0 ? j0 : n0;
                int64_t c1 = j0 + AGMM_WQ_NP < n1 ? j0 + AGMM_WQ_NP : n1;
                store(out + j * nr * AGMM_WQ_NP, nr, c, c_dtype, ldc, r0 + rb,
                      j0, c0, c1);
            }
        }
        p += np;
        if (p == pend) return;
    }
#endif
    for (int64_t p = n0 / AGMM_WQ_NP; p * AGMM_WQ_NP < n1; p++) {
        const uint8_t *panel = w->data + (size_t)p * w->panel_bytes;
        int64_t j0 = p * AGMM_WQ_NP;
        int64_t c0 = j0 > n0 ? j0 : n0;
        int64_t c1 = j0 + AGMM_WQ_NP < n1 ? j0 + AGMM_WQ_NP : n1;
        for (int rb = 0; rb < rows; rb += rb_rows) {
            int nr = rows - rb < rb_rows ? rows - rb : rb_rows;
            if (dot == 3)
                agmm_wq_panel_portable_a8(
                    w, panel, nr, (const int8_t *)(const void *)as + rb * kp,
                    kp, asum + rb * w->ng, sa + rb, out);
            else
#if defined(__x86_64__)
                if (dot == 2)
                agmm_wq_panel_avx512vnni(
                    w, panel, nr, (const int8_t *)(const void *)as + rb * kp,
                    kp, asum + rb * w->ng, sa + rb, out);
            else if (dot)
                agmm_wq_panel_avx512bf16(
                    w, panel, nr, (const uint16_t *)(const void *)as + rb * kp,
                    kp, asum + rb * w->ng, out);
            else
#endif
                fn(w, panel, nr, as + rb * kp, kp, asum + rb * w->ng, out);
            store(out, nr, c, c_dtype, ldc, r0 + rb, j0, c0, c1);
        }
    }
}

/* The call on the scratch of `srows` rows (agmm_wq_scratch_bytes' layout:
 * the rows, then their sums), or, scratch NULL, on its own allocation. */
static agmm_status_t gemm_run(agmm_wq_kernel_t kind, const agmm_wq_t *w,
                              int64_t m, const void *a, agmm_dtype_t a_dtype,
                              int64_t lda, void *c, agmm_dtype_t c_dtype,
                              int64_t ldc, int64_t n0, int64_t n1,
                              void *scratch, int64_t srows)
{
    AGMM_CHECK(gemm_check(w, m, a, a_dtype, lda, c, c_dtype, ldc, n0, n1));
    if (!agmm_wq_kernel_supported(kind))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "agmm_wq_gemm: kernel %s is not supported here",
                          agmm_wq_kernel_kind_name(kind)
                              ? agmm_wq_kernel_kind_name(kind)
                              : "(invalid)");
    if (m == 0 || n0 == n1) return AGMM_OK;
    agmm_wq_panel_fn fn = panel_fn(kind);
    int dot = 0; /* the dot kernel (else fn) */
    /* an A8 kernel: panels' dot 2 (VNNI) or 3 (portable) */
    int a8 = kind == AGMM_WQ_KERNEL_PORTABLE_A8 ? 3 : 0;
#if defined(__x86_64__)
    dot = kind == AGMM_WQ_KERNEL_AVX512_BF16 && a_dtype == AGMM_DTYPE_BF16;
    if (kind == AGMM_WQ_KERNEL_AVX512_VNNI) a8 = 2;
#endif
    int64_t kp = w->ng * w->gq * 4;
    int64_t most = scratch ? srows : m; /* rows the scratch holds */
    int chunk = most < CHUNK_ROWS ? (int)most : CHUNK_ROWS;
    float *as, *asum;
    if (scratch) {
        as = scratch;
        asum =
            (float *)(void *)((unsigned char *)scratch + rows_bytes(chunk, kp));
    } else {
        as = aligned_alloc(64, rows_bytes(chunk, kp));
        asum = malloc(sums_bytes(chunk, w->ng));
    }
    if (!as || !asum) {
        free(as);
        free(asum);
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "agmm_wq_gemm: no memory for %d rows of k %lld",
                          chunk, (long long)w->k);
    }
    for (int64_t r0 = 0; r0 < m; r0 += chunk) {
        int rows = m - r0 < chunk ? (int)(m - r0) : chunk;
        if (a8) {
            load_rows(w, a, a_dtype, lda, r0, rows, as, kp, asum);
#if defined(__x86_64__)
            if (a8 == 2)
                agmm_wq_quantize_avx512vnni(w, rows, as, kp, asum,
                                            asum + rows * w->ng);
            else
#endif
                quantize_rows(w, rows, as, kp, asum, asum + rows * w->ng);
            panels(w, fn, a8, rows, as, kp, asum, c, c_dtype, ldc, r0, n0, n1);
        } else if (!dot) {
            load_rows(w, a, a_dtype, lda, r0, rows, as, kp, asum);
            panels(w, fn, 0, rows, as, kp, asum, c, c_dtype, ldc, r0, n0, n1);
        } else if (!load_rows_bf16(w, a, lda, r0, rows, (uint16_t *)(void *)as,
                                   kp, asum)) {
            panels(w, fn, 1, rows, as, kp, asum, c, c_dtype, ldc, r0, n0, n1);
        } else { /* a subnormal: row by row, such rows on the FMA kernel */
            for (int r = 0; r < rows; r++)
                if (load_rows_bf16(w, a, lda, r0 + r, 1, (uint16_t *)(void *)as,
                                   kp, asum)) {
                    load_rows(w, a, a_dtype, lda, r0 + r, 1, as, kp, asum);
                    panels(w, fn, 0, 1, as, kp, asum, c, c_dtype, ldc, r0 + r,
                           n0, n1);
                } else
                    panels(w, fn, 1, 1, as, kp, asum, c, c_dtype, ldc, r0 + r,
                           n0, n1);
        }
    }
    if (!scratch) {
        free(as);
        free(asum);
    }
    return AGMM_OK;
}

agmm_status_t agmm_wq_gemm_with(agmm_wq_kernel_t kind, const agmm_wq_t *w,
                                int64_t m, const void *a, agmm_dtype_t a_dtype,
                                int64_t lda, void *c, agmm_dtype_t c_dtype,
                                int64_t ldc, int64_t n0, int64_t n1)
{
    return gemm_run(kind, w, m, a, a_dtype, lda, c, c_dtype, ldc, n0, n1, NULL,
                    0);
}

agmm_status_t agmm_wq_gemm_scratch_with(
    agmm_wq_kernel_t kind, const agmm_wq_t *w, int64_t m, const void *a,
    agmm_dtype_t a_dtype, int64_t lda, void *c, agmm_dtype_t c_dtype,
    int64_t ldc, int64_t n0, int64_t n1, void *scratch, int64_t scratch_rows)
{
    if (!scratch || scratch_rows < 1 || ((uintptr_t)scratch & 63))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_gemm_scratch: scratch %p of %lld rows "
                          "(allowed: 64-byte aligned, >= 1 row)",
                          scratch, (long long)scratch_rows);
    return gemm_run(kind, w, m, a, a_dtype, lda, c, c_dtype, ldc, n0, n1,
                    scratch, scratch_rows);
}
