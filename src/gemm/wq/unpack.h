/* The prefill path's dequantization (unpack.c): columns of a packed
 * weight (wq_internal.h) into a plain row-major panel of fp32 or bf16, for
 * a library GEMM to multiply (wq/libgemm.h, wq/engine.c). */
#ifndef AGMM_GEMM_WQ_UNPACK_H
#define AGMM_GEMM_WQ_UNPACK_H

#include <stdint.h>

#include "gemm/wq/wq.h"

/* dst[kk * ldd + j] = value(kk, j0 + j) for kk < k, j < nc, with
 *   value = ((float)u - zero) * scale   (one fp32 rounding: u - zero is an
 *                                        integer of at most 9 bits, exact)
 * of the packed weight's stored u, zero and scale (wq_internal.h), then,
 * with bf16 != 0, rounded to bf16 (nearest even: |error| <= 2^-8 |value|)
 * and stored as uint16_t bits; else stored as float. j0 must be a
 * multiple of 16 (a panel's first column), 0 < nc, j0 + nc <= n,
 * ldd >= nc; not checked. Threads: reads w only; any number at once. */
void agmm_wq_unpack(const agmm_wq_t *w, int64_t j0, int64_t nc, void *dst,
                    int64_t ldd, int bf16);

#endif /* AGMM_GEMM_WQ_UNPACK_H */
