/* The reference GEMM against hand-computed and naively recomputed results. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check/gemm_ref.h"

#define SENTINEL (-12345.0f)

static void test_small(void)
{
    const float a[2 * 3] = {1, 2, 3, 4, 5, 6};
    const float b[3 * 2] = {7, 8, 9, 10, 11, 12};
    const float want[2 * 2] = {58, 64, 139, 154};
    float c[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    agmm_gemm_ref(2, 2, 3, a, 3, b, 2, c, 2);
    for (int i = 0; i < 4; i++)
        CHECK(c[i] == want[i], "2x3*3x2 c[%d] = %g, want %g", i, (double)c[i],
              (double)want[i]);

    /* the transposed product B^T A^T = (AB)^T, B^T is 2x3, A^T is 3x2 */
    const float bt[2 * 3] = {7, 9, 11, 8, 10, 12};
    const float at[3 * 2] = {1, 4, 2, 5, 3, 6};
    agmm_gemm_ref(2, 2, 3, bt, 3, at, 2, c, 2);
    CHECK(c[0] == 58 && c[1] == 139 && c[2] == 64 && c[3] == 154,
          "transposed: %g %g %g %g", (double)c[0], (double)c[1], (double)c[2],
          (double)c[3]);

    /* 3x2 * 2x3 */
    float c9[9];
    agmm_gemm_ref(3, 3, 2, b, 2, a, 3, c9, 3);
    const float want9[9] = {39, 54, 69, 49, 68, 87, 59, 82, 105};
    for (int i = 0; i < 9; i++)
        CHECK(c9[i] == want9[i], "3x2*2x3 c[%d] = %g, want %g", i,
              (double)c9[i], (double)want9[i]);

    /* C is overwritten, not accumulated into */
    float c2[4] = {100, 100, 100, 100};
    agmm_gemm_ref(2, 2, 3, a, 3, b, 2, c2, 2);
    CHECK(c2[0] == 58 && c2[3] == 154, "overwrite: %g %g", (double)c2[0],
          (double)c2[3]);
}

static void test_identity(void)
{
    enum { N = 6 };
    float id[N * N], x[N * N], c[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            id[i * N + j] = i == j ? 1.0f : 0.0f;
            x[i * N + j] = (float)(i * 10 + j) - 17.25f;
        }
    agmm_gemm_ref(N, N, N, id, N, x, N, c, N);
    CHECK(memcmp(c, x, sizeof c) == 0, "I * X != X");
    agmm_gemm_ref(N, N, N, x, N, id, N, c, N);
    CHECK(memcmp(c, x, sizeof c) == 0, "X * I != X");
}

static void test_leading_dims(void)
{
    /* A is 2x3 inside a 4x5 buffer, B 3x2 inside 3x7, C 2x2 inside 3x4. */
    enum { LDA = 5, LDB = 7, LDC = 4 };
    float abuf[4 * LDA], bbuf[3 * LDB], cbuf[3 * LDC];
    for (int i = 0; i < 4 * LDA; i++)
        abuf[i] = 1000.0f;
    for (int i = 0; i < 3 * LDB; i++)
        bbuf[i] = 1000.0f;
    for (int i = 0; i < 3 * LDC; i++)
        cbuf[i] = SENTINEL;
    const float a[2][3] = {{1, 2, 3}, {4, 5, 6}};
    const float b[3][2] = {{7, 8}, {9, 10}, {11, 12}};
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < 3; p++)
            abuf[i * LDA + p] = a[i][p];
    for (int p = 0; p < 3; p++)
        for (int j = 0; j < 2; j++)
            bbuf[p * LDB + j] = b[p][j];
    agmm_gemm_ref(2, 2, 3, abuf, LDA, bbuf, LDB, cbuf, LDC);
    CHECK(cbuf[0] == 58 && cbuf[1] == 64 && cbuf[LDC] == 139 &&
              cbuf[LDC + 1] == 154,
          "submatrix: %g %g %g %g", (double)cbuf[0], (double)cbuf[1],
          (double)cbuf[LDC], (double)cbuf[LDC + 1]);
    int untouched = 1;
    for (int i = 0; i < 3 * LDC; i++) {
        int in_c = i / LDC < 2 && i % LDC < 2;
        if (!in_c) untouched &= cbuf[i] == SENTINEL;
    }
    CHECK(untouched, "wrote outside the 2x2 block of C");

    /* an offset submatrix: rows 1..2, cols 2..3 of a 4x5 A */
    float sub[2 * 2];
    for (int i = 0; i < 4 * LDA; i++)
        abuf[i] = (float)i;
    const float eye2[2 * 2] = {1, 0, 0, 1};
    agmm_gemm_ref(2, 2, 2, abuf + 1 * LDA + 2, LDA, eye2, 2, sub, 2);
    CHECK(sub[0] == 7 && sub[1] == 8 && sub[2] == 12 && sub[3] == 13,
          "offset submatrix: %g %g %g %g", (double)sub[0], (double)sub[1],
          (double)sub[2], (double)sub[3]);
}

static void test_degenerate(void)
{
    float a = 3.0f, b = -4.5f, c = SENTINEL;
    agmm_gemm_ref(1, 1, 1, &a, 1, &b, 1, &c, 1);
    CHECK(c == -13.5f, "1x1x1: %g", (double)c);

    /* m = 1: row vector times matrix */
    const float row[3] = {1, 2, 3};
    const float bm[3 * 2] = {7, 8, 9, 10, 11, 12};
    float r[2];
    agmm_gemm_ref(1, 2, 3, row, 3, bm, 2, r, 2);
    CHECK(r[0] == 58 && r[1] == 64, "m=1: %g %g", (double)r[0], (double)r[1]);

    /* n = 1: matrix times column vector */
    const float am[2 * 3] = {1, 2, 3, 4, 5, 6};
    const float col[3] = {1, -1, 2};
    float cc[2];
    agmm_gemm_ref(2, 1, 3, am, 3, col, 1, cc, 1);
    CHECK(cc[0] == 5 && cc[1] == 11, "n=1: %g %g", (double)cc[0],
          (double)cc[1]);

    /* k = 1: outer product */
    const float u[3] = {1, 2, 3}, v[2] = {4, -5};
    float o[6];
    agmm_gemm_ref(3, 2, 1, u, 1, v, 2, o, 2);
    CHECK(o[0] == 4 && o[1] == -5 && o[2] == 8 && o[3] == -10 && o[4] == 12 &&
              o[5] == -15,
          "k=1: %g %g %g %g %g %g", (double)o[0], (double)o[1], (double)o[2],
          (double)o[3], (double)o[4], (double)o[5]);

    /* accumulation is in double: 1e8 + 1 - 1e8 is 1, not 0 as in float */
    const float ak[3] = {1e8f, 1.0f, -1e8f}, bk[3] = {1, 1, 1};
    float ck = SENTINEL;
    agmm_gemm_ref(1, 1, 3, ak, 3, bk, 1, &ck, 1);
    CHECK(ck == 1.0f, "double accumulation: %g, want 1", (double)ck);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / (float)0x1000000 * 2.0f -
           1.0f;
}

static void test_random(void)
{
    enum { M = 17, N = 13, K = 29, LDA = K + 3, LDB = N + 2, LDC = N + 5 };
    float *a = malloc(M * LDA * sizeof *a);
    float *b = malloc(K * LDB * sizeof *b);
    float *c = malloc(M * LDC * sizeof *c);
    if (!a || !b || !c) {
        CHECK(0, "malloc failed");
        free(a), free(b), free(c);
        return;
    }
    for (int i = 0; i < M * LDA; i++)
        a[i] = rnd();
    for (int i = 0; i < K * LDB; i++)
        b[i] = rnd();
    for (int i = 0; i < M * LDC; i++)
        c[i] = SENTINEL;
    agmm_gemm_ref(M, N, K, a, LDA, b, LDB, c, LDC);
    int worst_i = 0, worst_j = 0;
    double worst = 0.0;
    int outside_ok = 1;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < LDC; j++) {
            if (j >= N) {
                outside_ok &= c[i * LDC + j] == SENTINEL;
                continue;
            }
            float f = 0.0f, mag = 0.0f;
            for (int p = 0; p < K; p++) {
                f += a[i * LDA + p] * b[p * LDB + j];
                mag += fabsf(a[i * LDA + p] * b[p * LDB + j]);
            }
            /* float summation error is at most ~K * eps * sum|a*b| */
            double err = fabs((double)c[i * LDC + j] - (double)f) / (double)mag;
            if (err > worst) {
                worst = err;
                worst_i = i;
                worst_j = j;
            }
        }
    }
    CHECK(worst <= K * 1.2e-7,
          "17x13x29: worst relative error %g at (%d,%d): %g vs %g", worst,
          worst_i, worst_j, (double)c[worst_i * LDC + worst_j], (double)0);
    CHECK(outside_ok, "17x13x29: wrote into the ldc padding");
    free(a), free(b), free(c);
}

int main(void)
{
    test_small();
    test_identity();
    test_leading_dims();
    test_degenerate();
    test_random();
    CHECK_DONE("test_gemm_ref");
}
