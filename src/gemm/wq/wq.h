/*
 * Weight-quantized GEMM (W4A16, W8A16): int4 / int8 weights with group
 * scales, multiplied by fp32 / bf16 / fp16 activations, fp32 accumulation.
 * Kernels written in agmm (docs/design.md, "Quantized weights").
 *
 * The plain layout (what agmm_quantize_weight in agmm.h writes, what
 * agmm_wq_pack reads) of a weight W [k, n], k rows of n columns:
 *   - int8: q is int8_t [k][n] (symmetric, -128..127; the quantizer makes
 *     -127..127) or uint8_t [k][n] (asymmetric, 0..255, with zero points);
 *   - int4: two values per byte along k, low nibble first: q is
 *     uint8_t [(k+1)/2][n]; byte (kk/2, j) holds row kk in its low nibble
 *     when kk is even and row kk+1 in its high nibble (a padding nibble 0
 *     when k is odd). Symmetric nibbles are signed -8..7 (two's
 *     complement), asymmetric ones unsigned 0..15;
 *   - scales: [ceil(k/G)][n], fp32, or bf16 (uint16_t bits);
 *   - zeros (asymmetric only): uint8_t [ceil(k/G)][n];
 *   - G, the group (rows of k sharing a scale): 32, 64, 128, or k (0 in
 *     the API means "all of k"); the last group may be partial;
 *   - value(kk, j) = (q(kk, j) - zero(kk/G, j)) * scale(kk/G, j), zero 0
 *     when symmetric.
 *
 * agmm_wq_pack copies it once into agmm's own layout (wq_internal.h):
 * column panels of 16 columns x k, each group's scales (and zero points)
 * before its rows, so a kernel streams one panel front to back. The
 * kernels never write a dequantized copy of the weight: nibbles and bytes
 * are unpacked in registers. Each call streams the weight columns it is
 * given once whatever the number of rows M (rows are done in blocks that
 * re-read a panel from L1/L2); M > 32 (prefill) is done 32 rows at a
 * time, i.e. ceil(M / 32) passes over the weight.
 *
 * Threads: a packed weight is read-only after agmm_wq_pack; any number of
 * threads may call agmm_wq_gemm on it at once (e.g. each on its own column
 * range [n0, n1)). Each call allocates its own scratch (the rows of A in
 * fp32, M x k floats) and frees it. The caller owns A, C and the weight.
 */
#ifndef AGMM_GEMM_WQ_H
#define AGMM_GEMM_WQ_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

/* The most elements (k x n) a packed weight holds (2^40: its byte
 * counts stay far inside size_t and int64). A plan's description refuses
 * a quantized weight beyond it (ops/common/desc.c). */
#define AGMM_WQ_MAX_ELEMENTS ((int64_t)1 << 40)

/* A packed weight (opaque; wq_internal.h). */
typedef struct agmm_wq agmm_wq_t;

/* The plain layout's description, for agmm_wq_pack. */
typedef struct agmm_wq_desc {
    int64_t k, n;         /* W is [k, n] */
    int bits;             /* 4 or 8 */
    int64_t group;        /* 32, 64, 128, or 0 (= k) */
    int symmetric;        /* 1: no zero points */
    const void *q;        /* the values (layout above) */
    const void *scales;   /* [ceil(k/G)][n] */
    int scales_bf16;      /* 1: scales are bf16 bits (uint16_t) */
    const uint8_t *zeros; /* [ceil(k/G)][n] when !symmetric, else NULL */
    /* The row stride (elements) of q, scales and zeros: 0 is n; more
     * reads columns 0..n-1 of a wider weight (a plan's column range:
     * q, scales and zeros then point at its first column). */
    int64_t ld;
} agmm_wq_desc_t;

/* Copy a weight in the plain layout into a new packed weight (*out).
 * AGMM_ERR_INVALID_ARG for a bad description (sizes, bits, group, a null
 * pointer, a zero point out of range), AGMM_ERR_NO_MEMORY; both logged.
 * The description's arrays are not kept. */
agmm_status_t agmm_wq_pack(const agmm_wq_desc_t *d, agmm_wq_t **out);
/* The two steps of agmm_wq_pack, for a GEMM engine whose memory is
 * taken when the plan is made and whose weight is loaded later
 * (gemm/wq/engine.c): agmm_wq_alloc makes a packed weight of that geometry
 * (group 0: k), its bytes zero (AGMM_ERR_INVALID_ARG for a bad geometry,
 * AGMM_ERR_NO_MEMORY; logged); agmm_wq_repack packs d into it (d's k, n,
 * bits, group and symmetric must be w's: AGMM_ERR_INVALID_ARG otherwise,
 * as for a bad description; nothing is allocated). A failed repack leaves
 * w's values undefined. agmm_wq_packed_bytes: what agmm_wq_bytes of such
 * a weight will be (0 for a bad geometry), without allocating. */
agmm_status_t agmm_wq_alloc(int64_t k, int64_t n, int bits, int64_t group,
                            int symmetric, agmm_wq_t **out);
agmm_status_t agmm_wq_repack(agmm_wq_t *w, const agmm_wq_desc_t *d);
size_t agmm_wq_packed_bytes(int64_t k, int64_t n, int bits, int64_t group);
/* Free a packed weight (NULL is fine). No call may be using it. */
void agmm_wq_free(agmm_wq_t *w);
/* The packed weight's size in bytes (what a call streams for all n). */
size_t agmm_wq_bytes(const agmm_wq_t *w);

/* C[m, n0:n1] = A[m, k] x dequant(W)[:, n0:n1], overwriting C's columns
 * n0..n1-1 (C's column j is c + j, not c + j - n0). A is row-major with
 * row stride lda (elements), dtype FP32, BF16 or FP16; C is row-major
 * with row stride ldc, dtype FP32 or BF16 (rounded once, to nearest
 * even). Accumulation in fp32. 0 <= n0 <= n1 <= n; m >= 0 (m = 0 or
 * n0 = n1 does nothing). AGMM_ERR_INVALID_ARG (logged) for bad arguments,
 * AGMM_ERR_NO_MEMORY for the scratch. */
agmm_status_t agmm_wq_gemm(const agmm_wq_t *w, int64_t m, const void *a,
                           agmm_dtype_t a_dtype, int64_t lda, void *c,
                           agmm_dtype_t c_dtype, int64_t ldc, int64_t n0,
                           int64_t n1);

/* agmm_wq_gemm on the caller's scratch instead of an allocation per call
 * (a GEMM engine's per-worker scratch: wq/engine.c): scratch is 64-byte
 * aligned, agmm_wq_scratch_bytes(k, group, scratch_rows) bytes (k and
 * group: the weight's, group 0 = k), used by this call only; any m (done
 * min(scratch_rows, 32) rows at a time). The same results as agmm_wq_gemm,
 * bit for bit. AGMM_ERR_INVALID_ARG (logged) for a NULL or misaligned
 * scratch or scratch_rows < 1. agmm_wq_scratch_bytes: 0 for k or rows < 1. */
size_t agmm_wq_scratch_bytes(int64_t k, int64_t group, int64_t rows);
agmm_status_t agmm_wq_gemm_scratch(const agmm_wq_t *w, int64_t m, const void *a,
                                   agmm_dtype_t a_dtype, int64_t lda, void *c,
                                   agmm_dtype_t c_dtype, int64_t ldc,
                                   int64_t n0, int64_t n1, void *scratch,
                                   int64_t scratch_rows);

/* The kernel variants, best last. */
typedef enum agmm_wq_kernel {
    AGMM_WQ_KERNEL_PORTABLE = 0, /* C, any CPU */
    AGMM_WQ_KERNEL_AVX2 = 1,     /* AVX2 + FMA */
    AGMM_WQ_KERNEL_AVX512 = 2,   /* AVX-512F (and BW) */
    /* AVX-512 BF16 (VDPBF16PS) for bf16 A; fp32 / fp16 A (and a chunk of
     * rows with a subnormal value) run AVX512's FMA kernel */
    AGMM_WQ_KERNEL_AVX512_BF16 = 3,
    /* The A8 variants (agmm_wq_kernel_is_a8: W4A8 / W8A8 in groups, A
     * quantized per row to int8, scale max |a| / 127, rounded to nearest
     * even; any A dtype): never chosen for a plain call (they change
     * results), run where a plan asks (agmm_wq_kernel_a8) or named.
     * VPDPBUSD (AVX512_VNNI, and VBMI), and the portable loop with the
     * same bits (exact integer sums, the same float steps). */
    AGMM_WQ_KERNEL_AVX512_VNNI = 4,
    AGMM_WQ_KERNEL_PORTABLE_A8 = 5,
    AGMM_WQ_KERNEL_COUNT
} agmm_wq_kernel_t;

/* Is the variant an A8 one (A quantized to int8)? */
static inline int agmm_wq_kernel_is_a8(agmm_wq_kernel_t kind)
{
    return kind == AGMM_WQ_KERNEL_AVX512_VNNI ||
           kind == AGMM_WQ_KERNEL_PORTABLE_A8;
}
/* The A8 variant this CPU runs best: avx512vnni where it can, else
 * portable-a8 (their results are the same bits); AGMM_WQ_KERNEL naming
 * an A8 variant that this CPU runs wins. */
agmm_wq_kernel_t agmm_wq_kernel_a8(void);

/* Can this CPU run the variant? (The portable one always.) */
int agmm_wq_kernel_supported(agmm_wq_kernel_t kind);
/* The variant set for calls: AGMM_WQ_KERNEL (portable, avx2, avx512,
 * avx512bf16, avx512vnni, portable-a8) when set and supported, else the
 * best this CPU runs of the first four (the A8 ones only when named); chosen
 * at the first call (an unknown or unsupported name is warned about once
 * and ignored). avx512vnni, when named, runs every call whatever A's dtype
 * (W4A8: results within A's int8 quantization, not wq_ref.h's bound). */
agmm_wq_kernel_t agmm_wq_kernel(void);
/* Its name: "portable", "avx2", "avx512", "avx512bf16", "avx512vnni" or
 * "portable-a8". */
const char *agmm_wq_kernel_name(void);
/* The variant calls of these row counts of A (a_dtype) on a weight of
 * `bits` run: agmm_wq_kernel(), but when that is avx512bf16 (the dot
 * kernel) and AGMM_WQ_KERNEL did not force it, avx512 unless A is bf16
 * and select.c's measurement (once per process and bits, at the first
 * such query: a plan's prepare pays it) estimates the dot kernel faster
 * over the list; avx512 for fp32 / fp16 A even when forced (the dot
 * kernel would round A to bf16). The wq engine asks once per prepared
 * weight with the plan's row counts and runs that variant for every call
 * (a row's bits then do not depend on its call's size). agmm_wq_kernel_for:
 * for one row count, what agmm_wq_gemm and agmm_wq_gemm_scratch run. */
agmm_wq_kernel_t agmm_wq_kernel_for_rows(int bits, agmm_dtype_t a_dtype,
                                         const int64_t *rows, int nrows);
agmm_wq_kernel_t agmm_wq_kernel_for(int bits, agmm_dtype_t a_dtype,
                                    int64_t rows);
/* The measurement behind it (select.c), for benchmarks and reports: the
 * i-th measured row count (i < AGMM_WQ_SELECT_ROWS: 1, 2, 4, 8) and the
 * best CPU seconds of a call of the FMA and the dot kernel there, and the
 * whole measurement's; measures if not done yet. 0 (nothing written) when
 * i or bits is out of range or the CPU has no AVX512_BF16. */
#define AGMM_WQ_SELECT_ROWS 4
int agmm_wq_select_info(int bits, int i, int64_t *rows, double *fma_s,
                        double *dot_s, double *took_s);
/* The name of a variant (NULL for an invalid one). */
const char *agmm_wq_kernel_kind_name(agmm_wq_kernel_t kind);
/* agmm_wq_gemm with a given variant (tests, benchmarks):
 * AGMM_ERR_UNSUPPORTED (logged) when this CPU cannot run it. */
agmm_status_t agmm_wq_gemm_with(agmm_wq_kernel_t kind, const agmm_wq_t *w,
                                int64_t m, const void *a, agmm_dtype_t a_dtype,
                                int64_t lda, void *c, agmm_dtype_t c_dtype,
                                int64_t ldc, int64_t n0, int64_t n1);

/* agmm_wq_gemm_scratch with a given variant (AGMM_ERR_UNSUPPORTED,
 * logged, when this CPU cannot run it). */
agmm_status_t agmm_wq_gemm_scratch_with(
    agmm_wq_kernel_t kind, const agmm_wq_t *w, int64_t m, const void *a,
    agmm_dtype_t a_dtype, int64_t lda, void *c, agmm_dtype_t c_dtype,
    int64_t ldc, int64_t n0, int64_t n1, void *scratch, int64_t scratch_rows);

#endif /* AGMM_GEMM_WQ_H */
