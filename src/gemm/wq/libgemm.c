/* The prefill path's library GEMM (libgemm.h): oneDNN's matmul on a
 * dense panel, or the CBLAS sgemm / OpenBLAS sbgemm without oneDNN. */
#include "gemm/wq/libgemm.h"

#include <stdio.h>
#include <string.h>

#include "agmm_ext.h"
#include "common/log.h"
#include "common/util.h"
#include "gemm/engine.h"
#include "gemm/gemm.h"

#ifdef AGMM_HAVE_ONEDNN
#include "gemm/onednn/cpu.h"
#endif

#ifdef AGMM_HAVE_OPENBLAS
/* OpenBLAS's bf16 GEMM (0.3.10 on; cblas.h is not included here so that
 * an older one, without it, links too: weak, NULL when absent). The
 * enums as their CBLAS values: row major 101, no transpose 111. */
extern void cblas_sbgemm(int order, int ta, int tb, int m, int n, int k,
                         float alpha, const uint16_t *a, int lda,
                         const uint16_t *b, int ldb, float beta, float *c,
                         int ldc) __attribute__((weak));
#endif

enum { LIB_ONEDNN = 1, LIB_SGEMM = 2, LIB_SBGEMM = 3 };

#ifdef AGMM_HAVE_ONEDNN
typedef struct {
    int64_t m, n;
    dnnl_primitive_t prim;
} lib_prim_t;
#endif

struct agmm_wq_lib {
    int kind;
    agmm_dtype_t a_dtype;
    int64_t k, lda;
    char name[96];
#ifdef AGMM_HAVE_ONEDNN
    int count;
    lib_prim_t *prims; /* [nms x nns] at most */
#endif
};

#ifdef AGMM_HAVE_ONEDNN
/* The descriptor of m x k (A, lda) times k x n (dense) into m x n fp32
 * (dense), user scratchpad, no post-op. NULL pd when it fails (logged
 * by the caller). */
static dnnl_status_t lib_pd(const agmm_wq_lib_cfg_t *c, int64_t m, int64_t n,
                            dnnl_primitive_desc_t *pd)
{
    dnnl_data_type_t dt = c->a_dtype == AGMM_DTYPE_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_dims_t a_dims = {m, c->k}, a_str = {c->lda, 1};
    dnnl_dims_t w_dims = {c->k, n}, w_str = {n, 1};
    dnnl_dims_t c_dims = {m, n}, c_str = {n, 1};
    agmm_dn_md_t a_md = NULL, w_md = NULL, c_md = NULL;
    dnnl_primitive_attr_t attr = NULL;
    *pd = NULL;
    dnnl_status_t st = agmm_dn_md_strides(&a_md, 2, a_dims, dt, a_str);
    if (st == dnnl_success)
        st = agmm_dn_md_strides(&w_md, 2, w_dims, dt, w_str);
    if (st == dnnl_success)
        st = agmm_dn_md_strides(&c_md, 2, c_dims, dnnl_f32, c_str);
    if (st == dnnl_success) st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_scratchpad_mode(attr,
                                                     dnnl_scratchpad_mode_user);
    if (st == dnnl_success)
        st = agmm_dn_matmul_pd_create(pd, agmm_dn_engine(), a_md, w_md, NULL,
                                      c_md, attr);
    if (attr) dnnl_primitive_attr_destroy(attr);
    agmm_dn_md_destroy(a_md);
    agmm_dn_md_destroy(w_md);
    agmm_dn_md_destroy(c_md);
    return st;
}

static int is_dup(const int64_t *v, int i)
{
    for (int j = 0; j < i; j++)
        if (v[j] == v[i]) return 1;
    return v[i] <= 0;
}

/* Every (m, n) pair's descriptor: their largest scratchpad, the first's
 * implementation; with l, the primitives too. AGMM_ERR_UNSUPPORTED (not
 * logged) when one is oneDNN's reference kernel or unimplemented. */
static agmm_status_t onednn_make(const agmm_wq_lib_cfg_t *c, agmm_wq_lib_t *l,
                                 size_t *scratch, char *name, size_t size)
{
    if (!agmm_dn_engine()) return AGMM_ERR_UNSUPPORTED;
    if (c->a_dtype == AGMM_DTYPE_BF16 && !agmm_dn_bf16_native())
        return AGMM_ERR_UNSUPPORTED;
    int saved = agmm_dn_one_omp_thread();
    agmm_status_t ret = AGMM_OK;
    for (int i = 0; i < c->nms && ret == AGMM_OK; i++) {
        if (is_dup(c->ms, i)) continue;
        for (int j = 0; j < c->nns && ret == AGMM_OK; j++) {
            if (is_dup(c->ns, j)) continue;
            dnnl_primitive_desc_t pd;
            dnnl_status_t st = lib_pd(c, c->ms[i], c->ns[j], &pd);
            if (st != dnnl_success) {
                ret = st == dnnl_unimplemented
                          ? AGMM_ERR_UNSUPPORTED
                          : agmm_dn_fail(st, "wq prefill matmul descriptor");
                break;
            }
            const char *impl = NULL;
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            if (!impl || strncmp(impl, "ref", 3) == 0) {
                dnnl_primitive_desc_destroy(pd);
                ret = AGMM_ERR_UNSUPPORTED;
                break;
            }
            if (!name[0]) snprintf(name, size, "onednn %s", impl);
            size_t b = agmm_dn_pd_scratch(pd);
            if (b > *scratch) *scratch = b;
            if (l) {
                lib_prim_t *e = &l->prims[l->count];
                st = dnnl_primitive_create(&e->prim, pd);
                if (st != dnnl_success) {
                    ret = agmm_dn_fail(st, "wq prefill matmul primitive");
                } else {
                    agmm_gemm_engine_count_creation();
                    e->m = c->ms[i];
                    e->n = c->ns[j];
                    l->count++;
                }
            }
            dnnl_primitive_desc_destroy(pd);
        }
    }
    agmm_dn_restore_omp(saved);
    return ret;
}
#endif

void agmm_wq_lib_destroy(agmm_wq_lib_t *l)
{
    if (!l) return;
#ifdef AGMM_HAVE_ONEDNN
    for (int i = 0; i < l->count; i++)
        dnnl_primitive_destroy(l->prims[i].prim);
    agmm_free(l->prims);
#endif
    agmm_free(l);
}

agmm_status_t agmm_wq_lib_make(const agmm_wq_lib_cfg_t *cfg,
                               agmm_wq_lib_t **out, size_t *scratch, int *bf16)
{
    *scratch = 0;
    *bf16 = cfg->a_dtype == AGMM_DTYPE_BF16;
    if (out) *out = NULL;
    if (cfg->a_dtype != AGMM_DTYPE_FP32 && cfg->a_dtype != AGMM_DTYPE_BF16)
        return AGMM_ERR_UNSUPPORTED;
    agmm_wq_lib_t *l = NULL;
    if (out) {
        l = agmm_alloc(sizeof *l);
        if (!l) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: wq: no memory");
        l->a_dtype = cfg->a_dtype;
        l->k = cfg->k;
        l->lda = cfg->lda;
    }
    char name[96] = "";
    agmm_status_t st = AGMM_ERR_UNSUPPORTED;
    int kind = 0;
#ifdef AGMM_HAVE_ONEDNN
    if (l && !(l->prims = agmm_alloc((size_t)(cfg->nms * cfg->nns + 1) *
                                     sizeof(lib_prim_t)))) {
        agmm_free(l);
        return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: wq: no memory");
    }
    st = onednn_make(cfg, l, scratch, name, sizeof name);
    if (st == AGMM_OK) kind = LIB_ONEDNN;
    if (st == AGMM_ERR_UNSUPPORTED && l) { /* none kept: BLAS instead */
        for (int i = 0; i < l->count; i++)
            dnnl_primitive_destroy(l->prims[i].prim);
        l->count = 0;
        *scratch = 0;
    }
#endif
    if (st == AGMM_ERR_UNSUPPORTED && cfg->a_dtype == AGMM_DTYPE_FP32) {
        kind = LIB_SGEMM;
        snprintf(name, sizeof name, "%s sgemm", agmm_blas_name());
        st = AGMM_OK;
    }
#ifdef AGMM_HAVE_OPENBLAS
    if (st == AGMM_ERR_UNSUPPORTED && cfg->a_dtype == AGMM_DTYPE_BF16 &&
        cblas_sbgemm) {
        kind = LIB_SBGEMM;
        snprintf(name, sizeof name, "%s sbgemm", agmm_blas_name());
        st = AGMM_OK;
    }
#endif
    if (st != AGMM_OK) {
        agmm_wq_lib_destroy(l);
        return st;
    }
    if (l) {
        l->kind = kind;
        snprintf(l->name, sizeof l->name, "%s", name);
        *out = l;
    }
    return AGMM_OK;
}

int agmm_wq_lib_has(const agmm_wq_lib_t *l, int64_t m, int64_t nc)
{
    if (!l || m <= 0 || nc <= 0) return 0;
#ifdef AGMM_HAVE_ONEDNN
    if (l->kind == LIB_ONEDNN) {
        for (int i = 0; i < l->count; i++)
            if (l->prims[i].m == m && l->prims[i].n == nc) return 1;
        return 0;
    }
#endif
    return 1;
}

const char *agmm_wq_lib_name(const agmm_wq_lib_t *l)
{
    return l ? l->name : "none";
}

#ifdef AGMM_HAVE_ONEDNN
static agmm_status_t onednn_run(const agmm_wq_lib_t *l, dnnl_primitive_t prim,
                                const void *a, const void *w, float *prod,
                                void *scratch)
{
    const_dnnl_primitive_desc_t pd;
    DN(dnnl_primitive_get_primitive_desc(prim, &pd), "primitive query");
    dnnl_engine_t eng = agmm_dn_engine();
    int saved = agmm_dn_one_omp_thread();
    dnnl_memory_t am = NULL, wm = NULL, cm = NULL, sm = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_status_t st = dnnl_memory_create(
        &am, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), eng,
        (void *)a);
    if (st == dnnl_success)
        st = dnnl_memory_create(
            &wm, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
            eng, (void *)w);
    if (st == dnnl_success)
        st = dnnl_memory_create(
            &cm, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), eng,
            prod);
    if (st == dnnl_success)
        st = dnnl_memory_create(
            &sm, dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0),
            eng, scratch);
    if (st == dnnl_success)
        st = dnnl_stream_create(&stream, eng, dnnl_stream_default_flags);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, am},
                                   {DNNL_ARG_WEIGHTS, wm},
                                   {DNNL_ARG_DST, cm},
                                   {DNNL_ARG_SCRATCHPAD, sm}};
        st = dnnl_primitive_execute(prim, stream, 4, args);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (stream) dnnl_stream_destroy(stream);
    if (sm) dnnl_memory_destroy(sm);
    if (cm) dnnl_memory_destroy(cm);
    if (wm) dnnl_memory_destroy(wm);
    if (am) dnnl_memory_destroy(am);
    agmm_dn_restore_omp(saved);
    (void)l;
    return st == dnnl_success ? AGMM_OK : agmm_dn_fail(st, "wq prefill matmul");
}
#endif

agmm_status_t agmm_wq_lib_run(const agmm_wq_lib_t *l, int64_t m, int64_t nc,
                              const void *a, const void *w, float *prod,
                              void *scratch)
{
    if (!agmm_wq_lib_has(l, m, nc))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: wq: prefill GEMM of %lld x %lld: not made "
                          "for it",
                          (long long)m, (long long)nc);
    switch (l->kind) {
#ifdef AGMM_HAVE_ONEDNN
    case LIB_ONEDNN:
        for (int i = 0; i < l->count; i++)
            if (l->prims[i].m == m && l->prims[i].n == nc)
                return onednn_run(l, l->prims[i].prim, a, w, prod, scratch);
        break;
#endif
#ifdef AGMM_HAVE_OPENBLAS
    case LIB_SBGEMM:
        cblas_sbgemm(101, 111, 111, (int)m, (int)nc, (int)l->k, 1.0f,
                     (const uint16_t *)a, (int)l->lda, (const uint16_t *)w,
                     (int)nc, 0.0f, prod, (int)nc);
        return AGMM_OK;
#endif
    case LIB_SGEMM:
        agmm_gemm_f32(m, nc, l->k, (const float *)a, l->lda, (const float *)w,
                      nc, prod, nc);
        return AGMM_OK;
    default:
        break;
    }
    (void)scratch;
    return agmm_error(AGMM_ERR_BAD_STATE, "gemm: wq: prefill GEMM kind %d",
                      l->kind);
}
