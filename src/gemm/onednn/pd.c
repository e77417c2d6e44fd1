/* The oneDNN engine's configuration and matmul primitive descriptors
 * (onednn_internal.h: pd.c), the weight's layout and source, and the GEMM
 * attributes (engine.h) mapped onto oneDNN's, in oneDNN 2.6
 * terms (3.x the same through compat.c; where 3.x differs, it
 * says so): accumulate  a sum post-op, scale 1 (oneDNN adds C_old to the
 * finished fp32 accumulator: checked bit for bit at k = 4096, fp32 and bf16, by
 * tests/unit/test_gemm_attr.c); bias        the matmul's bias (f32, 1 x ncols);
 *   act         an eltwise post-op after the sum (relu, gelu_tanh,
 *               gelu_erf, swish with alpha 1 for SiLU);
 *   c_dtype     the dst md's dtype (bf16 / f16 where oneDNN has it:
 *               an unimplemented descriptor is refused naming it);
 *   w_scale     runtime output scales, mask 1 << 1 (per column), passed
 *               at each run (3.x: weight scales given at execution). oneDNN
 *               2.6 applies them to accumulator + bias, i.e. w_scale *
 *               (acc + bias), not the attr's w_scale * acc + bias: w_scale
 *               with bias is refused (on 3.x too, one rule for both).
 *   bias, act and c_dtype are refused where only the reference kernel
 *               (ref:*) would run them (refuse_ref), like a missing one;
 *   a_scale     (per row) has no oneDNN 2.6 matmul attribute that keeps
 *               the fast kernels (a binary post-op falls back to ref:any),
 *               and 3.7.2's matmul has no per-row source scales: refused
 *               but with INT8.
 * INT8 maps none of them: its primitives are a plain s8 (or u8) x s8 ->
 * s32 into the worker's scratch, dense A (oneDNN 2.6 picks its brgemm
 * int8 kernels only for a dense A: with lda > k it is gemm:jit), and
 * s8.c's pass does every attribute.
 * Debian's oneDNN runs on OpenMP (libgomp), whose thread count is an ICV
 * of each thread: everything here that creates or runs is called at one
 * thread (agmm_dn_one_omp_thread, cpu.c), see prep.c. */
#include "gemm/onednn/onednn_internal.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"

static dnnl_data_type_t dn_dtype(agmm_dtype_t dt)
{
    return dt == AGMM_DTYPE_FP32   ? dnnl_f32
           : dt == AGMM_DTYPE_BF16 ? dnnl_bf16
           : dt == AGMM_DTYPE_INT8 ? dnnl_s8
                                   : dnnl_f16;
}

agmm_status_t agmm_dn_config(const agmm_gemm_shape_t *s,
                             const agmm_gemm_attr_t *a,
                             const agmm_gemm_shape_t *share_shape,
                             const agmm_gemm_attr_t *share_attr,
                             agmm_dn_cfg_t *cfg)
{
    AGMM_CHECK(agmm_gemm_check("onednn", s, a, share_shape, share_attr));
    int int8 = a->a_dtype == AGMM_DTYPE_INT8;
    if (int8 && s->k > AGMM_INT8_MAX_K)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: onednn: int8 with k %lld: over %d the "
                          "int32 sums could overflow",
                          (long long)s->k, AGMM_INT8_MAX_K);
    if (a->a_scale && !int8)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: onednn: a_scale (per-row scales of A) is "
                          "not supported: oneDNN's matmul has no such "
                          "attribute that keeps its fast kernels");
    if (a->w_scale && a->bias && !int8)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: onednn: w_scale with bias is not supported: "
                          "oneDNN 2.x scales acc + bias, not acc alone");
    if ((a->a_dtype == AGMM_DTYPE_FP16 && !agmm_dn_f16_native()) ||
        (a->a_dtype == AGMM_DTYPE_BF16 && !agmm_dn_bf16_native()))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: onednn: a_dtype %s: no native %s matmul "
                          "on this CPU (input_dtype says fp32)",
                          agmm_dtype_name(a->a_dtype),
                          agmm_dtype_name(a->a_dtype));
    if (int8 && agmm_dn_int8_mode() == AGMM_DN_S8_NONE)
        return agmm_error(AGMM_ERR_UNSUPPORTED, "gemm: onednn: int8: %s",
                          agmm_dn_int8_why());
    if (!agmm_dn_engine()) return AGMM_ERR_SYSTEM;
    memset(cfg, 0, sizeof *cfg);
    cfg->shape = *s;
    cfg->shape.rows = NULL;
    cfg->shape.nrows = 0;
    cfg->attr = *a;
    cfg->dt = dn_dtype(a->a_dtype);
    cfg->a_dt = int8 && a->s8_as_u8 ? dnnl_u8 : cfg->dt;
    cfg->c_dt = int8 ? dnnl_s32 : dn_dtype(a->c_dtype);
    cfg->lda = int8 ? s->k : s->lda;
    cfg->ldc = int8 ? s->ncols : s->ldc;
    /* attr.s8_split (engine.h) forces the halves where 8 bits are exact */
    cfg->s8_split =
        int8 && (agmm_dn_int8_mode() == AGMM_DN_S8_SPLIT || a->s8_split);
    return AGMM_OK;
}

/* The attribute set of cfg, for messages ("a_dtype fp32, c_dtype bf16,
 * accumulate, bias, act gelu-erf"). */
static void describe(const agmm_dn_cfg_t *cfg, char *buf, size_t size)
{
    const agmm_gemm_attr_t *a = &cfg->attr;
    if (a->a_dtype == AGMM_DTYPE_INT8) {
        snprintf(buf, size, "a_dtype int8 (%s x s8 -> s32)",
                 a->s8_as_u8 ? "u8" : "s8");
        return;
    }
    snprintf(buf, size, "a_dtype %s, c_dtype %s%s%s%s%s%s",
             agmm_dtype_name(a->a_dtype), agmm_dtype_name(a->c_dtype),
             a->accumulate ? ", accumulate" : "", a->bias ? ", bias" : "",
             a->w_scale ? ", w_scale" : "",
             a->act != AGMM_GEMM_ACT_NONE ? ", act " : "",
             a->act != AGMM_GEMM_ACT_NONE ? agmm_gemm_act_name(a->act) : "");
}

agmm_status_t agmm_dn_vec_md(const agmm_dn_cfg_t *cfg, int as_row,
                             agmm_dn_md_t *md)
{
    dnnl_dims_t row = {1, cfg->shape.ncols}, vec = {cfg->shape.ncols};
    DN(as_row ? agmm_dn_md_tag(md, 2, row, dnnl_f32, dnnl_ab)
              : agmm_dn_md_tag(md, 1, vec, dnnl_f32, dnnl_a),
       "bias/scale desc");
    return AGMM_OK;
}

/* The primitive attributes of cfg: user scratchpad, post-ops, scales. */
static dnnl_status_t make_attr(const agmm_dn_cfg_t *cfg,
                               dnnl_primitive_attr_t attr)
{
    static const dnnl_alg_kind_t algs[] = {
        [AGMM_GEMM_ACT_RELU] = dnnl_eltwise_relu,
        [AGMM_GEMM_ACT_GELU_TANH] = dnnl_eltwise_gelu_tanh,
        [AGMM_GEMM_ACT_GELU_ERF] = dnnl_eltwise_gelu_erf,
        [AGMM_GEMM_ACT_SILU] = dnnl_eltwise_swish,
    };
    const agmm_gemm_attr_t *a = &cfg->attr;
    dnnl_status_t st = dnnl_primitive_attr_set_scratchpad_mode(
        attr, dnnl_scratchpad_mode_user);
    if (a->a_dtype == AGMM_DTYPE_INT8) return st; /* the s32 pass does all */
    if (st == dnnl_success && a->w_scale) st = agmm_dn_attr_w_scale(attr);
    if (st != dnnl_success || (!a->accumulate && a->act == AGMM_GEMM_ACT_NONE))
        return st;
    dnnl_post_ops_t po;
    if ((st = dnnl_post_ops_create(&po)) != dnnl_success) return st;
    if (a->accumulate) st = agmm_dn_po_sum(po);
    if (st == dnnl_success && a->act != AGMM_GEMM_ACT_NONE)
        /* alpha: relu's negative slope 0; swish's beta-less x*sigmoid(x) */
        st = agmm_dn_po_eltwise(
            po, algs[a->act], a->act == AGMM_GEMM_ACT_SILU ? 1.0f : 0.0f, 0.0f);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    return st;
}

/* One descriptor: weights `wmd`, or format any when NULL. */
/* A bias, act or 16-bit C that only oneDNN's reference kernel (ref:*)
 * implements is refused (engine.h: impl): the caller does them in a pass
 * after a plain call instead, much faster. Plain calls and accumulate
 * (the sum post-op) are taken whatever the kernel. Destroys pd when
 * refusing. */
static agmm_status_t refuse_ref(const agmm_dn_cfg_t *cfg,
                                dnnl_primitive_desc_t *pd)
{
    const agmm_gemm_attr_t *a = &cfg->attr;
    int epi = a->a_dtype != AGMM_DTYPE_INT8 &&
              (a->bias || a->act != AGMM_GEMM_ACT_NONE ||
               a->c_dtype != AGMM_DTYPE_FP32);
    const char *impl = NULL;
    if (!epi ||
        dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) !=
            dnnl_success ||
        !impl || strncmp(impl, "ref", 3) != 0)
        return AGMM_OK;
    char what[160];
    describe(cfg, what, sizeof what);
    agmm_status_t st = agmm_error(AGMM_ERR_UNSUPPORTED,
                                  "gemm: onednn: only the reference kernel "
                                  "(%s) has %s (this oneDNN, this CPU)",
                                  impl, what); /* impl lives with pd */
    dnnl_primitive_desc_destroy(*pd);
    *pd = NULL;
    return st;
}

static agmm_status_t one_pd(const agmm_dn_cfg_t *cfg, int64_t m,
                            agmm_dn_cmd_t wmd, dnnl_primitive_desc_t *pd)
{
    const agmm_gemm_shape_t *s = &cfg->shape;
    dnnl_engine_t eng = agmm_dn_engine();
    if (!eng) return AGMM_ERR_SYSTEM;
    agmm_dn_md_t a_md = NULL, w_md = NULL, c_md = NULL, b_md = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_dims_t a_dims = {m, s->k}, a_str = {cfg->lda, 1};
    dnnl_dims_t w_dims = {s->k, s->ncols};
    dnnl_dims_t c_dims = {m, s->ncols}, c_str = {cfg->ldc, 1};
    int bias = cfg->attr.bias && cfg->attr.a_dtype != AGMM_DTYPE_INT8;
    const char *what = "A desc";
    dnnl_status_t st = agmm_dn_md_strides(&a_md, 2, a_dims, cfg->a_dt, a_str);
    if (st == dnnl_success) {
        what = "C desc";
        st = agmm_dn_md_strides(&c_md, 2, c_dims, cfg->c_dt, c_str);
    }
    if (st == dnnl_success && !wmd) {
        what = "W desc";
        st = agmm_dn_md_tag(&w_md, 2, w_dims, cfg->dt, dnnl_format_tag_any);
    }
    agmm_status_t ret = AGMM_OK;
    if (st == dnnl_success && bias) ret = agmm_dn_vec_md(cfg, 1, &b_md);
    if (st == dnnl_success && ret == AGMM_OK) {
        what = "attr";
        st = dnnl_primitive_attr_create(&attr);
    }
    if (st == dnnl_success && ret == AGMM_OK) {
        what = "matmul primitive descriptor";
        st = make_attr(cfg, attr);
        if (st == dnnl_success)
            st = agmm_dn_matmul_pd_create(pd, eng, a_md, wmd ? wmd : w_md,
                                          bias ? b_md : NULL, c_md, attr);
    }
    if (attr) dnnl_primitive_attr_destroy(attr);
    agmm_dn_md_destroy(a_md);
    agmm_dn_md_destroy(w_md);
    agmm_dn_md_destroy(c_md);
    agmm_dn_md_destroy(b_md);
    if (ret != AGMM_OK) return ret;
    if (st == dnnl_unimplemented && attr) {
        char desc[160];
        describe(cfg, desc, sizeof desc);
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: onednn: no matmul implementation for %s "
                          "(this oneDNN, this CPU)",
                          desc);
    }
    if (st != dnnl_success) return agmm_dn_fail(st, what);
    return refuse_ref(cfg, pd);
}

agmm_status_t agmm_dn_matmul_pd(const agmm_dn_cfg_t *cfg, int64_t m,
                                agmm_dn_cmd_t layout, dnnl_primitive_desc_t *pd)
{
    AGMM_CHECK(one_pd(cfg, m, NULL, pd));
    if (!layout || dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(
                                              *pd, dnnl_query_weights_md, 0),
                                          layout))
        return AGMM_OK;
    dnnl_primitive_desc_destroy(*pd);
    return one_pd(cfg, m, layout, pd);
}

/* ---------------------------------------------------- sizes and layout */

/* The weight layout: what oneDNN picks for the most rows. */
agmm_status_t agmm_dn_choose_layout(const agmm_dn_cfg_t *cfg, int64_t m,
                                    agmm_dn_md_t *w_md)
{
    dnnl_primitive_desc_t pd;
    AGMM_CHECK(agmm_dn_matmul_pd(cfg, m, NULL, &pd));
    dnnl_status_t st = agmm_dn_md_clone(
        w_md, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    dnnl_primitive_desc_destroy(pd);
    DN(st, "weight layout");
    return AGMM_OK;
}

int64_t agmm_dn_most_rows(const agmm_gemm_shape_t *s)
{
    int64_t mmax = 0;
    for (int i = 0; i < s->nrows; i++)
        mmax = AGMM_MAX(mmax, s->rows[i]);
    return mmax;
}

int agmm_dn_is_dup(const agmm_gemm_shape_t *s, int i)
{
    for (int j = 0; j < i; j++)
        if (s->rows[j] == s->rows[i]) return 1;
    return s->rows[i] <= 0;
}

uint64_t agmm_dn_vec_bytes(const agmm_dn_cfg_t *cfg)
{
    uint64_t v = (uint64_t)cfg->shape.ncols * sizeof(float);
    return (cfg->attr.bias ? v : 0) + (cfg->attr.w_scale ? v : 0);
}

int agmm_dn_dense_source(const agmm_dn_cfg_t *cfg)
{
    const agmm_gemm_attr_t *a = &cfg->attr;
    return a->w_dtype != a->a_dtype || cfg->shape.ldw != cfg->shape.ncols ||
           cfg->s8_split;
}

agmm_status_t agmm_dn_weight_source(const agmm_dn_cfg_t *cfg, const void *w,
                                    void **copy, const void **src)
{
    const agmm_gemm_shape_t *s = &cfg->shape;
    const agmm_gemm_attr_t *a = &cfg->attr;
    *copy = NULL;
    *src = w;
    if (!agmm_dn_dense_source(cfg)) return AGMM_OK;
    int conv = a->w_dtype != a->a_dtype;
    size_t es = agmm_dtype_size(a->w_dtype), cols = (size_t)s->ncols;
    unsigned char *d =
        agmm_alloc((size_t)s->k * cols * (conv ? sizeof(float) : es));
    if (!d)
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "gemm: out of memory copying the weight");
    for (int64_t r = 0; r < s->k; r++) {
        const unsigned char *row =
            (const unsigned char *)w + (size_t)(r * s->ldw) * es;
        if (conv)
            agmm_convert_to_f32(a->w_dtype, row,
                                (float *)(void *)d + (size_t)r * cols, cols);
        else
            memcpy(d + (size_t)r * cols * es, row, cols * es);
    }
    *copy = d;
    *src = d;
    return AGMM_OK;
}
