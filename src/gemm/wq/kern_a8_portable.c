/* The A8 kernels' portable loop (wq_internal.h): W4A8 / W8A8 in groups
 * on any CPU, the same bits as the VNNI kernel (kern_avx512vnni.c), which
 * it mirrors step for step:
 *   acc    = the group's sum of u x a_q, exact in int32 (u the stored
 *            value as the unsigned operand: an int4 nibble 0..15, int8
 *            asymmetric 0..255, int8 symmetric q + 128);
 *   t      = float(acc) - zero x qsum, one rounding (fmaf; zero 128 for
 *            int8 symmetric, the panel's zero for int4 and int8
 *            asymmetric; qsum the group's sum of a_q);
 *   tot   += scale x t, one rounding (fmaf);
 *   out    = tot x sa (the row's scale).
 * float(acc) is exact while |acc| < 2^24 (G <= 128, wq.h), and both
 * kernels convert with the same rounding where it is not. A's int8 rows
 * are gemm.c's quantize_rows': an int4 quad's rows 1 and 2 swapped in
 * the scratch (the VNNI kernel's byte order), int8's in order. Slow (one
 * product at a time): it is the fallback where the CPU lacks VNNI. */
#include <math.h>
#include <string.h>

#include "gemm/wq/wq_internal.h"

/* The unsigned operand u of row i of quad qd (from the group's quads q),
 * column j. */
static int32_t u8_of(const struct agmm_wq *w, const uint8_t *q, int64_t qd,
                     int i, int j)
{
    if (w->bits == 8) {
        uint8_t b = q[qd * (int64_t)w->quad_bytes + 16 * i + j];
        return w->symmetric ? (int32_t)(uint8_t)(b ^ 0x80u) : (int32_t)b;
    }
    const uint8_t *oct = q + (qd / 2) * 64;
    int sh = agmm_wq_nib_shift((int)(qd % 2) * 4 + i);
    return (oct[4 * j + sh / 8] >> (sh % 8)) & 0xf;
}

void agmm_wq_panel_portable_a8(const struct agmm_wq *w, const uint8_t *panel,
                               int rows, const int8_t *a, int64_t lda,
                               const float *qsum, const float *sa, float *out)
{
    static const int swap12[4] = {0, 2, 1, 3};
    const int sgn = w->bits == 8 && w->symmetric;
    float tot[AGMM_WQ_RB_VNNI][AGMM_WQ_NP] = {{0}};
    const uint8_t *p = panel;
    for (int64_t g = 0; g < w->ng; g++) {
        float s[AGMM_WQ_NP], z[AGMM_WQ_NP];
        memcpy(s, p, sizeof s);
        memcpy(z, p + sizeof s, sizeof z);
        if (sgn)
            for (int j = 0; j < AGMM_WQ_NP; j++)
                z[j] = 128.0f;
        p += sizeof s + sizeof z;
        int64_t quads = agmm_wq_quads(w, g);
        for (int r = 0; r < rows; r++) {
            const int8_t *ar = a + r * lda + g * w->gq * 4;
            int32_t acc[AGMM_WQ_NP] = {0};
            for (int64_t qd = 0; qd < quads; qd++)
                for (int i = 0; i < 4; i++) {
                    int at = w->bits == 4 ? swap12[i] : i;
                    int32_t av = ar[qd * 4 + at];
                    for (int j = 0; j < AGMM_WQ_NP; j++)
                        acc[j] += u8_of(w, p, qd, i, j) * av;
                }
            for (int j = 0; j < AGMM_WQ_NP; j++) {
                float t = (float)acc[j];
                if (w->has_zero || sgn) t = fmaf(-z[j], qsum[r * w->ng + g], t);
                tot[r][j] = fmaf(s[j], t, tot[r][j]);
            }
        }
        p += (size_t)quads * w->quad_bytes;
    }
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < AGMM_WQ_NP; j++)
            out[r * AGMM_WQ_NP + j] = tot[r][j] * sa[r];
}
