/* The engines' call around the epilogue pass (epilogue.h:
 * agmm_gemm_epilogue_run): their kernel's plain fp32 product into C and
 * the pass in place, or through the worker's scratch a chunk of rows at a
 * time and the pass into C. Apart from epilogue.c, whose loops are
 * compiled in clones (and again, renamed, by tests/unit/epilogue_clone_*.c):
 * this is a loop over calls, not over elements. */
#include "gemm/epilogue.h"

#include "common/log.h"
#include "common/util.h"

int agmm_gemm_epilogue_via_scratch(const agmm_gemm_attr_t *attr)
{
    return attr->accumulate || attr->c_dtype != AGMM_DTYPE_FP32;
}

agmm_status_t agmm_gemm_epilogue_run(const agmm_gemm_attr_t *attr, int64_t m,
                                     int64_t ncols, agmm_gemm_product_fn fn,
                                     void *ctx, float *buf, int64_t chunk,
                                     const float *a_scale, int64_t ld_a_scale,
                                     const float *w_scale, const float *bias,
                                     void *c, int64_t ldc)
{
    if (m <= 0) return AGMM_OK;
    if (!agmm_gemm_epilogue_via_scratch(attr)) { /* into C, the pass in place */
        AGMM_CHECK(fn(ctx, 0, m, c, ldc));
        if (a_scale || w_scale || bias || attr->act != AGMM_GEMM_ACT_NONE)
            agmm_gemm_epilogue(attr, m, ncols, c, ldc, a_scale, ld_a_scale,
                               w_scale, bias, c, ldc);
        return AGMM_OK;
    }
    size_t ces = agmm_dtype_size(attr->c_dtype);
    int64_t lds = ld_a_scale > 1 ? ld_a_scale : 1;
    for (int64_t r0 = 0; r0 < m; r0 += chunk) {
        int64_t mc = AGMM_MIN(chunk, m - r0);
        AGMM_CHECK(fn(ctx, r0, mc, buf, ncols));
        agmm_gemm_epilogue(attr, mc, ncols, buf, ncols,
                           a_scale ? a_scale + r0 * lds : NULL, ld_a_scale,
                           w_scale, bias,
                           (unsigned char *)c + (size_t)(r0 * ldc) * ces, ldc);
    }
    return AGMM_OK;
}
