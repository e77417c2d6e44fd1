/* agmm_quantize_weight (agmm.h): int4 / int8 weights with group scales in
 * the plain layout (wq.h), the same bits on every machine.
 *
 * Per group of G rows and per column:
 *   symmetric:  s = max|w| / 7 (int4) or / 127 (int8), one fp32 division;
 *               q = clamp(round(w / s), -8..7 or -127..127);
 *   asymmetric: lo = min(min w, 0), hi = max(max w, 0) (0 is kept in the
 *               range, so a constant group is not lost), s = (hi - lo) / 15
 *               or / 255, zero = clamp(round(-lo / s), 0..15 or 0..255),
 *               q = clamp(round(w / s) + zero, 0..15 or 0..255);
 * round() is nearbyintf under FE_TONEAREST (ties to even; the caller's
 * rounding mode is put back). A group whose s is 0 (all zeros, or values
 * so small that s underflows) has q = 0 (and zero 0). A non-finite value
 * is refused before anything is written, naming its row and column. */
#include <fenv.h>
#include <math.h>
#include <string.h>

#include "agmm.h"
#include "common/log.h"

static int quant_check(const float *w, int64_t k, int64_t n, int bits,
                       int64_t group, int symmetric, const void *q,
                       const float *scales, const uint8_t *zeros)
{
    if (!w || !q || !scales || (!symmetric && !zeros))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_quantize_weight: a null pointer (w %p, q %p, "
                          "scales %p, zeros %p%s)",
                          (const void *)w, q, (const void *)scales,
                          (const void *)zeros,
                          symmetric ? "" : ", asymmetric needs zeros");
    if (k < 1 || n < 1 || k > INT64_MAX / n)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_quantize_weight: bad shape k %lld n %lld",
                          (long long)k, (long long)n);
    if (bits != 4 && bits != 8)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_quantize_weight: bits %d (4 or 8)", bits);
    if (group != 0 && group != 32 && group != 64 && group != 128 && group != k)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_quantize_weight: group %lld (32, 64, 128, "
                          "or 0 or k for all of k)",
                          (long long)group);
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++)
            if (!isfinite(w[i * n + j]))
                return agmm_error(AGMM_ERR_INVALID_ARG,
                                  "agmm_quantize_weight: w[%lld][%lld] = %g "
                                  "is not finite",
                                  (long long)i, (long long)j,
                                  (double)w[i * n + j]);
    return AGMM_OK;
}

static void put(void *q, int bits, int symmetric, int64_t n, int64_t i,
                int64_t j, int v)
{
    if (bits == 8) {
        if (symmetric)
            ((int8_t *)q)[i * n + j] = (int8_t)v;
        else
            ((uint8_t *)q)[i * n + j] = (uint8_t)v;
        return;
    }
    uint8_t *b = (uint8_t *)q + (i / 2) * n + j;
    unsigned nib = (unsigned)v & 0xfu; /* two's complement when signed */
    *b = (uint8_t)(i % 2 ? (*b & 0x0fu) | (nib << 4) : (*b & 0xf0u) | nib);
}

static int clampi(float x, int lo, int hi)
{
    return x < (float)lo ? lo : x > (float)hi ? hi : (int)x;
}

agmm_status_t agmm_quantize_weight(const float *w, int64_t k, int64_t n,
                                   int bits, int64_t group, int symmetric,
                                   void *q, float *scales, uint8_t *zeros)
{
    AGMM_CHECK(quant_check(w, k, n, bits, group, symmetric, q, scales, zeros));
    int64_t g_rows = group == 0 ? k : group;
    int64_t ng = (k + g_rows - 1) / g_rows;
    int qmax = bits == 4 ? 15 : 255; /* asymmetric range 0..qmax */
    int smax = bits == 4 ? 7 : 127;  /* symmetric range -smax..smax */
    if (bits == 4) memset(q, 0, (size_t)((k + 1) / 2) * (size_t)n);
    int mode = fegetround();
    fesetround(FE_TONEAREST);
    for (int64_t g = 0; g < ng; g++) {
        int64_t r0 = g * g_rows, r1 = r0 + g_rows < k ? r0 + g_rows : k;
        for (int64_t j = 0; j < n; j++) {
            float lo = 0, hi = 0;
            for (int64_t i = r0; i < r1; i++) {
                float v = w[i * n + j];
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            float s;
            int zero = 0;
            if (symmetric) {
                float amax = -lo > hi ? -lo : hi;
                s = amax / (float)smax;
            } else {
                s = (hi - lo) / (float)qmax;
                if (s > 0) zero = clampi(nearbyintf(-lo / s), 0, qmax);
            }
            scales[g * n + j] = s;
            if (!symmetric) zeros[g * n + j] = (uint8_t)zero;
            for (int64_t i = r0; i < r1; i++) {
                int v = 0;
                if (s > 0) {
                    float r = nearbyintf(w[i * n + j] / s);
                    v = symmetric ? clampi(r, bits == 4 ? -8 : -127, smax)
                                  : clampi(r + (float)zero, 0, qmax);
                }
                put(q, bits, symmetric, n, i, j, v);
            }
        }
    }
    fesetround(mode);
    return AGMM_OK;
}
