/*
 * The oracle of the weight-quantized GEMM (gemm/wq/wq.h): the weight read
 * from the plain layout (independently of agmm_wq_pack), each value
 * dequantized exactly, products summed in double; and the bound any fp32
 * kernel must stay within.
 */
#ifndef AGMM_CHECK_WQ_REF_H
#define AGMM_CHECK_WQ_REF_H

#include <stdint.h>

#include "gemm/wq/wq.h"

/* value(kk, j) = (q - zero) * scale of the plain layout, exactly (a
 * double holds it: at most 9 bits of q - zero times a 24-bit scale). */
double agmm_wq_ref_value(const agmm_wq_desc_t *d, int64_t kk, int64_t j);

/* c[i][j] = sum_kk a[i][kk] * value(kk, j) in double, for i < m, j < n
 * (a row-major fp32, stride lda: bf16 / fp16 A converted first, exactly;
 * c stride ldc). With bound non-NULL (stride ldc), bound[i][j] is what
 * |kernel - c| may be for an fp32 kernel that sums each group's products
 * in any order, takes the zero term out of the group (acc - zero * sum of
 * a) and adds the groups' scaled sums:
 *   gamma(G + groups + 4) * sum_kk |a[i][kk]| * |scale| * (|u| + |zu|)
 * with gamma(n) = n 2^-24 / (1 - n 2^-24), and u, zu the stored value and
 * zero of wq_internal.h's packed layout (int4 symmetric: q + 8 and 8;
 * int8 symmetric: q and 0; asymmetric: q and zero), both + 128 for int4
 * (AGMM_WQ_U_OFFSET_BOUND: a kernel may multiply u + 128 and take
 * (zero + 128) x sum of a off, as the dot kernel does; hand-made exact
 * cases stay exact). With out_bf16, the bf16 rounding of C is added
 * (2^-8 |c| + the bound, relative). */
#define AGMM_WQ_U_OFFSET_BOUND 128 /* = wq_internal.h's AGMM_WQ_U_OFFSET */
void agmm_wq_ref(const agmm_wq_desc_t *d, int64_t m, const float *a,
                 int64_t lda, double *c, double *bound, int64_t ldc,
                 int out_bf16);

/* A's rows as the A8 kernels take them (wq.h's A8 variants, a plan's
 * a_quant INT8): row i of a [m, k] (fp32, stride lda) quantized with the
 * library's float steps (sa = max |a| / 127, 1 for a zero row; q =
 * nearbyint(a / sa) within -127..127), aq[i][kk] = q x sa in double
 * (exact), stride ldq. The same integers as the library's, so a product's
 * reference is exact in A's quantization. A row with a NaN or an
 * infinity is NaN throughout, as the library makes its C row. */
void agmm_wq_ref_quantize_a(int64_t m, int64_t k, const float *a, int64_t lda,
                            double *aq, int64_t ldq);

/* agmm_wq_ref for an A8 kernel: c from A quantized as
 * agmm_wq_ref_quantize_a does, and the bound of an A8 kernel's steps
 * (exact int32 group sums; one rounding taking the zero term off, one
 * adding each scaled group, one for the row's scale):
 *   gamma(groups + 4) * sum_kk |aq[i][kk]| * |scale| * (|u| + |zu|)
 * with u, zu the unsigned operand and its zero (int4: the nibble and its
 * zero, 8 when symmetric; int8 symmetric q + 128 and 128; asymmetric q
 * and the zero point); out_bf16 as agmm_wq_ref. */
void agmm_wq_ref_a8(const agmm_wq_desc_t *d, int64_t m, const float *a,
                    int64_t lda, double *c, double *bound, int64_t ldc,
                    int out_bf16);

#endif /* AGMM_CHECK_WQ_REF_H */
