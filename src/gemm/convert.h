/*
 * dtype conversion: fp16 / bf16 / fp32 <-> fp32.
 *
 * Scalar conversions round to nearest, ties to even; NaN stays NaN (made
 * quiet, sign kept), infinities stay infinities, subnormals are handled in
 * both directions. agmm_convert_to_f32() is the hot path and uses AVX2+F16C
 * when the CPU has them (chosen once, at first use); it agrees bit for bit
 * with agmm_convert_to_f32_scalar().
 */
#ifndef AGMM_GEMM_CONVERT_H
#define AGMM_GEMM_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "agmm.h"

float agmm_fp16_to_f32(uint16_t h);
uint16_t agmm_f32_to_fp16(float f);
float agmm_bf16_to_f32(uint16_t b);
uint16_t agmm_f32_to_bf16(float f);

/* agmm_f32_to_bf16 itself, inline and with a select for the NaN case, so
 * that a loop of it vectorizes (the epilogue's bf16 stores): round to
 * nearest even on the low 16 bits (overflow rounds into infinity); a NaN
 * is truncated with its quiet bit forced (rounding would carry a payload
 * of low bits only into infinity, truncating alone could drop it all). */
static inline uint16_t agmm_f32_to_bf16_inline(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* dst[i] = (float)src[i] for i < n, src in dtype `dt`. fp32 is a memcpy.
 * An invalid dtype leaves dst untouched. src and dst must not overlap. */
void agmm_convert_to_f32(agmm_dtype_t dt, const void *src, float *dst,
                         size_t n);
/* The portable path of agmm_convert_to_f32(); always available. */
void agmm_convert_to_f32_scalar(agmm_dtype_t dt, const void *src, float *dst,
                                size_t n);
/* dst[i] = src[i] rounded to dtype `dt` (round to nearest even). */
void agmm_convert_from_f32(agmm_dtype_t dt, const float *src, void *dst,
                           size_t n);

/* "avx2+f16c" or "scalar": the path agmm_convert_to_f32() takes. */
const char *agmm_convert_path(void);

#endif /* AGMM_GEMM_CONVERT_H */
