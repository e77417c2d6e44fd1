/* The oneDNN 2.x / 3.x layer (compat.h). */
#include "gemm/onednn/compat.h"

#include <stdlib.h>

#if DNNL_VERSION_MAJOR >= 3

dnnl_status_t agmm_dn_md_tag(agmm_dn_md_t *md, int ndims,
                             const dnnl_dims_t dims, dnnl_data_type_t dt,
                             dnnl_format_tag_t tag)
{
    *md = NULL;
    return dnnl_memory_desc_create_with_tag(md, ndims, dims, dt, tag);
}

dnnl_status_t agmm_dn_md_strides(agmm_dn_md_t *md, int ndims,
                                 const dnnl_dims_t dims, dnnl_data_type_t dt,
                                 const dnnl_dims_t strides)
{
    *md = NULL;
    return dnnl_memory_desc_create_with_strides(md, ndims, dims, dt, strides);
}

dnnl_status_t agmm_dn_md_clone(agmm_dn_md_t *md, agmm_dn_cmd_t from)
{
    *md = NULL;
    return dnnl_memory_desc_clone(md, from);
}

void agmm_dn_md_destroy(agmm_dn_md_t md)
{
    if (md) dnnl_memory_desc_destroy(md);
}

dnnl_status_t agmm_dn_matmul_pd_create(dnnl_primitive_desc_t *pd,
                                       dnnl_engine_t eng, agmm_dn_cmd_t a,
                                       agmm_dn_cmd_t w, agmm_dn_cmd_t bias,
                                       agmm_dn_cmd_t c,
                                       const_dnnl_primitive_attr_t attr)
{
    return dnnl_matmul_primitive_desc_create(pd, eng, a, w, bias, c, attr);
}

dnnl_status_t agmm_dn_po_sum(dnnl_post_ops_t po)
{
    return dnnl_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef);
}

dnnl_status_t agmm_dn_po_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                                 float alpha, float beta)
{
    return dnnl_post_ops_append_eltwise(po, alg, alpha, beta);
}

dnnl_status_t agmm_dn_attr_w_scale(dnnl_primitive_attr_t attr)
{
    return dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_WEIGHTS, 1 << 1);
}

#else /* oneDNN 2.x */

/* An owned desc: a heap copy of 2.x's struct. */
static dnnl_status_t md_new(agmm_dn_md_t *md)
{
    *md = malloc(sizeof **md);
    return *md ? dnnl_success : dnnl_out_of_memory;
}

/* Frees *md again when init failed. */
static dnnl_status_t md_done(agmm_dn_md_t *md, dnnl_status_t st)
{
    if (st != dnnl_success) {
        free(*md);
        *md = NULL;
    }
    return st;
}

dnnl_status_t agmm_dn_md_tag(agmm_dn_md_t *md, int ndims,
                             const dnnl_dims_t dims, dnnl_data_type_t dt,
                             dnnl_format_tag_t tag)
{
    dnnl_status_t st = md_new(md);
    if (st != dnnl_success) return st;
    return md_done(md, dnnl_memory_desc_init_by_tag(*md, ndims, dims, dt, tag));
}

dnnl_status_t agmm_dn_md_strides(agmm_dn_md_t *md, int ndims,
                                 const dnnl_dims_t dims, dnnl_data_type_t dt,
                                 const dnnl_dims_t strides)
{
    dnnl_status_t st = md_new(md);
    if (st != dnnl_success) return st;
    return md_done(
        md, dnnl_memory_desc_init_by_strides(*md, ndims, dims, dt, strides));
}

dnnl_status_t agmm_dn_md_clone(agmm_dn_md_t *md, agmm_dn_cmd_t from)
{
    dnnl_status_t st = md_new(md);
    if (st == dnnl_success) **md = *from;
    return st;
}

void agmm_dn_md_destroy(agmm_dn_md_t md)
{
    free(md);
}

dnnl_status_t agmm_dn_matmul_pd_create(dnnl_primitive_desc_t *pd,
                                       dnnl_engine_t eng, agmm_dn_cmd_t a,
                                       agmm_dn_cmd_t w, agmm_dn_cmd_t bias,
                                       agmm_dn_cmd_t c,
                                       const_dnnl_primitive_attr_t attr)
{
    dnnl_matmul_desc_t md;
    dnnl_status_t st = dnnl_matmul_desc_init(&md, a, w, bias, c);
    if (st != dnnl_success) return st;
    return dnnl_primitive_desc_create(pd, &md, attr, eng, NULL);
}

dnnl_status_t agmm_dn_po_sum(dnnl_post_ops_t po)
{
    return dnnl_post_ops_append_sum(po, 1.0f);
}

dnnl_status_t agmm_dn_po_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                                 float alpha, float beta)
{
    return dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta);
}

dnnl_status_t agmm_dn_attr_w_scale(dnnl_primitive_attr_t attr)
{
    float rt = DNNL_RUNTIME_F32_VAL; /* given at each run */
    return dnnl_primitive_attr_set_output_scales(attr, 1, 1 << 1, &rt);
}

#endif
