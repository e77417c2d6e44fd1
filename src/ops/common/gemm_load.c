/* Loading a plan's weights into its engine (set_weight, set_bias): each
 * segment's columns of weight i (gemm_plan.c prepared the segments), a
 * gated segment's gate and up columns paired through a copy, a quantized
 * weight's plain layout (agmm_plan_set_weight_quantized). The plan
 * owner's thread. */
#include <string.h>

#include "common/log.h"
#include "ops/common/gemm_plan.h"
#include "ops/common/plan.h"

/* gemm_plan.c's: the segments with an engine call (none on an empty inner
 * part), a gated segment, and whether the calls carry the epilogue. */
static int nsegs(const agmm_plan_t *p)
{
    return p->k_gemm > 0 ? p->seg_off[p->ngroups] : 0;
}

static int seg_glu(const agmm_plan_t *p, const agmm_gemm_seg_t *sg)
{
    return p->glu >> sg->w & 1u;
}

static int epi_in_gemm(const agmm_plan_t *p)
{
    return p->epilogue && p->op->epilogue_in_gemm;
}

/* A gated segment's weight: W's gate columns [c0, c1) and up columns
 * [h + c0, h + c1) side by side in one [k, 2 (c1 - c0)] matrix (and their
 * scales likewise), as seg_shape prepared it, loaded through a copy. */
static agmm_status_t load_glu(agmm_plan_t *p, const agmm_gemm_seg_t *sg,
                              const void *w, const float *w_scale)
{
    size_t es = agmm_dtype_size(p->desc.dtype);
    int64_t nc = sg->c1 - sg->c0, h = agmm_plan_out_cols(p, sg->w);
    int64_t ldw = p->n_w[sg->w], k = p->k_gemm;
    unsigned char *pk = agmm_alloc((size_t)k * (size_t)(2 * nc) * es + 1);
    float *sc = w_scale ? agmm_alloc(sizeof *sc * (size_t)(2 * nc)) : NULL;
    if (!pk || (w_scale && !sc)) {
        agmm_free(pk);
        agmm_free(sc);
        return agmm_error(AGMM_ERR_NO_MEMORY, "set_weight: out of memory");
    }
    for (int64_t r = 0; r < k; r++) {
        const unsigned char *row =
            (const unsigned char *)w + (size_t)r * (size_t)ldw * es;
        unsigned char *dst = pk + (size_t)r * (size_t)(2 * nc) * es;
        memcpy(dst, row + (size_t)sg->c0 * es, (size_t)nc * es);
        memcpy(dst + (size_t)nc * es, row + (size_t)(h + sg->c0) * es,
               (size_t)nc * es);
    }
    if (sc) {
        memcpy(sc, w_scale + sg->c0, sizeof *sc * (size_t)nc);
        memcpy(sc + nc, w_scale + h + sg->c0, sizeof *sc * (size_t)nc);
    }
    agmm_gemm_operand_t op = {.w = pk, .bias = NULL, .w_scale = sc};
    agmm_status_t st = p->engine->load(sg->prep, &op);
    agmm_free(pk);
    agmm_free(sc);
    return st;
}

/* Rows [0, rows) of a [rows, ld] matrix of es-byte elements: columns
 * [c0, c0 + nc) and [h + c0, h + c0 + nc) side by side into dst [rows,
 * 2 nc]. */
static void pair_cols(const void *src, size_t es, int64_t rows, int64_t ld,
                      int64_t c0, int64_t h, int64_t nc, void *dst)
{
    for (int64_t r = 0; r < rows; r++) {
        const unsigned char *row =
            (const unsigned char *)src + (size_t)(r * ld) * es;
        unsigned char *d = (unsigned char *)dst + (size_t)(r * 2 * nc) * es;
        memcpy(d, row + (size_t)c0 * es, (size_t)nc * es);
        memcpy(d + (size_t)nc * es, row + (size_t)(h + c0) * es,
               (size_t)nc * es);
    }
}

/* A gated segment of a quantized weight: its gate and up columns of q,
 * scales and zeros paired as load_glu pairs a plain weight's (each column
 * is independent in the plain layout), loaded through copies. */
static agmm_status_t load_wq_glu(agmm_plan_t *p, const agmm_gemm_seg_t *sg,
                                 const void *q, const float *scales,
                                 const uint8_t *zeros)
{
    int64_t nc = sg->c1 - sg->c0, h = agmm_plan_out_cols(p, sg->w);
    int64_t ld = p->n_w[sg->w], k = p->k_gemm;
    int64_t G = p->desc.group_size > 0 ? p->desc.group_size : k;
    int64_t ng = (k + G - 1) / G;
    int64_t qr = p->desc.weight_dtype == AGMM_WDTYPE_INT4 ? (k + 1) / 2 : k;
    uint8_t *pq = agmm_alloc((size_t)(qr * 2 * nc) + 1);
    float *ps = agmm_alloc(sizeof(float) * (size_t)(ng * 2 * nc) + 1);
    uint8_t *pz = zeros ? agmm_alloc((size_t)(ng * 2 * nc) + 1) : NULL;
    agmm_status_t st = AGMM_OK;
    if (!pq || !ps || (zeros && !pz)) {
        st = agmm_error(AGMM_ERR_NO_MEMORY,
                        "set_weight_quantized: out of memory");
    } else {
        pair_cols(q, 1, qr, ld, sg->c0, h, nc, pq);
        pair_cols(scales, sizeof(float), ng, ld, sg->c0, h, nc, ps);
        if (zeros) pair_cols(zeros, 1, ng, ld, sg->c0, h, nc, pz);
        agmm_gemm_operand_t op = {.w = pq, .wq_scales = ps, .wq_zeros = pz};
        st = p->engine->load(sg->prep, &op);
    }
    agmm_free(pq);
    agmm_free(ps);
    agmm_free(pz);
    return st;
}

/* A quantized weight i's plain layout into its segments: one byte per
 * column in each row of q (int4: each pair of rows), scales and zeros,
 * so a segment's columns start at c0 in all three, row stride n_w[i]
 * (seg_shape's ldw); a gated segment's through copies (load_wq_glu). */
static agmm_status_t load_wq(agmm_plan_t *p, int i, const void *q,
                             const float *scales, const uint8_t *zeros)
{
    for (int j = 0; j < nsegs(p); j++) {
        const agmm_gemm_seg_t *sg = &p->seg[j];
        if (sg->w != i) continue;
        if (seg_glu(p, sg)) {
            AGMM_CHECK(load_wq_glu(p, sg, q, scales, zeros));
            continue;
        }
        agmm_gemm_operand_t op = {.w = (const uint8_t *)q + sg->c0,
                                  .wq_scales = scales + sg->c0,
                                  .wq_zeros = zeros ? zeros + sg->c0 : NULL};
        if (epi_in_gemm(p) && !sg->pass && p->bias)
            op.bias = p->bias + agmm_plan_col_off(p, i) + sg->c0;
        AGMM_CHECK(p->engine->load(sg->prep, &op));
    }
    return AGMM_OK;
}

agmm_status_t agmm_plan_engine_load_i(agmm_plan_t *p, int i, const void *w,
                                      const float *w_scale,
                                      const uint8_t *zeros)
{
    if (p->desc.weight_dtype != AGMM_WDTYPE_SAME)
        return load_wq(p, i, w, w_scale, zeros);
    size_t es = agmm_dtype_size(p->desc.dtype);
    for (int j = 0; j < nsegs(p); j++)
        if (p->seg[j].w == i && seg_glu(p, &p->seg[j])) {
            AGMM_CHECK(load_glu(p, &p->seg[j], w, w_scale));
        } else if (p->seg[j].w == i) {
            const agmm_gemm_seg_t *sg = &p->seg[j];
            agmm_gemm_operand_t op = {
                .w = (const unsigned char *)w + (size_t)sg->c0 * es,
                .bias = NULL,
                .w_scale = w_scale ? w_scale + sg->c0 : NULL};
            /* The plan's bias as it is now (zero until set_bias). */
            if (epi_in_gemm(p) && !sg->pass && p->bias)
                op.bias = p->bias + agmm_plan_col_off(p, i) + sg->c0;
            AGMM_CHECK(p->engine->load(sg->prep, &op));
        }
    return AGMM_OK;
}

agmm_status_t agmm_plan_engine_load_bias(agmm_plan_t *p, int i)
{
    for (int j = 0; j < nsegs(p); j++) {
        const agmm_gemm_seg_t *sg = &p->seg[j];
        if (sg->w == i && epi_in_gemm(p) && !sg->pass && p->bias)
            AGMM_CHECK(p->engine->load_bias(
                sg->prep, p->bias + agmm_plan_col_off(p, i) + sg->c0));
    }
    return AGMM_OK;
}
