/* The oneDNN engine's INT8 (W8A8) path (engine.h, onednn_internal.h).
 *
 * A run goes through its rows mmax (the most prepared) at a time:
 *   1. A pass (when A is not read in place): the rows copied into the
 *      scratch densely (stride k), as u8 (a + 128) with s8_as_u8, else as
 *      they are (only when lda > k: oneDNN 2.6 picks its brgemm int8
 *      kernels for a dense A only);
 *   2. the primitive: s8 (u8) x s8 -> s32, exact, into the int32 sums in
 *      the scratch (stride ncols). SPLIT (agmm_dn_int8_mode: a core
 *      without VNNI, whose 16-bit pair sums saturate for 8-bit weights
 *      but not for 7-bit ones): the engine keeps W as two prepared halves,
 *      W = 64 * hi + lo with lo in 0..63 and hi in -2..1, and the same
 *      primitive runs on each, the high half's sums after the A pass in
 *      the scratch; acc = lo's + 64 * hi's, exact: each partial sum is
 *      within the bound below (|64 * hi's| <= 64 * 255 * 2 * 65536 <
 *      2^31) and so is the whole;
 *   3. agmm_gemm_epilogue_s32 (epilogue.c) into C: minus the compensation
 *      128 * sum_k W[k,j] with u8 (the same exact sum as s8 x s8, so the
 *      same bits), then the fixed fp32 order of engine.h: * w_scale[j],
 *      * a_scale[i], + bias, + C_old (accumulate), act, to c_dtype.
 * Why the sums go through memory rather than oneDNN scaling them: 2.6's
 * per-column output scales must be given when a primitive is made, and
 * the scales come later (load), while runtime scales
 * (DNNL_RUNTIME_F32_VAL) make oneDNN 2.6 leave its brgemm kernels for
 * gemm:jit or ref_int8:any (measured: 10-100x slower at k = n = 1024).
 * 3.x takes scales at execution, but 3.7.2's CPU matmul has source scales
 * per tensor only (not agmm's per row), applies them as acc * (a * w)
 * rather than the order below, and was not faster than this path
 * (docs/design.md, W8A8 int8): the same path on both versions.
 * Every int32 in this is exact for k <= AGMM_INT8_MAX_K = 65536 (|u8 sum|
 * <= 255 * 128 * k < 2^31, -128 included), which agmm_dn_config enforces.
 *
 * Per-worker scratch: [oneDNN scratchpad, 64-aligned][int32 sums: mmax x
 * ncols, 64-aligned][A pass: mmax x k bytes, when there is one][SPLIT:
 * the high half's sums, as the sums]. Weight bytes beyond the prepared
 * weight (SPLIT: two, the same size): bias and w_scale (ncols fp32 each,
 * counted by agmm_dn_vec_bytes) and, with s8_as_u8, the compensation
 * (ncols int32). */
#include "gemm/onednn/onednn_internal.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/epilogue.h"

struct agmm_dn_s8 {
    agmm_gemm_shape_t shape;
    agmm_gemm_attr_t attr;
    const agmm_dn_s8_t *base; /* the share's state, or NULL */
    float *bias, *w_scale;    /* [ncols] (bias when the attr has it) */
    int32_t *comp;            /* [ncols] with s8_as_u8, else NULL */
    int64_t mmax;
    int a_pass;       /* A goes through the scratch */
    size_t acc_bytes; /* the int32 sums' part, 64-aligned */
    size_t hi_at;     /* split: the high half's sums, from the sums' start */
};

static int needs_a_pass(const agmm_dn_cfg_t *cfg)
{
    return cfg->attr.s8_as_u8 || cfg->shape.lda != cfg->shape.k;
}

agmm_status_t agmm_dn_s8_split(int8_t *w, int64_t n, int8_t **hi_out)
{
    int8_t *hi = agmm_alloc((size_t)n);
    if (!hi)
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "gemm: out of memory splitting the weight");
    for (int64_t i = 0; i < n; i++) { /* W = 64 * hi + lo */
        int v = w[i], l = (int)((unsigned)v & 63u);
        w[i] = (int8_t)l;
        hi[i] = (int8_t)((v - l) / 64);
    }
    *hi_out = hi;
    return AGMM_OK;
}

uint64_t agmm_dn_s8_weight_extra(const agmm_dn_cfg_t *cfg)
{
    if (cfg->attr.a_dtype != AGMM_DTYPE_INT8 || !cfg->attr.s8_as_u8) return 0;
    return (uint64_t)cfg->shape.ncols * sizeof(int32_t);
}

static size_t acc_bytes(const agmm_dn_cfg_t *cfg, int64_t mmax)
{
    return agmm_dn_align64((size_t)mmax * (size_t)cfg->shape.ncols *
                           sizeof(int32_t));
}

static size_t a_pass_bytes(const agmm_dn_cfg_t *cfg, int64_t mmax)
{
    return needs_a_pass(cfg)
               ? agmm_dn_align64((size_t)mmax * (size_t)cfg->shape.k)
               : 0;
}

size_t agmm_dn_s8_scratch(const agmm_dn_cfg_t *cfg, int64_t mmax)
{
    return acc_bytes(cfg, mmax) * (cfg->s8_split ? 2 : 1) +
           a_pass_bytes(cfg, mmax);
}

void agmm_dn_s8_destroy(agmm_dn_s8_t *s)
{
    if (!s) return;
    if (!s->base) {
        agmm_free(s->bias);
        agmm_free(s->w_scale);
        agmm_free(s->comp);
    }
    agmm_free(s);
}

agmm_status_t agmm_dn_s8_create(const agmm_dn_cfg_t *cfg,
                                const agmm_dn_s8_t *base, int64_t mmax,
                                agmm_dn_s8_t **out)
{
    agmm_dn_s8_t *s = agmm_alloc(sizeof *s);
    if (!s) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    s->shape = cfg->shape;
    s->attr = cfg->attr;
    s->mmax = mmax;
    s->a_pass = needs_a_pass(cfg);
    s->acc_bytes = acc_bytes(cfg, mmax);
    s->hi_at = cfg->s8_split ? s->acc_bytes + a_pass_bytes(cfg, mmax) : 0;
    if (base) {
        s->base = base;
        s->bias = base->bias;
        s->w_scale = base->w_scale;
        s->comp = base->comp;
        *out = s;
        return AGMM_OK;
    }
    size_t vec = (size_t)cfg->shape.ncols * sizeof(float);
    s->w_scale = agmm_alloc(vec);
    if (cfg->attr.bias) s->bias = agmm_alloc(vec);
    if (cfg->attr.s8_as_u8) s->comp = agmm_alloc(vec);
    if (!s->w_scale || (cfg->attr.bias && !s->bias) ||
        (cfg->attr.s8_as_u8 && !s->comp)) {
        agmm_dn_s8_destroy(s);
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "gemm: out of memory for the int8 scales");
    }
    *out = s;
    return AGMM_OK;
}

agmm_status_t agmm_dn_s8_load_bias(agmm_dn_s8_t *s, const float *bias)
{
    memcpy(s->bias, bias, (size_t)s->shape.ncols * sizeof(float));
    return AGMM_OK;
}

agmm_status_t agmm_dn_s8_load(agmm_dn_s8_t *s, const agmm_gemm_operand_t *o)
{
    int64_t n = s->shape.ncols;
    memcpy(s->w_scale, o->w_scale, (size_t)n * sizeof(float));
    if (s->bias) memcpy(s->bias, o->bias, (size_t)n * sizeof(float));
    if (!s->comp) return AGMM_OK;
    /* 128 * sum_k W[k,j]: |sum| <= 128 * 65536, exact in int32 */
    memset(s->comp, 0, (size_t)n * sizeof(int32_t));
    const int8_t *w = o->w;
    for (int64_t k = 0; k < s->shape.k; k++, w += s->shape.ldw)
        for (int64_t j = 0; j < n; j++)
            s->comp[j] += w[j];
    for (int64_t j = 0; j < n; j++)
        s->comp[j] *= 128;
    return AGMM_OK;
}

/* m rows of A (stride lda) into dst densely (stride k): + 128 as u8, or
 * copied. */
static void a_pass(const agmm_dn_s8_t *s, int64_t m, const int8_t *a,
                   uint8_t *dst)
{
    int64_t k = s->shape.k;
    for (int64_t i = 0; i < m; i++, a += s->shape.lda, dst += k) {
        if (!s->attr.s8_as_u8) {
            memcpy(dst, a, (size_t)k);
            continue;
        }
        for (int64_t j = 0; j < k; j++)
            dst[j] = (uint8_t)(a[j] + 128);
    }
}

agmm_status_t agmm_dn_s8_run(const agmm_dn_s8_t *s, int64_t m, const void *a,
                             const float *a_scale, void *c, void *scratch,
                             size_t pad_bytes, agmm_dn_s8_gemm_fn gemm,
                             void *ctx)
{
    if (m <= 0) return AGMM_OK;
    if (!a_scale)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: onednn: run: int8 needs a_scale (NULL)");
    const agmm_gemm_shape_t *sh = &s->shape;
    int64_t lds = sh->ld_a_scale > 1 ? sh->ld_a_scale : 1;
    size_t ces = agmm_dtype_size(s->attr.c_dtype);
    int32_t *acc = (int32_t *)((unsigned char *)scratch + pad_bytes);
    uint8_t *abuf = (uint8_t *)acc + s->acc_bytes;
    for (int64_t r0 = 0; r0 < m; r0 += s->mmax) {
        int64_t mc = AGMM_MIN(s->mmax, m - r0);
        const int8_t *ar = (const int8_t *)a + (size_t)(r0 * sh->lda);
        const void *src = ar;
        if (s->a_pass) {
            a_pass(s, mc, ar, abuf);
            src = abuf;
        }
        AGMM_CHECK(gemm(ctx, 0, mc, src, acc, scratch));
        if (s->hi_at) { /* split: acc (low half's sums) += 64 * high's */
            int32_t *hi = (int32_t *)((unsigned char *)acc + s->hi_at);
            AGMM_CHECK(gemm(ctx, 1, mc, src, hi, scratch));
            size_t n = (size_t)mc * (size_t)sh->ncols;
            for (size_t i = 0; i < n; i++)
                acc[i] = (int32_t)((int64_t)acc[i] + 64 * (int64_t)hi[i]);
        }
        agmm_gemm_epilogue_s32(
            &s->attr, mc, sh->ncols, acc, sh->ncols, s->comp,
            a_scale + (size_t)(r0 * lds), lds, s->w_scale, s->bias,
            (unsigned char *)c + (size_t)(r0 * sh->ldc) * ces, sh->ldc);
    }
    return AGMM_OK;
}
