/* The dense buffer of the oneDNN engine: when a call's C is strided
 * (ldc > ncols), whether its rows go through a dense copy of mmax rows
 * after the scratchpad, and how (onednn_internal.h; agmm_dn_run in prep.c runs
 * it); and whether a dense C gets an AMX implementation (agmm_dn_amx, the
 * column parts' question in cols.c). */
#include <dnnl.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/onednn/onednn_internal.h"

/* The implementation oneDNN gives m rows of cfg: is it one on AMX tiles
 * (its name has "_amx")? -1: no descriptor. */
static int amx_impl(const agmm_dn_cfg_t *cfg, int64_t m)
{
    dnnl_primitive_desc_t pd;
    int was = agmm_log_muted();
    agmm_log_mute(1); /* a refusal here is prepare's to report, or none */
    int saved = agmm_dn_one_omp_thread();
    agmm_status_t st = agmm_dn_matmul_pd(cfg, m, NULL, &pd);
    agmm_dn_restore_omp(saved);
    agmm_log_mute(was);
    if (st != AGMM_OK) return -1;
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    int amx = impl && strstr(impl, "_amx") != NULL;
    dnnl_primitive_desc_destroy(pd);
    return amx;
}

/* Measured at k = 4096 (test_gemm_attr.c): with a strided C (ldc >
 * ncols) oneDNN 2.6's sum post-op is not C_old + the plain product bit for
 * bit (bf16: the sum; fp32: the plain product's own bits depend on ldc);
 * with a dense C it is. So accumulate on a strided C:
 *   fp32 C: DENSE_ADD: the primitive drops the sum and the act (bias and
 *           scales stay) and writes C as a plain prep of that ldc would;
 *           C_old is saved first and added after, then the act
 *           (DENSE_ADD_OUT: the plain prep goes through the dense buffer,
 *           below, so the product does too, and is added to C, then the
 *           act);
 *   else:   DENSE_COPY: the primitives write a dense copy of C's rows
 *           (ldc = ncols), copied in and out around them.
 * And a plain call on a strided C: oneDNN 2.6 has brgemm matmuls for a
 * dense C only; a strided one falls back to gemm:jit. On an AMX machine
 * (docs/history/) that loses the tiles: one rank, two GEMM workers
 * (each a column half, ldc = 2 ncols), 2048 x 4096 x 4096 bf16, fused
 * median 291 ms on gemm:jit, 154 ms on brg:avx512_core_amx_bf16 through
 * the dense buffer; fp32's brgemm (brg:avx512_core) through it was slower
 * than gemm:jit strided (497 against 341 ms). So when a dense C of PROBE
 * rows gets an AMX implementation and the strided one does not:
 * DENSE_OUT, the primitives write a dense buffer, copied out (one more
 * pass over C's rows). */
/* Would a plain call of cfg lose AMX to its strided C (see above)? Or
 * write it wrong: oneDNN 3.7.2's matmul with a single column (ncols 1)
 * writes a strided C's rows densely, over the cells past ncols (seen in
 * unit_gemm_attributes_match_reference; 2.6 writes it right), so there a
 * one-column strided C always goes through the dense buffer. */
/* The row count the choice asks oneDNN about: one for every prep of the
 * shape, whatever its rows, so plans made for different rows per call
 * choose alike and give the same bits (test_rs_rows.c). */
enum { PROBE = 32 };

static int dense_out_pays(const agmm_dn_cfg_t *cfg)
{
    agmm_dn_cfg_t dense = *cfg;
    dense.ldc = cfg->shape.ncols;
    if (cfg->shape.ncols == 1 && AGMM_DN_NCOL1_STRIDED_C_BROKEN) return 1;
    return amx_impl(cfg, PROBE) == 0 && amx_impl(&dense, PROBE) == 1;
}

int agmm_dn_use_dense(agmm_dn_cfg_t *cfg)
{
    if (cfg->attr.a_dtype == AGMM_DTYPE_INT8) /* its own pass adds C_old */
        return 0;
    /* A dense C: through oneDNN, but for an accumulate whose sum post-op
     * is not C_old + the plain product here (the probe): DENSE_ADD. */
    if (cfg->shape.ldc == cfg->shape.ncols &&
        (!cfg->attr.accumulate || cfg->attr.c_dtype != AGMM_DTYPE_FP32 ||
         agmm_dn_sum_exact(cfg->attr.a_dtype)))
        return 0;
    if (!cfg->attr.accumulate) {
        if (!dense_out_pays(cfg)) return 0;
        cfg->ldc = cfg->shape.ncols;
        return AGMM_DN_DENSE_OUT;
    }
    if (cfg->attr.c_dtype == AGMM_DTYPE_FP32) {
        cfg->attr.accumulate = 0;
        cfg->attr.act = AGMM_GEMM_ACT_NONE;
        /* The plain product must be the plain prep's bits: through the
         * dense buffer when that one goes there. */
        if (!dense_out_pays(cfg)) return AGMM_DN_DENSE_ADD;
        cfg->ldc = cfg->shape.ncols;
        return AGMM_DN_DENSE_ADD_OUT;
    }
    cfg->ldc = cfg->shape.ncols;
    return AGMM_DN_DENSE_COPY;
}

int64_t agmm_dn_dense_rows(int dense, int64_t mmax)
{
    return dense == AGMM_DN_DENSE_OUT || dense == AGMM_DN_DENSE_ADD_OUT
               ? AGMM_MIN(mmax, AGMM_DN_OUT_ROWS)
               : mmax;
}

size_t agmm_dn_dense_size(const agmm_dn_cfg_t *cfg, int64_t mmax)
{
    return (size_t)mmax * (size_t)cfg->shape.ncols *
           agmm_dtype_size(cfg->attr.c_dtype);
}

int agmm_dn_amx(const agmm_gemm_shape_t *s, const agmm_gemm_attr_t *a)
{
    agmm_gemm_shape_t dense = *s;
    dense.ldc = s->ncols;
    agmm_dn_cfg_t cfg;
    int was = agmm_log_muted();
    agmm_log_mute(1);
    agmm_status_t st = agmm_dn_config(&dense, a, NULL, NULL, &cfg);
    agmm_log_mute(was);
    return st == AGMM_OK && amx_impl(&cfg, PROBE) == 1;
}
