/* The prefill path's dequantization (src/gemm/wq/unpack.h) against the
 * plain layout's values (check/wq_ref.h's agmm_wq_ref_value, read from the
 * plain layout independently of the packing): int4 and int8, symmetric
 * and asymmetric, a partial last group (k 100, G 32), G = k odd (k 77),
 * G 128, n not a multiple of 16 (37, 5); blocks of two panels and a
 * partial last one, a destination stride wider than the block. fp32
 * panels hold (float)value exactly (one rounding of the exact product),
 * bf16 panels its bf16 rounding (nearest even) bit for bit; the padding
 * columns of the destination are untouched. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check/wq_ref.h"
#include "gemm/convert.h"
#include "gemm/wq/unpack.h"
#include "gemm/wq/wq.h"

static uint32_t g_seed = 12345u;
static uint32_t next(void)
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return g_seed >> 8;
}

static void one(int64_t k, int64_t n, int bits, int sym, int64_t group)
{
    int64_t G = group ? group : k, ng = (k + G - 1) / G;
    int64_t qrows = bits == 4 ? (k + 1) / 2 : k;
    uint8_t *q = malloc((size_t)(qrows * n));
    float *s = malloc(sizeof(float) * (size_t)(ng * n));
    uint8_t *z = sym ? NULL : malloc((size_t)(ng * n));
    for (int64_t i = 0; i < qrows * n; i++)
        q[i] = (uint8_t)next();
    if (bits == 4 && k % 2) /* the padding nibble of an odd k: 0 */
        for (int64_t j = 0; j < n; j++)
            q[(qrows - 1) * n + j] &= 15;
    for (int64_t i = 0; i < ng * n; i++) {
        s[i] = (float)((int)(next() % 2001) - 1000) * 1.37e-4f + 1e-7f;
        if (z) z[i] = (uint8_t)(next() % (bits == 4 ? 16 : 256));
    }
    agmm_wq_desc_t d = {.k = k,
                        .n = n,
                        .bits = bits,
                        .group = group,
                        .symmetric = sym,
                        .q = q,
                        .scales = s,
                        .zeros = z};
    agmm_wq_t *w = NULL;
    CHECK(agmm_wq_pack(&d, &w) == AGMM_OK, "pack");
    for (int bf16 = 0; bf16 < 2 && w; bf16++)
        for (int64_t j0 = 0; j0 < n; j0 += 32) {
            int64_t nc = n - j0 < 32 ? n - j0 : 32, ldd = nc + 3;
            size_t es = bf16 ? 2 : 4;
            unsigned char *dst = malloc((size_t)(k * ldd) * es);
            memset(dst, 0xa5, (size_t)(k * ldd) * es);
            agmm_wq_unpack(w, j0, nc, dst, ldd, bf16);
            int64_t bad = 0;
            for (int64_t kk = 0; kk < k; kk++)
                for (int64_t j = 0; j < ldd; j++) {
                    unsigned char *at = dst + (size_t)(kk * ldd + j) * es;
                    if (j >= nc) { /* padding: untouched */
                        bad += at[0] != 0xa5 || at[1] != 0xa5;
                        continue;
                    }
                    float want = (float)agmm_wq_ref_value(&d, kk, j0 + j);
                    if (bf16) {
                        uint16_t got;
                        memcpy(&got, at, 2);
                        bad += got != agmm_f32_to_bf16(want);
                    } else {
                        float got;
                        memcpy(&got, at, 4);
                        bad += memcmp(&got, &want, 4) != 0;
                    }
                }
            CHECK(bad == 0,
                  "k %lld n %lld int%d %s G %lld %s cols %lld+%lld: %lld "
                  "wrong",
                  (long long)k, (long long)n, bits, sym ? "sym" : "asym",
                  (long long)group, bf16 ? "bf16" : "fp32", (long long)j0,
                  (long long)nc, (long long)bad);
            free(dst);
        }
    agmm_wq_free(w);
    free(q);
    free(s);
    free(z);
}

int main(void)
{
    static const struct {
        int64_t k, n, group;
    } shapes[] = {{100, 37, 32}, {77, 5, 0}, {256, 48, 128}, {64, 16, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int bits = 4; bits <= 8; bits += 4)
            for (int sym = 0; sym < 2; sym++)
                one(shapes[i].k, shapes[i].n, bits, sym, shapes[i].group);
    CHECK_DONE("test_wq_unpack");
}
