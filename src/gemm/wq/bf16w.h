/*
 * agmm's own bf16-weight decode kernel (issue 48: "at decode sizes ...
 * agmm's decode kernels in every format, bf16 included"): a bf16 weight
 * W [k, n] packed once into agmm's layout, multiplied by a few rows of
 * bf16 or fp32 A with fp32 accumulation, the weight streamed once per
 * call for up to 32 rows (bandwidth-bound decode). The wq engine runs it
 * for plans whose weight is not quantized (engine_bf16w.c).
 *
 * Packed layout: the columns in blocks of AGMM_BF16W_NB = 64 (the last
 * one padded with zero columns), each block ceil(k / 2) "pair rows" of
 * 256 bytes: four 64-byte zmm rows, zmm p (0..3) holding columns
 * 16 p .. 16 p + 15 of the block as 16 dwords, dword j = (W[2q][col] in
 * its low half, W[2q+1][col] in its high half) - the operand VDPBF16PS
 * multiplies by a broadcast pair of A directly (a padding row of zeros
 * when k is odd). A block is one contiguous stream.
 *
 * Kernels (chosen at run time, never by CPU name):
 *   avx512-bf16  VDPBF16PS (AVX512_BF16: cpuid leaf 7 subleaf 1 EAX bit
 *                5), A bf16 only: each step adds the pair's two products
 *                to the fp32 sum, rounding after each (denormal inputs and
 *                results flushed to zero, as the instruction does);
 *   avx512-fma   AVX-512F: W widened to fp32 in registers (exact), A bf16
 *                widened the same way or fp32 read as is, one FMA per
 *                product;
 *   portable     C, any CPU: the same products and sums as avx512-fma.
 * Results agree within fp32 accumulation's bound over k (the oracle's).
 *
 * Threads: a packed weight is read-only after agmm_bf16w_pack; any number
 * of threads may call agmm_bf16w_gemm on it at once. A call allocates
 * nothing. The caller owns A, C and the weight.
 */
#ifndef AGMM_GEMM_WQ_BF16W_H
#define AGMM_GEMM_WQ_BF16W_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

#define AGMM_BF16W_NB 64 /* columns per block */

typedef struct agmm_bf16w {
    int64_t k, n;
    int64_t blocks;     /* ceil(n / 64) */
    int64_t pairs;      /* ceil(k / 2) */
    size_t block_bytes; /* pairs x 256 */
    uint16_t *data;     /* blocks x block_bytes, 64-byte aligned; owned */
} agmm_bf16w_t;

typedef enum agmm_bf16w_kernel {
    AGMM_BF16W_PORTABLE = 0,
    AGMM_BF16W_AVX512_FMA = 1,
    AGMM_BF16W_AVX512_BF16 = 2,
    AGMM_BF16W_COUNT
} agmm_bf16w_kernel_t;

/* The packed bytes of a [k, n] weight (0 for k or n < 1). */
size_t agmm_bf16w_packed_bytes(int64_t k, int64_t n);
/* A packed weight of that geometry, its values zero (AGMM_ERR_INVALID_ARG,
 * AGMM_ERR_NO_MEMORY; logged). */
agmm_status_t agmm_bf16w_alloc(int64_t k, int64_t n, agmm_bf16w_t **out);
/* Pack b (bf16 bits [k][n], row stride ldb >= n) into w. */
agmm_status_t agmm_bf16w_pack(agmm_bf16w_t *w, const uint16_t *b, int64_t ldb);
void agmm_bf16w_free(agmm_bf16w_t *w);

/* Can this CPU run the variant (and, for avx512-bf16, A in a_dtype)? */
int agmm_bf16w_kernel_supported(agmm_bf16w_kernel_t kind);
/* The best variant this CPU runs for A in a_dtype (BF16 or FP32), or the
 * one AGMM_BF16W_KERNEL names (portable, avx512-fma, avx512-bf16) when
 * set and runnable for it (else warned about once and ignored). */
agmm_bf16w_kernel_t agmm_bf16w_kernel(agmm_dtype_t a_dtype);
/* "portable", "avx512-fma", "avx512-bf16" (NULL for an invalid one). */
const char *agmm_bf16w_kernel_name(agmm_bf16w_kernel_t kind);

/* C[m, 0:n] = A[m, k] x W, fp32 C (row stride ldc) overwritten; A bf16 or
 * fp32 (row stride lda). Rows go 32 at a time (the weight is read once
 * per 32 rows). AGMM_ERR_INVALID_ARG (bad arguments, avx512-bf16 with
 * fp32 A), AGMM_ERR_UNSUPPORTED (the CPU cannot run kind); logged. */
agmm_status_t agmm_bf16w_gemm_with(agmm_bf16w_kernel_t kind,
                                   const agmm_bf16w_t *w, int64_t m,
                                   const void *a, agmm_dtype_t a_dtype,
                                   int64_t lda, float *c, int64_t ldc);
agmm_status_t agmm_bf16w_gemm(const agmm_bf16w_t *w, int64_t m, const void *a,
                              agmm_dtype_t a_dtype, int64_t lda, float *c,
                              int64_t ldc);

/* The kernels (bf16w.c calls them): rows 1..AGMM_BF16W_RB of A (row
 * stride lda; a points at row 0, element 0) against pair rows q0..q1-1
 * of one block: out[r][64] (row stride ldo) = (q0 == 0 ? 0 : out) + the
 * products of those pair rows, k ascending (so chunks of k give the
 * bits one call over all of k gives). */
#define AGMM_BF16W_RB 6
typedef void (*agmm_bf16w_block_fn)(const agmm_bf16w_t *w, const uint16_t *blk,
                                    int64_t q0, int64_t q1, int rows,
                                    const void *a, int a_f32, int64_t lda,
                                    float *out, int64_t ldo);
void agmm_bf16w_block_portable(const agmm_bf16w_t *w, const uint16_t *blk,
                               int64_t q0, int64_t q1, int rows, const void *a,
                               int a_f32, int64_t lda, float *out, int64_t ldo);
#if defined(__x86_64__)
void agmm_bf16w_block_fma(const agmm_bf16w_t *w, const uint16_t *blk,
                          int64_t q0, int64_t q1, int rows, const void *a,
                          int a_f32, int64_t lda, float *out, int64_t ldo);
void agmm_bf16w_block_dpbf16(const agmm_bf16w_t *w, const uint16_t *blk,
                             int64_t q0, int64_t q1, int rows, const void *a,
                             int a_f32, int64_t lda, float *out, int64_t ldo);
#endif

#endif /* AGMM_GEMM_WQ_BF16W_H */
