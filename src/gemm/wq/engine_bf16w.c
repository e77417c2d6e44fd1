/* The wq engine for a weight that is not quantized (bf16): agmm's own
 * bf16-weight decode kernel (gemm/wq/bf16w.h) behind the engine table.
 * agmm_gemm_engine_of_desc picks it for a plan of dtype bf16 whose
 * desc.gemm_engine is WQ and weight_dtype SAME (its entry in
 * gemm/engine_list.c: kind WQ, plain weights, bf16 only); it
 * reports itself as the "wq" engine, implementation "wq:bf16 <kernel>".
 *
 * Its prepared weight is the packed bf16 weight (bf16w.h) of its column
 * range, and nothing else: a plan on it holds one layout of the weight
 * (not oneDNN's too). prepare allocates it, load packs the range's
 * columns (w_dtype BF16, row stride ldw) into it. A prep made with
 * `share` runs on its base's packed weight and bias.
 *
 * A call: agmm_bf16w_gemm (A bf16 on the native path: VDPBF16PS where the
 * CPU has it; A fp32 on the f32 path: the FMA kernel, W widened exactly),
 * then the attributes the kernel lacks in the pass of epilogue.c, as the
 * quantized wq engine does (agmm_gemm_epilogue_run, epilogue_run.c): into C
 * with fp32 C and no accumulate, else into the worker's scratch (CHUNK rows at
 * a time) and converted / added into C. int8 and the a_scale / w_scale
 * attributes are refused.
 *
 * cheap_tile_calls = 0: a call streams its range's whole weight whatever
 * its rows (32 rows a pass), so the fused schedule coalesces tiles. */
#include <stdio.h>
#include <string.h>

#include "agmm.h"
#include "common/log.h"
#include "common/util.h"
#include "gemm/engine.h"
#include "gemm/epilogue.h"
#include "gemm/wq/bf16w.h"

enum { CHUNK = 256 };

struct agmm_gemm_prep {
    agmm_gemm_shape_t shape; /* rows/nrows not kept */
    agmm_gemm_attr_t attr;
    const agmm_gemm_prep_t *base;
    agmm_bf16w_t *w;
    float *bias;
    int64_t chunk;
    size_t scratch;
    uint64_t owned;
    agmm_bf16w_kernel_t kind;
    char impl[64];
};

static const char *bw_version(void)
{
    return agmm_version();
}

static agmm_dtype_t bw_input_dtype(agmm_dtype_t dt)
{
    return dt == AGMM_DTYPE_BF16 ? dt : AGMM_DTYPE_FP32;
}

static const char *bw_why_not_native(agmm_dtype_t dt)
{
    return dt == AGMM_DTYPE_BF16 ? NULL
                                 : "the wq engine's unquantized kernel "
                                   "multiplies bf16 weights only";
}

static agmm_status_t bw_sizes(const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a,
                              const agmm_gemm_prep_t *share, int shared,
                              int64_t *chunk, uint64_t *wbytes,
                              uint64_t *sbytes)
{
    *chunk = 0;
    *wbytes = *sbytes = 0;
    AGMM_CHECK(agmm_gemm_check("wq", s, a, share ? &share->shape : NULL,
                               share ? &share->attr : NULL));
    if (a->wq_bits != 0 || a->w_dtype != AGMM_DTYPE_BF16 ||
        (a->a_dtype != AGMM_DTYPE_BF16 && a->a_dtype != AGMM_DTYPE_FP32) ||
        a->a_scale || a->w_scale)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: wq: a weight of dtype %s with A %s (allowed "
                          "unquantized: a bf16 weight, A bf16 or fp32, no "
                          "a_scale, w_scale)",
                          agmm_dtype_name(a->w_dtype),
                          agmm_dtype_name(a->a_dtype));
    int64_t mmax = 0;
    for (int i = 0; i < s->nrows; i++)
        mmax = AGMM_MAX(mmax, s->rows[i]);
    *chunk = mmax > 0 ? AGMM_MIN(mmax, (int64_t)CHUNK) : CHUNK;
    uint64_t vec = (uint64_t)s->ncols * sizeof(float);
    *wbytes = shared ? 0
                     : (uint64_t)agmm_bf16w_packed_bytes(s->k, s->ncols) +
                           (a->bias ? vec : 0);
    *sbytes = agmm_gemm_epilogue_via_scratch(a) ? (uint64_t)*chunk * vec : 0;
    return AGMM_OK;
}

static agmm_status_t bw_estimate(const agmm_gemm_shape_t *s,
                                 const agmm_gemm_attr_t *a, int share,
                                 uint64_t *wbytes, uint64_t *sbytes)
{
    int64_t chunk;
    return bw_sizes(s, a, NULL, share, &chunk, wbytes, sbytes);
}

static void bw_destroy(agmm_gemm_prep_t *p)
{
    if (!p) return;
    if (!p->base) {
        agmm_bf16w_free(p->w);
        agmm_free(p->bias);
    }
    agmm_free(p);
}

static agmm_status_t bw_prepare(const agmm_gemm_shape_t *s,
                                const agmm_gemm_attr_t *a,
                                const agmm_gemm_prep_t *share,
                                agmm_gemm_prep_t **out)
{
    int64_t chunk;
    uint64_t wbytes, sbytes;
    AGMM_CHECK(bw_sizes(s, a, share, share != NULL, &chunk, &wbytes, &sbytes));
    agmm_gemm_prep_t *p = agmm_alloc(sizeof *p);
    if (!p) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    p->shape = *s;
    p->shape.rows = NULL;
    p->shape.nrows = 0;
    p->attr = *a;
    p->chunk = chunk;
    p->scratch = (size_t)sbytes;
    p->owned = wbytes;
    p->kind = agmm_bf16w_kernel(a->a_dtype);
    snprintf(p->impl, sizeof p->impl, "wq:bf16 %s",
             agmm_bf16w_kernel_name(p->kind));
    if (share) {
        p->base = share->base ? share->base : share;
        p->w = p->base->w;
        p->bias = p->base->bias;
        *out = p;
        return AGMM_OK;
    }
    agmm_status_t st = agmm_bf16w_alloc(s->k, s->ncols, &p->w);
    if (st == AGMM_OK && a->bias &&
        !(p->bias = agmm_alloc((size_t)s->ncols * sizeof(float))))
        st = agmm_error(AGMM_ERR_NO_MEMORY, "gemm: wq: out of memory");
    if (st != AGMM_OK) {
        bw_destroy(p);
        return st;
    }
    *out = p;
    return AGMM_OK;
}

static agmm_status_t bw_load(agmm_gemm_prep_t *p, const agmm_gemm_operand_t *o)
{
    if (p->base)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm: wq: load on a prep sharing another's weight "
                          "(load that one)");
    if (!o || !o->w || (p->attr.bias && !o->bias))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: wq: load: the weight or bias is NULL");
    AGMM_CHECK(agmm_bf16w_pack(p->w, o->w, p->shape.ldw));
    if (p->attr.bias)
        memcpy(p->bias, o->bias, (size_t)p->shape.ncols * sizeof(float));
    return AGMM_OK;
}

static agmm_status_t bw_load_bias(agmm_gemm_prep_t *p, const float *bias)
{
    if (p->base)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm: wq: load_bias on a prep sharing another's "
                          "weight (load that one)");
    if (!p->attr.bias || !bias)
        return agmm_error(AGMM_ERR_INVALID_ARG, "gemm: wq: load_bias: %s",
                          bias ? "the prep has no bias attribute"
                               : "bias is NULL");
    memcpy(p->bias, bias, (size_t)p->shape.ncols * sizeof(float));
    return AGMM_OK;
}

/* The kernel's product of rows r0.. of a call (agmm_gemm_product_fn). */
typedef struct {
    const agmm_gemm_prep_t *p;
    const void *a;
} bw_call_t;

static agmm_status_t bw_product(void *ctx, int64_t r0, int64_t m, float *out,
                                int64_t ldo)
{
    const bw_call_t *x = ctx;
    const agmm_gemm_prep_t *p = x->p;
    size_t aes = agmm_dtype_size(p->attr.a_dtype);
    return agmm_bf16w_gemm_with(p->kind, p->w, m,
                                (const unsigned char *)x->a +
                                    (size_t)(r0 * p->shape.lda) * aes,
                                p->attr.a_dtype, p->shape.lda, out, ldo);
}

static agmm_status_t bw_run(agmm_gemm_prep_t *p, int64_t m, const void *a,
                            const float *a_scale, void *c, void *scratch)
{
    (void)a_scale; /* refused at prepare */
    bw_call_t x = {p, a};
    return agmm_gemm_epilogue_run(&p->attr, m, p->shape.ncols, bw_product, &x,
                                  scratch, p->chunk, NULL, 0, NULL, p->bias, c,
                                  p->shape.ldc);
}

static size_t bw_scratch_bytes(const agmm_gemm_prep_t *p)
{
    return p->scratch;
}

static uint64_t bw_weight_bytes(const agmm_gemm_prep_t *p)
{
    return p->owned;
}

static const char *bw_impl(const agmm_gemm_prep_t *p)
{
    return p->impl;
}

const agmm_gemm_engine_t agmm_gemm_engine_wq_bf16 = {
    .name = "wq",
    .kind = AGMM_GEMM_ENGINE_WQ,
    .cheap_tile_calls = 0,
    .version = bw_version,
    .input_dtype = bw_input_dtype,
    .why_not_native = bw_why_not_native,
    .estimate = bw_estimate,
    .prepare = bw_prepare,
    .load = bw_load,
    .load_bias = bw_load_bias,
    .run = bw_run,
    .scratch_bytes = bw_scratch_bytes,
    .weight_bytes = bw_weight_bytes,
    .impl = bw_impl,
    .destroy = bw_destroy,
};
