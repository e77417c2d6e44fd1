/* The plan's epilogue as a pass over finished fp32 rows (epilogue_rows.h:
 * agmm_plan_epilogue_rows), with the GEMM engines' own pass
 * (gemm/epilogue.c), so that an operation that applies the epilogue after
 * its reduction rounds exactly as a GEMM call with the attributes would. */
#include "ops/common/epilogue_rows.h"
#include "gemm/epilogue.h"
#include "ops/common/plan.h"

void agmm_plan_epilogue_rows(const agmm_plan_t *p, int w, const float *src,
                             int64_t rows, void *dst)
{
    if (rows <= 0 || (!p->epilogue && (const void *)src == dst)) return;
    agmm_gemm_attr_t attr;
    agmm_gemm_attr_init(&attr, AGMM_DTYPE_FP32, AGMM_DTYPE_FP32);
    attr.bias = p->desc.bias != 0;
    attr.act = p->act[w];
    attr.c_dtype = p->desc.out_dtype;
    int64_t n = p->n_w[w];
    const float *bias = p->bias ? p->bias + agmm_plan_col_off(p, w) : NULL;
    agmm_gemm_epilogue(&attr, rows, n, src, n, NULL, 0, NULL, bias, dst, n);
}
