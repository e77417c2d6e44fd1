/* The portable kernel (wq_internal.h): one panel, plain C, any CPU. The
 * reference for the vector ones' arithmetic (same per-group sums, in
 * row order). */
#include <string.h>

#include "gemm/wq/wq_internal.h"

/* The stored u of row i of quad qd (from the group's quads q), column
 * j, as a float. */
static float u_of(const struct agmm_wq *w, const uint8_t *q, int64_t qd, int i,
                  int j)
{
    const uint8_t *quad = q + qd * (int64_t)w->quad_bytes;
    if (w->bits == 8)
        return w->symmetric ? (float)(int8_t)quad[16 * i + j]
                            : (float)quad[16 * i + j];
    const uint8_t *oct = q + (qd / 2) * 64;
    int sh = agmm_wq_nib_shift((int)(qd % 2) * 4 + i);
    return (float)((oct[4 * j + sh / 8] >> (sh % 8)) & 0xf);
}

void agmm_wq_panel_portable(const struct agmm_wq *w, const uint8_t *panel,
                            int rows, const float *a, int64_t lda,
                            const float *asum, float *out)
{
    memset(out, 0, (size_t)rows * AGMM_WQ_NP * sizeof(float));
    const uint8_t *p = panel;
    for (int64_t g = 0; g < w->ng; g++) {
        float s[AGMM_WQ_NP], z[AGMM_WQ_NP];
        memcpy(s, p, sizeof s);
        memcpy(z, p + sizeof s, sizeof z);
        p += sizeof s + sizeof z;
        int64_t quads = agmm_wq_quads(w, g);
        for (int r = 0; r < rows; r++) {
            const float *ar = a + r * lda + g * w->gq * 4;
            float acc[AGMM_WQ_NP] = {0};
            for (int64_t qd = 0; qd < quads; qd++)
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < AGMM_WQ_NP; j++)
                        acc[j] += ar[qd * 4 + i] * u_of(w, p, qd, i, j);
            for (int j = 0; j < AGMM_WQ_NP; j++) {
                float t = acc[j];
                if (w->has_zero) t -= z[j] * asum[r * w->ng + g];
                out[r * AGMM_WQ_NP + j] += s[j] * t;
            }
        }
        p += (size_t)quads * w->quad_bytes;
    }
}
