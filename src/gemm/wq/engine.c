/* The weight-quantized engine (engine.h): agmm's own int4 / int8 weight
 * kernels (gemm/wq/wq.h, W4A16 / W8A16) behind the engine table, the
 * engine of every plan with a quantized weight (agmm_plan_desc_t
 * .weight_dtype: agmm_gemm_engine_of_desc picks its entry of
 * gemm/engine_list.c, the one with quantized weights).
 *
 * Its prepared weight is the packed weight (wq_internal.h) of its own
 * column range: prepare allocates it (agmm_wq_alloc: the geometry is
 * known, the values are not), load packs the range's columns of the
 * plain layout into it (agmm_wq_repack, reading q, scales and zeros at
 * the range's first column with the weight's row stride: no copy, nothing
 * allocated). A range packs apart from the others, as the plan prepares
 * one weight per column group (a packed panel is 16 columns, so ranges
 * would not share panels anyway). A prep made with `share` (gemm-rs's
 * accumulating call) runs on its base's packed weight and bias.
 *
 * The kernel variant: one per prep, for all its calls (variant(): with
 * AVX512_BF16 and bf16 A, the FMA or the dot kernel by select.c's
 * measurement over the plan's row counts; with attr.wq_a8 an A8 variant,
 * agmm_wq_kernel_a8, and no prefill path: every row is quantized as
 * the plan says), named in impl.
 *
 * A call: agmm_wq_gemm over the range's columns (fp32 / bf16 / fp16 A
 * read natively: input_dtype is the user's dtype; int8 A is refused, the
 * W8A8 path being another), then, for the attributes the kernels lack,
 * the pass of epilogue.c, as the OpenBLAS engine does
 * (agmm_gemm_epilogue_run, epilogue_run.c): with fp32 C and no
 * accumulate in place on C; with accumulate or a bf16 / fp16 C the
 * product goes to the worker's scratch (CHUNK rows at a time) and the
 * pass adds (C_old once, to the finished product) and converts into C.
 * A's and W's int8 scales (a_scale, w_scale) are refused. The kernel's
 * own scratch (A's rows widened to fp32 with their group sums, for up to
 * 32 rows: agmm_wq_scratch_bytes) is the first part of the worker's
 * scratch, the pass's product the second: a call allocates nothing.
 *
 * cheap_tile_calls = 0: each call streams the range's whole packed
 * weight whatever its rows (up to 32 rows in one pass), so per-tile calls
 * would read the weight once per tile; the fused schedule coalesces the
 * arrived tiles into few calls instead. */
#include <stdio.h>
#include <string.h>

#include "agmm.h"
#include "common/log.h"
#include "common/util.h"
#include "gemm/engine.h"
#include "gemm/epilogue.h"
#include "gemm/wq/libgemm.h"
#include "gemm/wq/prefill_rule.h"
#include "gemm/wq/unpack.h"
#include "gemm/wq/wq.h"

/* Rows per kernel call when the product goes through the scratch. */
enum { CHUNK = 256 };

struct agmm_gemm_prep {
    agmm_gemm_shape_t shape; /* rows/nrows not kept */
    agmm_gemm_attr_t attr;
    const agmm_gemm_prep_t *base; /* the share given to prepare, or NULL */
    agmm_wq_t *w;                 /* the packed range (the base's with one) */
    float *bias;                  /* [ncols] when attr.bias */
    int64_t chunk;                /* rows per call through the scratch */
    int64_t krows;                /* rows the kernel's scratch holds */
    size_t kscratch;              /* its bytes (agmm_wq_scratch_bytes) */
    size_t scratch;               /* kscratch + chunk x ncols fp32 (pass) */
    uint64_t owned;               /* weight bytes owned (0 with a base) */
    agmm_wq_kernel_t kind;        /* the variant of every kernel call */
    agmm_wq_pf_t pf;              /* the prefill path's sizes */
    agmm_wq_lib_t *lib;           /* its library GEMM, or NULL: none */
    char impl[192];
};

static const char *wq_version(void)
{
    return agmm_version();
}

static agmm_dtype_t wq_input_dtype(agmm_dtype_t dt)
{
    /* The kernels read fp32, bf16 and fp16 rows; int8 A is W8A8's path
     * (the plan refuses it with a quantized weight). */
    return dt == AGMM_DTYPE_INT8 ? AGMM_DTYPE_FP32 : dt;
}

static const char *wq_why_not_native(agmm_dtype_t dt)
{
    return dt == AGMM_DTYPE_INT8 ? "the wq engine multiplies quantized "
                                   "weights by fp32, bf16 or fp16 A (int8 A "
                                   "is the W8A8 path of the int8 dtype)"
                                 : NULL;
}

/* The checks and sizes prepare and estimate share. */
static agmm_status_t wq_sizes(const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a,
                              const agmm_gemm_prep_t *share, int shared,
                              int64_t *chunk, int64_t *krows, uint64_t *kbytes,
                              uint64_t *wbytes, uint64_t *sbytes,
                              agmm_wq_pf_t *pf, agmm_wq_lib_t **lib)
{
    *chunk = *krows = 0;
    *kbytes = 0;
    *wbytes = 0;
    *sbytes = 0;
    AGMM_CHECK(agmm_gemm_check("wq", s, a, share ? &share->shape : NULL,
                               share ? &share->attr : NULL));
    if (a->wq_bits != 4 && a->wq_bits != 8)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: wq: wq_bits %d: the wq engine runs int4 or "
                          "int8 weights only",
                          a->wq_bits);
    if (a->a_dtype == AGMM_DTYPE_INT8 || a->a_scale || a->w_scale)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: wq: int8 A and A / W int8 scales are the "
                          "W8A8 path (allowed: fp32, bf16, fp16 A, no "
                          "a_scale, w_scale)");
    size_t packed =
        agmm_wq_packed_bytes(s->k, s->ncols, a->wq_bits, a->wq_group);
    if (packed == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: wq: bad quantized shape (k %lld, ncols %lld, "
                          "group %lld: allowed 32, 64, 128, 0)",
                          (long long)s->k, (long long)s->ncols,
                          (long long)a->wq_group);
    int64_t mmax = 0;
    for (int i = 0; i < s->nrows; i++)
        mmax = AGMM_MAX(mmax, s->rows[i]);
    *chunk = mmax > 0 ? AGMM_MIN(mmax, (int64_t)CHUNK) : CHUNK;
    *krows = AGMM_MIN(*chunk, (int64_t)32); /* the kernel's row chunk */
    *kbytes = agmm_wq_scratch_bytes(s->k, a->wq_group, *krows);
    uint64_t vec = (uint64_t)s->ncols * sizeof(float);
    *wbytes = shared ? 0 : (uint64_t)packed + (a->bias ? vec : 0);
    *sbytes = *kbytes +
              (agmm_gemm_epilogue_via_scratch(a) ? (uint64_t)*chunk * vec : 0);
    if (!a->wq_a8) /* A8: the kernels at every row count */
        AGMM_CHECK(agmm_wq_pf_make(s, a, pf, lib));
    else {
        memset(pf, 0, sizeof *pf);
        if (lib) *lib = NULL;
    }
    if (pf->bytes > *sbytes) *sbytes = pf->bytes;
    return AGMM_OK;
}

static agmm_status_t wq_estimate(const agmm_gemm_shape_t *s,
                                 const agmm_gemm_attr_t *a, int share,
                                 uint64_t *wbytes, uint64_t *sbytes)
{
    int64_t chunk, krows;
    uint64_t kbytes;
    agmm_wq_pf_t pf;
    return wq_sizes(s, a, NULL, share, &chunk, &krows, &kbytes, wbytes, sbytes,
                    &pf, NULL);
}

static void wq_destroy(agmm_gemm_prep_t *p)
{
    if (!p) return;
    agmm_wq_lib_destroy(p->lib);
    if (!p->base) {
        agmm_wq_free(p->w);
        agmm_free(p->bias);
    }
    agmm_free(p);
}

/* The kernel variant of the prep's calls: one for all the row counts the
 * plan runs (agmm_wq_kernel_for_rows: with the dot kernel, the first
 * query of a process measures, so plan creation pays for it), so a row's
 * bits do not depend on the call it is in (fused tiles coalesced in any
 * order, baseline, rows per round). Unknown row counts: 1 and 32. */
static agmm_wq_kernel_t variant(const agmm_gemm_shape_t *s,
                                const agmm_gemm_attr_t *a)
{
    static const int64_t dflt[2] = {1, 32};
    if (a->wq_a8) return agmm_wq_kernel_a8();
    if (s->nrows > 0 && s->rows)
        return agmm_wq_kernel_for_rows(a->wq_bits, a->a_dtype, s->rows,
                                       s->nrows);
    return agmm_wq_kernel_for_rows(a->wq_bits, a->a_dtype, dflt, 2);
}

static agmm_status_t wq_prepare(const agmm_gemm_shape_t *s,
                                const agmm_gemm_attr_t *a,
                                const agmm_gemm_prep_t *share,
                                agmm_gemm_prep_t **out)
{
    int64_t chunk, krows;
    uint64_t kbytes, wbytes, sbytes;
    agmm_wq_pf_t pf;
    agmm_wq_lib_t *lib = NULL;
    AGMM_CHECK(wq_sizes(s, a, share, share != NULL, &chunk, &krows, &kbytes,
                        &wbytes, &sbytes, &pf, &lib));
    agmm_gemm_prep_t *p = agmm_alloc(sizeof *p);
    if (!p) {
        agmm_wq_lib_destroy(lib);
        return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    }
    p->pf = pf;
    p->lib = lib;
    p->shape = *s;
    p->shape.rows = NULL;
    p->shape.nrows = 0;
    p->attr = *a;
    p->chunk = chunk;
    p->krows = krows;
    p->kscratch = (size_t)kbytes;
    p->scratch = (size_t)sbytes;
    p->owned = wbytes;
    char g[24];
    if (a->wq_group > 0)
        snprintf(g, sizeof g, "g%lld", (long long)a->wq_group);
    else
        snprintf(g, sizeof g, "gk");
    if (share) {
        p->base = share->base ? share->base : share;
        p->kind = p->base->kind; /* the base's bits, added exactly */
    } else
        p->kind = variant(s, a);
    int len = snprintf(p->impl, sizeof p->impl, "wq:%s int%d %s %s",
                       agmm_wq_kernel_kind_name(p->kind), a->wq_bits, g,
                       a->wq_asym ? "asym" : "sym");
    if (lib && len > 0 && (size_t)len < sizeof p->impl)
        snprintf(p->impl + len, sizeof p->impl - (size_t)len,
                 "; prefill >= %lld rows: %s on %s panels of %lld cols",
                 (long long)pf.rows, agmm_wq_lib_name(lib),
                 pf.bf16 ? "bf16" : "fp32", (long long)pf.nb);
    if (share) {
        p->w = p->base->w;
        p->bias = p->base->bias;
        *out = p;
        return AGMM_OK;
    }
    agmm_status_t st = agmm_wq_alloc(s->k, s->ncols, a->wq_bits, a->wq_group,
                                     !a->wq_asym, &p->w);
    if (st == AGMM_OK && a->bias &&
        !(p->bias = agmm_alloc((size_t)s->ncols * sizeof(float))))
        st = agmm_error(AGMM_ERR_NO_MEMORY, "gemm: wq: out of memory");
    if (st != AGMM_OK) {
        wq_destroy(p);
        return st;
    }
    *out = p;
    return AGMM_OK;
}

static agmm_status_t wq_load(agmm_gemm_prep_t *p, const agmm_gemm_operand_t *o)
{
    if (p->base)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm: wq: load on a prep sharing another's weight "
                          "(load that one)");
    const agmm_gemm_attr_t *a = &p->attr;
    if (!o || !o->w || !o->wq_scales || (a->wq_asym && !o->wq_zeros) ||
        (a->bias && !o->bias))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: wq: load: the values, scales%s are NULL",
                          a->wq_asym && a->bias ? ", zero points or bias"
                          : a->wq_asym          ? " or zero points"
                          : a->bias             ? " or bias"
                                                : "");
    const agmm_gemm_shape_t *s = &p->shape;
    agmm_wq_desc_t d = {.k = s->k,
                        .n = s->ncols,
                        .bits = a->wq_bits,
                        .group = a->wq_group,
                        .symmetric = !a->wq_asym,
                        .q = o->w,
                        .scales = o->wq_scales,
                        .scales_bf16 = 0,
                        .zeros = a->wq_asym ? o->wq_zeros : NULL,
                        .ld = s->ldw};
    AGMM_CHECK(agmm_wq_repack(p->w, &d));
    if (a->bias) memcpy(p->bias, o->bias, (size_t)s->ncols * sizeof(float));
    return AGMM_OK;
}

static agmm_status_t wq_load_bias(agmm_gemm_prep_t *p, const float *bias)
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

/* agmm's own kernels' product of rows r0.. of a call
 * (agmm_gemm_product_fn); their scratch first in the worker's. */
typedef struct {
    const agmm_gemm_prep_t *p;
    const void *a;
    void *scratch;
} wq_call_t;

static agmm_status_t wq_product(void *ctx, int64_t r0, int64_t m, float *out,
                                int64_t ldo)
{
    const wq_call_t *x = ctx;
    const agmm_gemm_prep_t *p = x->p;
    const agmm_gemm_shape_t *s = &p->shape;
    size_t aes = agmm_dtype_size(p->attr.a_dtype);
    return agmm_wq_gemm_scratch_with(
        p->kind, p->w, m,
        (const unsigned char *)x->a + (size_t)(r0 * s->lda) * aes,
        p->attr.a_dtype, s->lda, out, AGMM_DTYPE_FP32, ldo, 0, s->ncols,
        x->scratch, p->krows);
}

/* agmm's own kernels for m rows, the product through the scratch after
 * the kernels' own (agmm_gemm_epilogue_run). */
static agmm_status_t run_kernels(agmm_gemm_prep_t *p, int64_t m, const void *a,
                                 void *c, void *scratch)
{
    wq_call_t x = {p, a, scratch};
    float *prod = (float *)(void *)((unsigned char *)scratch + p->kscratch);
    return agmm_gemm_epilogue_run(&p->attr, m, p->shape.ncols, wq_product, &x,
                                  prod, p->chunk, NULL, 0, NULL, p->bias, c,
                                  p->shape.ldc);
}

/* The prefill path (prefill_rule.h): each block of nb columns dequantized
 * once into the scratch, then the library GEMM on mb rows at a time into
 * the product buffer and the pass into C; rows the library has no
 * primitive for (a remainder of mb not given to prepare) go to the
 * kernels. */
static agmm_status_t run_prefill(agmm_gemm_prep_t *p, int64_t m, const void *a,
                                 void *c, void *scratch)
{
    const agmm_gemm_shape_t *s = &p->shape;
    const agmm_gemm_attr_t *at = &p->attr;
    const agmm_wq_pf_t *pf = &p->pf;
    size_t aes = agmm_dtype_size(at->a_dtype);
    size_t ces = agmm_dtype_size(at->c_dtype);
    int64_t mlib = m / pf->mb * pf->mb, rem = m - mlib;
    int64_t nlast = s->ncols % pf->nb ? s->ncols % pf->nb : pf->nb;
    if (rem > 0 && agmm_wq_lib_has(p->lib, rem, pf->nb) &&
        agmm_wq_lib_has(p->lib, rem, nlast))
        mlib = m;
    unsigned char *base = scratch;
    void *wbuf = base;
    float *prod = (float *)(void *)(base + pf->prod_off);
    void *lscratch = base + pf->lib_off;
    for (int64_t j0 = 0; j0 < s->ncols; j0 += pf->nb) {
        int64_t nc = AGMM_MIN(pf->nb, s->ncols - j0);
        agmm_wq_unpack(p->w, j0, nc, wbuf, nc, pf->bf16);
        for (int64_t r0 = 0; r0 < mlib; r0 += pf->mb) {
            int64_t mc = AGMM_MIN(pf->mb, mlib - r0);
            AGMM_CHECK(agmm_wq_lib_run(p->lib, mc, nc,
                                       (const unsigned char *)a +
                                           (size_t)(r0 * s->lda) * aes,
                                       wbuf, prod, lscratch));
            agmm_gemm_epilogue(
                at, mc, nc, prod, nc, NULL, 0, NULL,
                p->bias ? p->bias + j0 : NULL,
                (unsigned char *)c + (size_t)(r0 * s->ldc + j0) * ces, s->ldc);
        }
    }
    if (mlib == m) return AGMM_OK;
    return run_kernels(
        p, m - mlib, (const unsigned char *)a + (size_t)(mlib * s->lda) * aes,
        (unsigned char *)c + (size_t)(mlib * s->ldc) * ces, scratch);
}

static agmm_status_t wq_run(agmm_gemm_prep_t *p, int64_t m, const void *a,
                            const float *a_scale, void *c, void *scratch)
{
    (void)a_scale; /* refused at prepare */
    if (m <= 0) return AGMM_OK;
    if (p->lib && m >= p->pf.rows) return run_prefill(p, m, a, c, scratch);
    return run_kernels(p, m, a, c, scratch);
}

static size_t wq_scratch_bytes(const agmm_gemm_prep_t *p)
{
    return p->scratch;
}

static uint64_t wq_weight_bytes(const agmm_gemm_prep_t *p)
{
    return p->owned;
}

static const char *wq_impl(const agmm_gemm_prep_t *p)
{
    return p->impl;
}

const agmm_gemm_engine_t agmm_gemm_engine_wq = {
    .name = "wq",
    .kind = AGMM_GEMM_ENGINE_WQ,
    .cheap_tile_calls = 0,
    .version = wq_version,
    .input_dtype = wq_input_dtype,
    .why_not_native = wq_why_not_native,
    .estimate = wq_estimate,
    .prepare = wq_prepare,
    .load = wq_load,
    .load_bias = wq_load_bias,
    .run = wq_run,
    .scratch_bytes = wq_scratch_bytes,
    .weight_bytes = wq_weight_bytes,
    .impl = wq_impl,
    .destroy = wq_destroy,
};
