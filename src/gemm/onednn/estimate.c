/* A column range's sizes (onednn_internal.h: agmm_dn_estimate): what
 * prepare (prep.c) will allocate, from the same descriptors, without
 * making a primitive: the weight layout's size (twice with the int8
 * SPLIT), the fp32 bias and w_scale copies and the int8 compensation as
 * weight bytes; the largest scratchpad, and after it the dense buffer
 * (dense.c) or the int8 path's sums and A pass (s8.c), per worker. */
#include "gemm/onednn/onednn_internal.h"

#include "common/log.h"
#include "common/util.h"

/* Builds the descriptors prepare builds (the layout's and each row
 * count's), no primitive. With share, the layout is the attr's own choice
 * (the base's is the same for the same k, ncols and dtype). */
agmm_status_t agmm_dn_estimate(const agmm_gemm_shape_t *s,
                               const agmm_gemm_attr_t *a, int share,
                               uint64_t *weight_bytes, uint64_t *scratch_bytes)
{
    agmm_dn_cfg_t cfg;
    AGMM_CHECK(agmm_dn_config(s, a, NULL, NULL, &cfg));
    if (s->nrows < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: onednn: no row counts to prepare");
    int dense = agmm_dn_use_dense(&cfg);
    int saved = agmm_dn_one_omp_thread();
    agmm_dn_md_t w_md = NULL;
    size_t scratch = 0;
    agmm_status_t st = agmm_dn_choose_layout(&cfg, agmm_dn_most_rows(s), &w_md);
    for (int i = 0; i < s->nrows && st == AGMM_OK; i++) {
        if (agmm_dn_is_dup(s, i)) continue;
        dnnl_primitive_desc_t pd;
        st = agmm_dn_matmul_pd(&cfg, s->rows[i], w_md, &pd);
        if (st != AGMM_OK) break;
        scratch = AGMM_MAX(scratch, agmm_dn_pd_scratch(pd));
        dnnl_primitive_desc_destroy(pd);
    }
    agmm_dn_restore_omp(saved);
    size_t w_size = w_md ? dnnl_memory_desc_get_size(w_md) : 0;
    agmm_dn_md_destroy(w_md);
    AGMM_CHECK(st);
    int64_t mmax = agmm_dn_most_rows(s);
    *weight_bytes = share ? 0
                          : w_size * (cfg.s8_split ? 2 : 1) +
                                agmm_dn_vec_bytes(&cfg) +
                                agmm_dn_s8_weight_extra(&cfg);
    if (a->a_dtype == AGMM_DTYPE_INT8)
        *scratch_bytes =
            agmm_dn_align64(scratch) + agmm_dn_s8_scratch(&cfg, mmax);
    else
        *scratch_bytes =
            dense
                ? agmm_dn_align64(scratch) +
                      agmm_dn_dense_size(&cfg, agmm_dn_dense_rows(dense, mmax))
                : scratch;
    return AGMM_OK;
}
