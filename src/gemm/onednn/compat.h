/* Internal to the oneDNN engine: the thin layer where oneDNN 2.x (2.6 on)
 * and 3.x differ, so the engine's files are one code base
 * (compat.c). CMake reads the version from dnnl_version.h at
 * configure time and passes its major as AGMM_DNNL_MAJOR; a header of
 * another version here is an error, not a silent mix.
 *
 * Memory descriptors: oneDNN 3.x's are handles (created, cloned,
 * destroyed), 2.x's plain structs passed by pointer. Here both are handles:
 * agmm_dn_md_t is owned (made by agmm_dn_md_tag/_strides/_clone, freed by
 * agmm_dn_md_destroy; on 2.x a heap copy of the struct), agmm_dn_cmd_t is
 * borrowed (what dnnl_primitive_desc_query_md returns, in both versions).
 * Either passes as it is to the calls whose signatures only differ in that
 * (dnnl_memory_create, dnnl_memory_desc_get_size, dnnl_memory_desc_equal,
 * dnnl_reorder_primitive_desc_create). */
#ifndef AGMM_GEMM_ONEDNN_COMPAT_H
#define AGMM_GEMM_ONEDNN_COMPAT_H

#include <dnnl.h>
#include <dnnl_version.h>

#if !defined(AGMM_DNNL_MAJOR) || AGMM_DNNL_MAJOR != DNNL_VERSION_MAJOR
#error "dnnl_version.h is not the oneDNN CMake configured (AGMM_DNNL_MAJOR)"
#endif

#if DNNL_VERSION_MAJOR >= 3
typedef dnnl_memory_desc_t agmm_dn_md_t;
typedef const_dnnl_memory_desc_t agmm_dn_cmd_t;
/* The argument of the per-column weight scales at execution. */
#define AGMM_DN_ARG_W_SCALE (DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS)
#else
typedef dnnl_memory_desc_t *agmm_dn_md_t;
typedef const dnnl_memory_desc_t *agmm_dn_cmd_t;
#define AGMM_DN_ARG_W_SCALE DNNL_ARG_ATTR_OUTPUT_SCALES
#endif

/* 1 where scales are given at execution and applied to the accumulator
 * alone (3.x: w_scale * acc + bias; 2.x's output scales take acc + bias). */
#define AGMM_DN_SCALES_AT_EXEC (DNNL_VERSION_MAJOR >= 3)

/* oneDNN 3.x's matmul of one column (N 1) writes a strided C's rows
 * densely (3.7.2, dense.c); 2.6's writes them at their stride. */
#define AGMM_DN_NCOL1_STRIDED_C_BROKEN (DNNL_VERSION_MAJOR >= 3)

dnnl_status_t agmm_dn_md_tag(agmm_dn_md_t *md, int ndims,
                             const dnnl_dims_t dims, dnnl_data_type_t dt,
                             dnnl_format_tag_t tag);
dnnl_status_t agmm_dn_md_strides(agmm_dn_md_t *md, int ndims,
                                 const dnnl_dims_t dims, dnnl_data_type_t dt,
                                 const dnnl_dims_t strides);
dnnl_status_t agmm_dn_md_clone(agmm_dn_md_t *md, agmm_dn_cmd_t from);
void agmm_dn_md_destroy(agmm_dn_md_t md); /* NULL: nothing */

/* The matmul descriptor a (m x k) @ w (k x n) [+ bias (1 x n)] -> c. */
dnnl_status_t agmm_dn_matmul_pd_create(dnnl_primitive_desc_t *pd,
                                       dnnl_engine_t eng, agmm_dn_cmd_t a,
                                       agmm_dn_cmd_t w, agmm_dn_cmd_t bias,
                                       agmm_dn_cmd_t c,
                                       const_dnnl_primitive_attr_t attr);

/* Post-ops: a sum of scale 1 (C_old added, C's dtype); an eltwise. */
dnnl_status_t agmm_dn_po_sum(dnnl_post_ops_t po);
dnnl_status_t agmm_dn_po_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                                 float alpha, float beta);
/* Per-column (mask 1 << 1) weight scales given at each run, under
 * AGMM_DN_ARG_W_SCALE (2.x: runtime output scales). */
dnnl_status_t agmm_dn_attr_w_scale(dnnl_primitive_attr_t attr);

#endif /* AGMM_GEMM_ONEDNN_COMPAT_H */
