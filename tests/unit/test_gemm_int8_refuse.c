/* The int8 (W8A8) GEMM's refusals and the rs oracle, run whether oneDNN
 * is built in or not:
 *   - OpenBLAS refuses int8 by name; every engine refuses int8 without
 *     scales, an int8 C, fp32 A on an int8 W, a negative ld_a_scale;
 *     oneDNN k > 65536 (its estimate names the limit);
 *   - agmm_reference_rs_int8 and its magnitudes on hand-worked values (3
 *     ranks, one with k 0 and NULL inputs), rows past M refused, and
 *     agmm_int8_bound's formula. */
#include <math.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
#include "gemm/gemm.h"

/* The checks every engine makes, and OpenBLAS's refusal: run always. */
static void test_refusals(const agmm_gemm_engine_t *e)
{
    static const int64_t rows[] = {4};
    agmm_gemm_shape_t sh = {8, 8, 8, 8, 8, rows, 1, 0};
    agmm_gemm_attr_t at;
    agmm_gemm_prep_t *p = NULL;
    uint64_t w, s;
    /* int8 products (oneDNN) read int8; without them (OpenBLAS) FP32,
     * which plans refuse for int8. */
    CHECK(e->input_dtype(AGMM_DTYPE_INT8) ==
              (e->kind == AGMM_GEMM_ENGINE_OPENBLAS ? AGMM_DTYPE_FP32
                                                    : AGMM_DTYPE_INT8),
          "%s: input_dtype(int8)", e->name);
    agmm_gemm_attr_init(&at, AGMM_DTYPE_INT8, AGMM_DTYPE_INT8);
    CHECK(e->prepare(&sh, &at, NULL, &p) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "a_scale"),
          "%s: int8 without scales: %s", e->name, agmm_last_error());
    at.a_scale = at.w_scale = 1;
    at.c_dtype = AGMM_DTYPE_INT8;
    CHECK(e->prepare(&sh, &at, NULL, &p) == AGMM_ERR_INVALID_ARG,
          "%s: int8 C: %s", e->name, agmm_last_error());
    agmm_gemm_attr_init(&at, AGMM_DTYPE_FP32, AGMM_DTYPE_INT8);
    at.a_scale = at.w_scale = 1;
    CHECK(e->prepare(&sh, &at, NULL, &p) == AGMM_ERR_INVALID_ARG,
          "%s: fp32 A on an int8 W: %s", e->name, agmm_last_error());
    agmm_gemm_attr_init(&at, AGMM_DTYPE_INT8, AGMM_DTYPE_INT8);
    at.a_scale = at.w_scale = 1;
    sh.ld_a_scale = -1;
    CHECK(e->prepare(&sh, &at, NULL, &p) == AGMM_ERR_INVALID_ARG,
          "%s: negative ld_a_scale", e->name);
    sh.ld_a_scale = 0;
    if (e->kind == AGMM_GEMM_ENGINE_OPENBLAS) {
        agmm_status_t st = e->prepare(&sh, &at, NULL, &p);
        CHECK(st == AGMM_ERR_UNSUPPORTED &&
                  strstr(agmm_last_error(), "openblas: int8") &&
                  strstr(agmm_last_error(), "oneDNN"),
              "openblas must refuse int8 by name: %d %s", st,
              agmm_last_error());
        CHECK(e->estimate(&sh, &at, 0, &w, &s) == AGMM_ERR_UNSUPPORTED,
              "openblas estimate of int8");
        return;
    }
    sh.k = sh.lda = 65537;
    CHECK(e->estimate(&sh, &at, 0, &w, &s) == AGMM_ERR_UNSUPPORTED &&
              strstr(agmm_last_error(), "65536"),
          "k > 65536: %s", agmm_last_error());
}

/* The rs oracle on hand values (3 ranks, one with k 0 and NULL inputs),
 * its magnitudes, and the bound's formula. Always run. */
static void test_rs_oracle(void)
{
    /* rank 0: A [2 x 2], W [2 x 2]; rank 2: A [2 x 1], W [1 x 2] */
    static const int8_t a0[] = {1, 2, -3, 4}, w0[] = {5, -6, 7, 8};
    static const int8_t a2[] = {10, -1}, w2[] = {3, 1};
    static const float as0[] = {0.5f, 2.0f}, ws0[] = {1.0f, 0.25f};
    static const float as2[] = {0.125f, 4.0f}, ws2[] = {2.0f, 1.0f};
    const int8_t *a[] = {a0, NULL, a2}, *w[] = {w0, NULL, w2};
    const float *as[] = {as0, NULL, as2}, *ws[] = {ws0, NULL, ws2};
    const int64_t kl[] = {2, 0, 1};
    /* row 1 (row0 1, rows 1): rank 0: (-3*5 + 4*7, -3*-6 + 4*8) = (13, 50)
     * * ws0 (1, .25) * 2 = (26, 25); rank 2: -1 * (3, 1) * ws2 (2, 1) * 4
     * = (-24, -4); sum (2, 21); magnitudes (50, 29) */
    float c[2], mag[2];
    CHECK(
        agmm_reference_rs_int8(3, a, as, w, ws, kl, 2, 2, 1, 1, c) == AGMM_OK &&
            c[0] == 2.0f && c[1] == 21.0f,
        "rs oracle: %g %g (%s)", (double)c[0], (double)c[1], agmm_last_error());
    CHECK(agmm_reference_rs_int8_mag(3, a, as, w, ws, kl, 2, 2, 1, 1, mag) ==
                  AGMM_OK &&
              mag[0] == 50.0f && mag[1] == 29.0f,
          "rs magnitudes: %g %g", (double)mag[0], (double)mag[1]);
    CHECK(agmm_reference_rs_int8(3, a, as, w, ws, kl, 2, 2, 1, 2, c) ==
              AGMM_ERR_INVALID_ARG,
          "rows past M");
    double u = ldexp(1.0, -24);
    CHECK(agmm_int8_bound(2, -8.0) == 5 * u * (1 + ldexp(1.0, -20)) * 8.0 &&
              agmm_int8_bound(1, 0.0) == 0.0,
          "bound formula");
}

int main(void)
{
    agmm_blas_init();
    test_refusals(agmm_gemm_engine_get(AGMM_GEMM_ENGINE_OPENBLAS));
    test_rs_oracle();
    const agmm_gemm_engine_t *e = agmm_gemm_engine_get(AGMM_GEMM_ENGINE_ONEDNN);
    if (e)
        test_refusals(e);
    else
        printf("onednn: not built in, its refusals skipped\n");
    CHECK_DONE("test_gemm_int8_refuse");
}
