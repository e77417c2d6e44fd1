/* agmm_quantize_weight (agmm.h, src/gemm/wq/quantize.c): hand values in
 * the plain layout (nibble order, the padding nibble, zero points 0 and
 * 15, a last partial group, a group of zeros), rounding ties to even, the
 * round trip within half a step, and the refusals (a non-finite value
 * named by row and column with nothing written, bits, group, shape). */
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "check.h"
#include "common/log.h"
#include "test_data.h"

static int nib(const uint8_t *q, int64_t n, int64_t kk, int64_t j)
{
    int b = q[(kk / 2) * n + j];
    return kk % 2 ? b >> 4 : b & 0xf;
}

static void ties_to_even(void)
{
    /* int8 symmetric, max 127: s = 1, q = round_even(w). */
    float w8[7] = {127, 0.5f, 1.5f, 2.5f, -1.5f, -2.5f, -0.5f};
    int8_t q8[7];
    float s;
    CHECK(agmm_quantize_weight(w8, 7, 1, 8, 0, 1, q8, &s, NULL) == AGMM_OK,
          "int8");
    int8_t want8[7] = {127, 0, 2, 2, -2, -2, 0};
    CHECK(s == 1.0f, "scale %g", (double)s);
    for (int i = 0; i < 7; i++)
        CHECK(q8[i] == want8[i], "int8 row %d: %d, want %d", i, q8[i],
              want8[i]);
    /* int4 symmetric, max 7: s = 1; 6 rows in 3 bytes, even row low. */
    float w4[6] = {7, 0.5f, 1.5f, -7, 2.5f, -3.5f};
    uint8_t q4[3];
    CHECK(agmm_quantize_weight(w4, 6, 1, 4, 0, 1, q4, &s, NULL) == AGMM_OK,
          "int4");
    int want4[6] = {7, 0, 2, -7, 2, -4};
    for (int i = 0; i < 6; i++) {
        int v = nib(q4, 1, i, 0);
        CHECK((v >= 8 ? v - 16 : v) == want4[i], "int4 row %d: %d want %d", i,
              v, want4[i]);
    }
    CHECK(q4[0] == 0x07 && q4[1] == 0x92, "bytes %02x %02x", q4[0], q4[1]);
    /* The caller's rounding mode is kept. */
    fesetround(FE_UPWARD);
    CHECK(agmm_quantize_weight(w8, 7, 1, 8, 0, 1, q8, &s, NULL) == AGMM_OK,
          "upward");
    CHECK(fegetround() == FE_UPWARD && q8[1] == 0 && q8[3] == 2,
          "mode kept, ties still to even");
    fesetround(FE_TONEAREST);
}

static void asymmetric_and_groups(void)
{
    /* k = 35, G = 32: a last group of 3 rows; k odd: a padding nibble.
     * Column 0: 0..15 then 3 zeros (s = 1, zero 0); column 1: -15..0
     * (zero 15); column 2: all zero (scale 0). */
    enum { K = 35, N = 3 };
    float w[K * N];
    for (int i = 0; i < K; i++) {
        w[i * N + 0] = i < 32 ? (float)(i % 16) : 0;
        w[i * N + 1] = i < 32 ? -(float)(i % 16) : 0;
        w[i * N + 2] = 0;
    }
    uint8_t q[(K + 1) / 2 * N], z[2 * N];
    float s[2 * N];
    memset(q, 0xff, sizeof q);
    CHECK(agmm_quantize_weight(w, K, N, 4, 32, 0, q, s, z) == AGMM_OK,
          "asym int4");
    CHECK(s[0] == 1 && z[0] == 0 && s[1] == 1 && z[1] == 15 && s[2] == 0 &&
              z[2] == 0,
          "group 0: s %g %g %g z %d %d %d", (double)s[0], (double)s[1],
          (double)s[2], z[0], z[1], z[2]);
    CHECK(s[3] == 0 && s[4] == 0 && s[5] == 0, "last group of zeros");
    for (int i = 0; i < 32; i++) {
        CHECK(nib(q, N, i, 0) == i % 16, "col 0 row %d: %d", i,
              nib(q, N, i, 0));
        CHECK(nib(q, N, i, 1) == 15 - i % 16, "col 1 row %d", i);
        CHECK(nib(q, N, i, 2) == 0, "col 2 row %d", i);
    }
    for (int j = 0; j < N; j++)
        CHECK(q[(K / 2) * N + j] >> 4 == 0, "padding nibble of column %d", j);

    /* Random weights: each value within half a step of its dequantized
     * value (symmetric and asymmetric, both widths, G = 0, 64, 128). */
    enum { K2 = 200, N2 = 37 };
    float *r = test_values(11, K2 * N2);
    uint8_t *qq = malloc(K2 * N2), *zz = malloc(K2 * N2);
    float *ss = malloc(sizeof(float) * K2 * N2);
    int64_t groups[3] = {0, 64, 128};
    for (int bits = 4; bits <= 8; bits += 4)
        for (int sym = 0; sym < 2; sym++)
            for (int gi = 0; gi < 3; gi++) {
                int64_t G = groups[gi] ? groups[gi] : K2;
                CHECK(agmm_quantize_weight(r, K2, N2, bits, groups[gi], sym, qq,
                                           ss, zz) == AGMM_OK,
                      "random");
                double worst = 0;
                for (int i = 0; i < K2; i++)
                    for (int j = 0; j < N2; j++) {
                        int v = bits == 8 ? (sym ? ((int8_t *)qq)[i * N2 + j]
                                                 : qq[i * N2 + j])
                                          : nib(qq, N2, i, j);
                        if (bits == 4 && sym && v >= 8) v -= 16;
                        int zero = sym ? 0 : zz[(i / G) * N2 + j];
                        double sc = ss[(i / G) * N2 + j];
                        double e = fabs((v - zero) * sc - r[i * N2 + j]) / sc;
                        worst = e > worst ? e : worst;
                    }
                CHECK(worst <= 0.5 + 1e-5, "bits %d sym %d G %lld: %g steps",
                      bits, sym, (long long)G, worst);
            }
    free(r);
    free(qq);
    free(zz);
    free(ss);
}

static void refusals(void)
{
    agmm_log_set_quiet(1);
    float w[4 * 3] = {0};
    uint8_t q[12], z[3];
    float s[3] = {-1, -1, -1};
    w[2 * 3 + 1] = NAN;
    CHECK(agmm_quantize_weight(w, 4, 3, 8, 0, 1, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "NaN refused");
    CHECK(strstr(agmm_last_error(), "w[2][1]") != NULL, "position: %s",
          agmm_last_error());
    CHECK(s[0] == -1, "nothing written");
    w[2 * 3 + 1] = -INFINITY;
    CHECK(agmm_quantize_weight(w, 4, 3, 4, 0, 0, q, s, z) ==
              AGMM_ERR_INVALID_ARG,
          "-inf refused");
    w[2 * 3 + 1] = 0;
    CHECK(agmm_quantize_weight(w, 4, 3, 5, 0, 1, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "bits 5");
    CHECK(strstr(agmm_last_error(), "bits 5") != NULL, "%s", agmm_last_error());
    CHECK(agmm_quantize_weight(w, 4, 3, 16, 0, 1, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "bits 16");
    CHECK(agmm_quantize_weight(w, 4, 3, 4, 48, 1, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "group 48");
    CHECK(agmm_quantize_weight(w, 4, 3, 4, -32, 1, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "group -32");
    CHECK(agmm_quantize_weight(w, 4, 3, 4, 4, 1, q, s, NULL) == AGMM_OK,
          "group = k");
    CHECK(agmm_quantize_weight(w, 4, 3, 4, 0, 0, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "asymmetric without zeros");
    CHECK(agmm_quantize_weight(w, 0, 3, 4, 0, 1, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "k 0");
    CHECK(agmm_quantize_weight(NULL, 4, 3, 4, 0, 1, q, s, NULL) ==
              AGMM_ERR_INVALID_ARG,
          "w NULL");
    agmm_log_set_quiet(0);
}

int main(void)
{
    ties_to_even();
    asymmetric_and_groups();
    refusals();
    CHECK_DONE("test_wq_quantize");
}
