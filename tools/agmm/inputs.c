/* Reproducible inputs; see inputs.h. */
#include "inputs.h"

#include <math.h>
#include <stdlib.h>

#include "agmm_ext.h" /* agmm_convert_from_fp32 */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

agmm_status_t agmm_inputs_fill(uint64_t seed, int kind, int64_t id,
                               agmm_dtype_t dtype, void *dst, int64_t n)
{
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!f) return AGMM_ERR_NO_MEMORY;
    uint64_t key =
        splitmix64(seed ^ splitmix64(((uint64_t)kind << 56) ^ (uint64_t)id));
    const double two_pi = 6.283185307179586;
    for (int64_t i = 0; i < n; i += 2) {
        /* Box-Muller on two 53-bit uniforms in (0, 1]. */
        uint64_t h = splitmix64(key + (uint64_t)i);
        double u1 = ((double)(h >> 11) + 1.0) * 0x1.0p-53;
        double u2 = (double)(splitmix64(h) >> 11) * 0x1.0p-53;
        double rad = sqrt(-2.0 * log(u1)) * 0.1;
        f[i] = (float)(rad * cos(two_pi * u2));
        if (i + 1 < n) f[i + 1] = (float)(rad * sin(two_pi * u2));
    }
    agmm_status_t st = agmm_convert_from_fp32(dtype, f, dst, (size_t)n);
    free(f);
    return st;
}

agmm_status_t agmm_inputs_fill_wq(uint64_t seed, int kind, int64_t id,
                                  int64_t rows, int64_t cols, int bits,
                                  int64_t group, int asym, void *q,
                                  float *scales, uint8_t *zeros)
{
    if (rows == 0 || cols == 0) return AGMM_OK;
    float *f = malloc((size_t)rows * (size_t)cols * sizeof(float));
    if (!f) return AGMM_ERR_NO_MEMORY;
    agmm_status_t st =
        agmm_inputs_fill(seed, kind, id, AGMM_DTYPE_FP32, f, rows * cols);
    if (st == AGMM_OK)
        st = agmm_quantize_weight(f, rows, cols, bits, group, !asym, q, scales,
                                  asym ? zeros : NULL);
    free(f);
    return st;
}

size_t agmm_inputs_wq_bytes(int64_t rows, int64_t cols, int bits)
{
    return (size_t)(bits == 8 ? rows : (rows + 1) / 2) * (size_t)cols;
}

int64_t agmm_inputs_wq_groups(int64_t rows, int64_t cols, int64_t group)
{
    int64_t g = group > 0 ? group : rows;
    return rows > 0 ? (rows + g - 1) / g * cols : 0;
}

agmm_status_t agmm_inputs_fill_int8(uint64_t seed, int kind, int64_t id,
                                    int64_t rows, int64_t cols,
                                    agmm_quant_axis_t axis, int8_t *q,
                                    float *scales)
{
    if (rows == 0 || cols == 0) { /* nothing to quantize: zero scales */
        int64_t ns = axis == AGMM_QUANT_ROWS   ? rows
                     : axis == AGMM_QUANT_COLS ? cols
                                               : 1;
        for (int64_t i = 0; i < ns; i++)
            scales[i] = 0;
        return AGMM_OK;
    }
    float *f = malloc((size_t)rows * (size_t)cols * sizeof(float));
    if (!f) return AGMM_ERR_NO_MEMORY;
    agmm_status_t st =
        agmm_inputs_fill(seed, kind, id, AGMM_DTYPE_FP32, f, rows * cols);
    if (st == AGMM_OK)
        st = agmm_quantize(f, AGMM_DTYPE_FP32, rows, cols, cols, axis, q,
                           scales);
    free(f);
    return st;
}
