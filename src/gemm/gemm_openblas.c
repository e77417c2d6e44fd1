/* The OpenBLAS/CBLAS engine (engine.h), over the CBLAS binding (blas.c,
 * gemm.h).
 *
 * Its prepared weight is the fp32 copy of its column range (converted once
 * per set_weight); a run converts nothing of A: the schedules hand it
 * fp32 rows (converted per tile into the plan's g32, see ops/ag_gemm/rows.c),
 * so a_dtype other than fp32 is refused (int8 by name: CBLAS has no int8
 * GEMM). sgemm packs the weight again on every
 * call, so few large calls win (cheap_tile_calls = 0: the fused schedule
 * coalesces).
 *
 * Attributes (engine.h): sgemm computes the plain product; every
 * attribute is the pass of epilogue.c over it, run by
 * agmm_gemm_epilogue_run (epilogue_run.c, as for the wq engines). With fp32 C
 * and no accumulate that pass runs in place on C; with accumulate or a
 * bf16/fp16 C the product goes to the worker's scratch (CHUNK rows at a time)
 * and the pass adds / converts it into C, so C_old is added once to the
 * finished sum (sgemm's beta = 1 would add it panel by panel, inside the
 * k sum). */
#include <stdio.h>
#include <string.h>

#include "agmm_ext.h" /* agmm_blas_name, agmm_blas_kernel (blas.c) */
#include "common/log.h"
#include "common/util.h"
#include "gemm/blas_advice.h"
#include "gemm/convert.h"
#include "gemm/engine.h"
#include "gemm/epilogue.h"
#include "gemm/gemm.h"

/* Rows per sgemm call when the product goes through the scratch: its
 * size is CHUNK (or the most rows prepared, when fewer) x ncols fp32. */
enum { CHUNK = 256 };

struct agmm_gemm_prep {
    agmm_gemm_shape_t shape; /* rows/nrows not kept */
    agmm_gemm_attr_t attr;
    const agmm_gemm_prep_t *base; /* the share given to prepare, or NULL */
    float *w;                     /* [k, ncols] fp32, row stride ncols */
    float *bias, *w_scale;        /* [ncols] when the attr has them */
    int64_t chunk;                /* rows per call through the scratch */
    size_t scratch; /* chunk x ncols fp32 when the scratch is used */
    uint64_t owned; /* weight bytes owned (0 with a base) */
    char impl[64];
};

static const char *ob_version(void)
{
    const char *name = agmm_blas_name(); /* "OpenBLAS 0.3.21" */
    const char *sp = strchr(name, ' ');
    return sp ? sp + 1 : name;
}

static agmm_dtype_t ob_input_dtype(agmm_dtype_t dt)
{
    (void)dt; /* every dtype through fp32: no int8 GEMM (the plan then
                 refuses int8, which has no exact fp32 path) */
    return AGMM_DTYPE_FP32;
}

static const char *ob_why_not_native(agmm_dtype_t dt)
{
    return dt == AGMM_DTYPE_FP32   ? NULL
           : dt == AGMM_DTYPE_INT8 ? "OpenBLAS has no int8 GEMM (int8 runs "
                                     "on the oneDNN engine)"
                                   : "OpenBLAS multiplies fp32 only";
}

/* The checks and sizes prepare and estimate share. */
static agmm_status_t ob_sizes(const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a,
                              const agmm_gemm_prep_t *share, int shared,
                              int64_t *chunk, uint64_t *wbytes,
                              uint64_t *sbytes)
{
    /* Defined on every path, the error returns included. */
    *chunk = 0;
    *wbytes = 0;
    *sbytes = 0;
    AGMM_CHECK(agmm_gemm_check("openblas", s, a, share ? &share->shape : NULL,
                               share ? &share->attr : NULL));
    if (a->a_dtype == AGMM_DTYPE_INT8)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: openblas: int8 has no OpenBLAS GEMM (needs "
                          "the oneDNN engine)");
    if (a->a_dtype != AGMM_DTYPE_FP32)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: openblas: a_dtype %s: sgemm reads fp32 A "
                          "only (input_dtype)",
                          agmm_dtype_name(a->a_dtype));
    int64_t mmax = 0;
    for (int i = 0; i < s->nrows; i++)
        mmax = AGMM_MAX(mmax, s->rows[i]);
    *chunk = mmax > 0 ? AGMM_MIN(mmax, (int64_t)CHUNK) : CHUNK;
    uint64_t vec = (uint64_t)s->ncols * sizeof(float);
    *wbytes = shared ? 0
                     : (uint64_t)s->k * vec + (a->bias ? vec : 0) +
                           (a->w_scale ? vec : 0);
    *sbytes = agmm_gemm_epilogue_via_scratch(a) ? (uint64_t)*chunk * vec : 0;
    return AGMM_OK;
}

static agmm_status_t ob_estimate(const agmm_gemm_shape_t *s,
                                 const agmm_gemm_attr_t *a, int share,
                                 uint64_t *wbytes, uint64_t *sbytes)
{
    int64_t chunk;
    return ob_sizes(s, a, NULL, share, &chunk, wbytes, sbytes);
}

static void ob_destroy(agmm_gemm_prep_t *p)
{
    if (!p) return;
    if (!p->base) {
        agmm_free(p->w);
        agmm_free(p->bias);
        agmm_free(p->w_scale);
    }
    agmm_free(p);
}

static agmm_status_t ob_prepare(const agmm_gemm_shape_t *s,
                                const agmm_gemm_attr_t *a,
                                const agmm_gemm_prep_t *share,
                                agmm_gemm_prep_t **out)
{
    int64_t chunk;
    uint64_t wbytes, sbytes;
    AGMM_CHECK(ob_sizes(s, a, share, share != NULL, &chunk, &wbytes, &sbytes));
    agmm_blas_advise_once(); /* an old kernel on a newer CPU, said once */
    agmm_gemm_prep_t *p = agmm_alloc(sizeof *p);
    if (!p) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    p->shape = *s;
    p->shape.rows = NULL;
    p->shape.nrows = 0;
    p->attr = *a;
    p->chunk = chunk;
    p->scratch = (size_t)sbytes;
    p->owned = wbytes;
    snprintf(p->impl, sizeof p->impl, "sgemm:%s", agmm_blas_kernel());
    if (share) {
        p->base = share->base ? share->base : share;
        p->w = p->base->w;
        p->bias = p->base->bias;
        p->w_scale = p->base->w_scale;
        *out = p;
        return AGMM_OK;
    }
    size_t vec = (size_t)s->ncols * sizeof(float);
    p->w = agmm_alloc((size_t)s->k * vec);
    if (a->bias) p->bias = agmm_alloc(vec);
    if (a->w_scale) p->w_scale = agmm_alloc(vec);
    if (!p->w || (a->bias && !p->bias) || (a->w_scale && !p->w_scale)) {
        ob_destroy(p);
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "gemm: out of memory for the fp32 weight");
    }
    *out = p;
    return AGMM_OK;
}

static agmm_status_t ob_load(agmm_gemm_prep_t *p, const agmm_gemm_operand_t *o)
{
    if (p->base)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm: openblas: load on a prep sharing another's "
                          "weight (load that one)");
    const agmm_gemm_attr_t *a = &p->attr;
    if (!o || !o->w || (a->bias && !o->bias) || (a->w_scale && !o->w_scale))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: openblas: load: the weight%s is NULL",
                          a->bias || a->w_scale ? ", bias or w_scale" : "");
    const agmm_gemm_shape_t *s = &p->shape;
    size_t es = agmm_dtype_size(a->w_dtype), vec = (size_t)s->ncols * 4;
    const unsigned char *row = o->w;
    for (int64_t r = 0; r < s->k; r++, row += (size_t)s->ldw * es)
        agmm_convert_to_f32(a->w_dtype, row, p->w + (size_t)(r * s->ncols),
                            (size_t)s->ncols);
    if (a->bias) memcpy(p->bias, o->bias, vec);
    if (a->w_scale) memcpy(p->w_scale, o->w_scale, vec);
    return AGMM_OK;
}

static agmm_status_t ob_load_bias(agmm_gemm_prep_t *p, const float *bias)
{
    if (p->base)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm: openblas: load_bias on a prep sharing "
                          "another's weight (load that one)");
    if (!p->attr.bias || !bias)
        return agmm_error(AGMM_ERR_INVALID_ARG, "gemm: openblas: load_bias: %s",
                          bias ? "the prep has no bias attribute"
                               : "bias is NULL");
    memcpy(p->bias, bias, (size_t)p->shape.ncols * sizeof(float));
    return AGMM_OK;
}

/* The plain product of rows r0.. of a call (agmm_gemm_product_fn). */
typedef struct {
    const agmm_gemm_prep_t *p;
    const float *a;
} ob_call_t;

static agmm_status_t ob_product(void *ctx, int64_t r0, int64_t m, float *out,
                                int64_t ldo)
{
    const ob_call_t *x = ctx;
    const agmm_gemm_shape_t *s = &x->p->shape;
    agmm_gemm_f32(m, s->ncols, s->k, x->a + r0 * s->lda, s->lda, x->p->w,
                  s->ncols, out, ldo);
    return AGMM_OK;
}

static agmm_status_t ob_run(agmm_gemm_prep_t *p, int64_t m, const void *a,
                            const float *a_scale, void *c, void *scratch)
{
    const agmm_gemm_shape_t *s = &p->shape;
    const agmm_gemm_attr_t *at = &p->attr;
    if (m <= 0) return AGMM_OK;
    if (at->a_scale && !a_scale)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: openblas: run: a_scale is NULL");
    ob_call_t x = {p, a};
    return agmm_gemm_epilogue_run(at, m, s->ncols, ob_product, &x, scratch,
                                  p->chunk, at->a_scale ? a_scale : NULL,
                                  s->ld_a_scale, p->w_scale, p->bias, c,
                                  s->ldc);
}

static size_t ob_scratch_bytes(const agmm_gemm_prep_t *p)
{
    return p->scratch;
}

static uint64_t ob_weight_bytes(const agmm_gemm_prep_t *p)
{
    return p->owned;
}

static const char *ob_impl(const agmm_gemm_prep_t *p)
{
    return p->impl;
}

const agmm_gemm_engine_t agmm_gemm_engine_openblas = {
    .name = "openblas",
    .kind = AGMM_GEMM_ENGINE_OPENBLAS,
    .cheap_tile_calls = 0,
    .version = ob_version,
    .input_dtype = ob_input_dtype,
    .why_not_native = ob_why_not_native,
    .estimate = ob_estimate,
    .prepare = ob_prepare,
    .load = ob_load,
    .load_bias = ob_load_bias,
    .run = ob_run,
    .scratch_bytes = ob_scratch_bytes,
    .weight_bytes = ob_weight_bytes,
    .impl = ob_impl,
    .destroy = ob_destroy,
};
