/* Packed weight columns to a plain fp32 / bf16 panel (unpack.h). One
 * panel of 16 columns at a time, group by group, front to back as the
 * kernels stream it; the 16-column inner loops are what the compiler
 * vectorizes. */
#include "gemm/wq/unpack.h"

#include <string.h>

#include "gemm/convert.h"
#include "gemm/wq/wq_internal.h"

/* One group's rows r0..r1-1 of one panel's first `nc` (<= 16) columns. */
static void unpack_group(const struct agmm_wq *w, const uint8_t *blk,
                         int64_t r0, int64_t r1, int nc, void *dst,
                         int64_t ldd, int bf16)
{
    float s[AGMM_WQ_NP], z[AGMM_WQ_NP], v[AGMM_WQ_NP];
    memcpy(s, blk, sizeof s);
    memcpy(z, blk + sizeof s, sizeof z);
    const uint8_t *q = blk + sizeof s + sizeof z;
    int signed8 = w->bits == 8 && w->symmetric;
    for (int64_t row = r0; row < r1; row++) {
        int64_t i = row - r0; /* the row in the group: quad i/4, lane i%4 */
        const uint8_t *quad = q + (size_t)(i / 4) * w->quad_bytes;
        int lane = (int)(i % 4);
        if (w->bits == 8) {
            const uint8_t *b = quad + 16 * lane;
            if (signed8)
                for (int j = 0; j < AGMM_WQ_NP; j++)
                    v[j] = ((float)(int8_t)b[j] - z[j]) * s[j];
            else
                for (int j = 0; j < AGMM_WQ_NP; j++)
                    v[j] = ((float)b[j] - z[j]) * s[j];
        } else {
            const uint8_t *b = quad + 16 * (lane / 2);
            int shift = 4 * (lane % 2);
            for (int j = 0; j < AGMM_WQ_NP; j++)
                v[j] = ((float)((b[j] >> shift) & 15) - z[j]) * s[j];
        }
        if (bf16) {
            uint16_t *d = (uint16_t *)dst + row * ldd;
            for (int j = 0; j < nc; j++)
                d[j] = agmm_f32_to_bf16_inline(v[j]);
        } else {
            memcpy((float *)dst + row * ldd, v, (size_t)nc * sizeof(float));
        }
    }
}

void agmm_wq_unpack(const agmm_wq_t *w, int64_t j0, int64_t nc, void *dst,
                    int64_t ldd, int bf16)
{
    size_t es = bf16 ? sizeof(uint16_t) : sizeof(float);
    size_t head = 2 * AGMM_WQ_NP * sizeof(float);
    for (int64_t c = 0; c < nc; c += AGMM_WQ_NP) {
        const uint8_t *blk =
            w->data + (size_t)((j0 + c) / AGMM_WQ_NP) * w->panel_bytes;
        int pc = (int)(nc - c < AGMM_WQ_NP ? nc - c : AGMM_WQ_NP);
        void *pd = (unsigned char *)dst + (size_t)c * es;
        for (int64_t g = 0; g < w->ng; g++) {
            int64_t r0 = g * w->group;
            int64_t r1 = r0 + w->group < w->k ? r0 + w->group : w->k;
            unpack_group(w, blk, r0, r1, pc, pd, ldd, bf16);
            blk += head + (size_t)agmm_wq_quads(w, g) * w->quad_bytes;
        }
    }
}
