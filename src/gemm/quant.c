/* agmm_quantize and agmm_scale_name (agmm.h): symmetric int8
 * quantization, the same bits on every machine.
 *
 * Two passes over x, each row converted to fp32 (convert.h, exact):
 *   1. absmax of each set (row, column or the whole), refusing the first
 *      non-finite value in row-major order;
 *   2. s = absmax / 127 (one fp32 division, rounded to nearest even), then
 *      q = round_half_even(x / s) (a division, not x * (1 / s): x = absmax
 *      gives 127 exactly whatever s's rounding), clamped to [-127, 127].
 * The rounding is done by hand (floorf and compares, exact at these
 * magnitudes), not by the FPU's current mode. A set whose absmax is 0,
 * or so small that s underflows to 0 (absmax < 127 * 2^-149), has scale 0
 * and values 0. */
#include <math.h>
#include <stdlib.h>

#include "agmm.h"
#include "common/log.h"
#include "gemm/convert.h"

const char *agmm_scale_name(agmm_scale_t s)
{
    switch (s) {
    case AGMM_SCALE_CHANNEL:
        return "channel";
    case AGMM_SCALE_TENSOR:
        return "tensor";
    }
    return "invalid";
}

/* round_half_even(x / s) in [-127, 127], for s > 0 finite, x finite. */
static int8_t quant1(float x, float s)
{
    float v = x / s;
    if (v >= 127.0f) return 127;
    if (v <= -127.0f) return -127;
    float r = floorf(v), d = v - r; /* both exact for |v| < 2^23 */
    if (d > 0.5f || (d == 0.5f && fmodf(r, 2.0f) != 0.0f)) r += 1.0f;
    return (int8_t)r;
}

/* Pass 1: absmax per set into amax ([rows], [cols] or [1], zeroed). */
static agmm_status_t absmax(const unsigned char *x, agmm_dtype_t dt,
                            int64_t rows, int64_t cols, size_t row_bytes,
                            agmm_quant_axis_t axis, float *buf, float *amax)
{
    for (int64_t i = 0; i < rows; i++) {
        agmm_convert_to_f32(dt, x + (size_t)i * row_bytes, buf, (size_t)cols);
        for (int64_t j = 0; j < cols; j++) {
            float v = buf[j];
            if (!isfinite(v))
                return agmm_error(AGMM_ERR_INVALID_ARG,
                                  "quantize: x[%lld, %lld] is not finite "
                                  "(%g)",
                                  (long long)i, (long long)j, (double)v);
            float *m = axis == AGMM_QUANT_ROWS   ? &amax[i]
                       : axis == AGMM_QUANT_COLS ? &amax[j]
                                                 : &amax[0];
            if (fabsf(v) > *m) *m = fabsf(v);
        }
    }
    return AGMM_OK;
}

agmm_status_t agmm_quantize(const void *x, agmm_dtype_t dtype, int64_t rows,
                            int64_t cols, int64_t ld, agmm_quant_axis_t axis,
                            int8_t *q, float *scales)
{
    if (dtype != AGMM_DTYPE_FP16 && dtype != AGMM_DTYPE_BF16 &&
        dtype != AGMM_DTYPE_FP32)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "quantize: dtype %s: fp16, bf16 or fp32 only",
                          agmm_dtype_name(dtype));
    if (axis != AGMM_QUANT_ROWS && axis != AGMM_QUANT_COLS &&
        axis != AGMM_QUANT_TENSOR)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "quantize: axis %d is not valid", (int)axis);
    if (rows < 0 || cols < 0 || ld < cols)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "quantize: bad shape (rows %lld, cols %lld, ld "
                          "%lld)",
                          (long long)rows, (long long)cols, (long long)ld);
    int64_t nsets = axis == AGMM_QUANT_ROWS   ? rows
                    : axis == AGMM_QUANT_COLS ? cols
                                              : 1;
    if (!scales || (rows > 0 && cols > 0 && (!x || !q)))
        return agmm_error(AGMM_ERR_INVALID_ARG, "quantize: NULL argument");
    float *buf = malloc(((size_t)cols + 1) * sizeof(float));
    if (!buf) return agmm_error(AGMM_ERR_NO_MEMORY, "quantize: out of memory");
    for (int64_t s = 0; s < nsets; s++)
        scales[s] = 0.0f;
    size_t row_bytes = (size_t)ld * agmm_dtype_size(dtype);
    agmm_status_t st =
        absmax(x, dtype, rows, cols, row_bytes, axis, buf, scales);
    for (int64_t s = 0; st == AGMM_OK && s < nsets; s++)
        scales[s] = scales[s] / 127.0f; /* 0 stays 0 */
    for (int64_t i = 0; st == AGMM_OK && i < rows; i++) {
        agmm_convert_to_f32(dtype,
                            (const unsigned char *)x + (size_t)i * row_bytes,
                            buf, (size_t)cols);
        int8_t *qi = q + (size_t)i * (size_t)cols;
        for (int64_t j = 0; j < cols; j++) {
            float s = axis == AGMM_QUANT_ROWS   ? scales[i]
                      : axis == AGMM_QUANT_COLS ? scales[j]
                                                : scales[0];
            qi[j] = s > 0.0f ? quant1(buf[j], s) : 0;
        }
    }
    free(buf);
    return st;
}
