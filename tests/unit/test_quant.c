/* agmm_quantize and agmm_scale_name (agmm.h): ties to even, the +-127
 * extremes, all-zero sets, every axis, fp16 / bf16 / fp32 inputs with a
 * row stride, and the refusals (non-finite values named by position,
 * other dtypes). The expected values are computed here with the FPU's
 * nearbyintf (round to nearest even in the default mode), not the
 * library's hand rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"

enum { R = 5, C = 7, LD = 9 };

static float val(uint64_t i)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    return (float)((double)(h % 20001) / 1000.0 - 10.0);
}

/* q and scale the way agmm.h states them. */
static int8_t expect_q(float x, float s)
{
    if (s == 0.0f) return 0;
    float v = nearbyintf(x / s);
    return (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : v);
}

static void test_ties(void)
{
    /* absmax 127: scale exactly 1, q = x rounded to even */
    static const float x[] = {0.5f,  1.5f,  2.5f,   -0.5f,  -1.5f,
                              -2.5f, 3.49f, 126.5f, 127.0f, -127.0f};
    static const int8_t want[] = {0, 2, 2, 0, -2, -2, 3, 126, 127, -127};
    int n = (int)(sizeof x / sizeof x[0]);
    int8_t q[16];
    float s = -1;
    CHECK(agmm_quantize(x, AGMM_DTYPE_FP32, 1, n, n, AGMM_QUANT_ROWS, q, &s) ==
              AGMM_OK,
          "ties: %s", agmm_last_error());
    CHECK(s == 1.0f, "ties: scale %g, want 1", (double)s);
    for (int j = 0; j < n; j++)
        CHECK(q[j] == want[j], "ties: %g -> %d, want %d", (double)x[j], q[j],
              want[j]);
}

static void test_extremes_and_zero(void)
{
    /* row 0 all zero; rows 1..3: +-absmax at both ends, any magnitude */
    static const float mags[] = {0.3f, 1e-3f, 3.7e5f};
    float x[4][4] = {{0, 0, -0.0f, 0}};
    for (int r = 1; r < 4; r++) {
        float m = mags[r - 1];
        x[r][0] = m;
        x[r][1] = -m;
        x[r][2] = m * 0.25f;
        x[r][3] = -m * 0.5f;
    }
    int8_t q[16];
    float s[4];
    CHECK(agmm_quantize(x, AGMM_DTYPE_FP32, 4, 4, 4, AGMM_QUANT_ROWS, q, s) ==
              AGMM_OK,
          "extremes: %s", agmm_last_error());
    CHECK(s[0] == 0.0f && !q[0] && !q[1] && !q[2] && !q[3],
          "all-zero row: scale %g, q %d %d %d %d", (double)s[0], q[0], q[1],
          q[2], q[3]);
    for (int r = 1; r < 4; r++) {
        CHECK(s[r] == mags[r - 1] / 127.0f, "row %d scale %g", r, (double)s[r]);
        CHECK(q[r * 4] == 127 && q[r * 4 + 1] == -127 &&
                  q[r * 4 + 2] == expect_q(x[r][2], s[r]) &&
                  q[r * 4 + 3] == expect_q(x[r][3], s[r]),
              "row %d: %d %d %d %d", r, q[r * 4], q[r * 4 + 1], q[r * 4 + 2],
              q[r * 4 + 3]);
    }
    /* a scale that would underflow: scale 0, values 0 */
    float tiny[2] = {1e-45f, -1e-45f};
    CHECK(agmm_quantize(tiny, AGMM_DTYPE_FP32, 1, 2, 2, AGMM_QUANT_TENSOR, q,
                        s) == AGMM_OK &&
              s[0] == 0.0f && q[0] == 0 && q[1] == 0,
          "underflowing scale: %g %d %d", (double)s[0], q[0], q[1]);
}

/* Every axis and input dtype on R x C values with row stride LD. */
static void test_axes(agmm_dtype_t dt)
{
    float x32[R * LD];
    for (int i = 0; i < R * LD; i++)
        x32[i] = val((uint64_t)i);
    x32[2 * LD + 3] = 0.0f; /* values as dt holds them: */
    unsigned char xs[R * LD * 4];
    agmm_convert_from_fp32(dt, x32, xs, R * LD);
    float xv[R * LD];
    if (dt == AGMM_DTYPE_FP32) memcpy(xv, x32, sizeof xv);
    for (int i = 0; dt != AGMM_DTYPE_FP32 && i < R * LD; i++) {
        uint16_t h;
        memcpy(&h, xs + 2 * i, 2);
        /* widen: bf16 is the upper half; fp16 through the library's
         * exact conversion would be circular, so only bf16 is widened
         * here and fp16 is compared with the fp32 run of its values */
        uint32_t b = (uint32_t)h << 16;
        memcpy(&xv[i], &b, 4);
    }
    static const agmm_quant_axis_t axes[] = {AGMM_QUANT_ROWS, AGMM_QUANT_COLS,
                                             AGMM_QUANT_TENSOR};
    for (int ai = 0; ai < 3; ai++) {
        agmm_quant_axis_t ax = axes[ai];
        int8_t q[R * C];
        float s[R > C ? R : C];
        CHECK(agmm_quantize(xs, dt, R, C, LD, ax, q, s) == AGMM_OK,
              "%s axis %d: %s", agmm_dtype_name(dt), ax, agmm_last_error());
        if (dt == AGMM_DTYPE_FP16) {
            /* the same as quantizing its values given as fp32 */
            float f[R * LD];
            int8_t q2[R * C];
            float s2[R > C ? R : C];
            for (int i = 0; i < R * LD; i++) {
                uint16_t h;
                memcpy(&h, xs + 2 * i, 2);
                f[i] = ldexpf((float)(h & 0x3ff) + ((h >> 10) & 31 ? 1024 : 0),
                              ((h >> 10) & 31 ? (h >> 10) & 31 : 1) - 25) *
                       (h & 0x8000 ? -1.0f : 1.0f);
            }
            CHECK(agmm_quantize(f, AGMM_DTYPE_FP32, R, C, LD, ax, q2, s2) ==
                          AGMM_OK &&
                      !memcmp(q, q2, sizeof q) &&
                      !memcmp(s, s2,
                              sizeof(float) * (ax == AGMM_QUANT_ROWS   ? R
                                               : ax == AGMM_QUANT_COLS ? C
                                                                       : 1)),
                  "fp16 axis %d differs from its fp32 values", ax);
            continue;
        }
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) {
                int set = ax == AGMM_QUANT_ROWS   ? i
                          : ax == AGMM_QUANT_COLS ? j
                                                  : 0;
                float m = 0;
                for (int a = 0; a < R; a++)
                    for (int b = 0; b < C; b++) {
                        int sb = ax == AGMM_QUANT_ROWS   ? a
                                 : ax == AGMM_QUANT_COLS ? b
                                                         : 0;
                        if (sb == set) m = fmaxf(m, fabsf(xv[a * LD + b]));
                    }
                CHECK(s[set] == m / 127.0f, "%s axis %d set %d: scale %g",
                      agmm_dtype_name(dt), ax, set, (double)s[set]);
                CHECK(q[i * C + j] == expect_q(xv[i * LD + j], s[set]),
                      "%s axis %d [%d,%d]: %d, want %d", agmm_dtype_name(dt),
                      ax, i, j, q[i * C + j], expect_q(xv[i * LD + j], s[set]));
            }
    }
}

static void test_refusals(void)
{
    float x[3 * 4] = {0};
    int8_t q[12];
    float s[4];
    x[2 * 4 + 1] = NAN;
    x[2 * 4 + 3] = INFINITY;
    agmm_status_t st =
        agmm_quantize(x, AGMM_DTYPE_FP32, 3, 4, 4, AGMM_QUANT_COLS, q, s);
    CHECK(st == AGMM_ERR_INVALID_ARG && strstr(agmm_last_error(), "x[2, 1]"),
          "NaN must be refused naming x[2, 1]: %d %s", st, agmm_last_error());
    x[2 * 4 + 1] = 1.0f;
    st = agmm_quantize(x, AGMM_DTYPE_FP32, 3, 4, 4, AGMM_QUANT_ROWS, q, s);
    CHECK(st == AGMM_ERR_INVALID_ARG && strstr(agmm_last_error(), "x[2, 3]"),
          "inf must be refused naming x[2, 3]: %d %s", st, agmm_last_error());
    uint16_t bf[2] = {0x3f80, 0xff80}; /* 1, -inf */
    st = agmm_quantize(bf, AGMM_DTYPE_BF16, 1, 2, 2, AGMM_QUANT_TENSOR, q, s);
    CHECK(st == AGMM_ERR_INVALID_ARG && strstr(agmm_last_error(), "x[0, 1]"),
          "bf16 -inf: %d %s", st, agmm_last_error());
    st = agmm_quantize(x, AGMM_DTYPE_INT8, 1, 2, 2, AGMM_QUANT_ROWS, q, s);
    CHECK(st == AGMM_ERR_INVALID_ARG && strstr(agmm_last_error(), "int8"),
          "int8 input: %d %s", st, agmm_last_error());
    st = agmm_quantize(x, AGMM_DTYPE_FP32, 2, 4, 3, AGMM_QUANT_ROWS, q, s);
    CHECK(st == AGMM_ERR_INVALID_ARG, "ld < cols: %d", st);
    st = agmm_quantize(x, AGMM_DTYPE_FP32, 1, 4, 4, (agmm_quant_axis_t)3, q, s);
    CHECK(st == AGMM_ERR_INVALID_ARG, "bad axis: %d", st);
    st = agmm_quantize(x, AGMM_DTYPE_FP32, 1, 4, 4, AGMM_QUANT_ROWS, NULL, s);
    CHECK(st == AGMM_ERR_INVALID_ARG, "NULL q: %d", st);
}

int main(void)
{
    CHECK(!strcmp(agmm_scale_name(AGMM_SCALE_CHANNEL), "channel") &&
              !strcmp(agmm_scale_name(AGMM_SCALE_TENSOR), "tensor") &&
              !strcmp(agmm_scale_name((agmm_scale_t)5), "invalid"),
          "scale names");
    test_ties();
    test_extremes_and_zero();
    test_axes(AGMM_DTYPE_FP32);
    test_axes(AGMM_DTYPE_BF16);
    test_axes(AGMM_DTYPE_FP16);
    test_refusals();
    CHECK_DONE("test_quant");
}
