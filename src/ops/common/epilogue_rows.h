/* The plan's epilogue as a pass over finished rows (epilogue_rows.c). */
#ifndef AGMM_OPS_EPILOGUE_ROWS_H
#define AGMM_OPS_EPILOGUE_ROWS_H

#include <stdint.h>

#include "agmm.h"

/* The plan's epilogue as a pass over finished fp32 rows,
 * for an operation that applies it itself (op.h: epilogue_in_gemm 0, e.g.
 * after a reduction, once, on the rows' owner): for `rows` rows of weight
 * w's n_w[w] columns, src fp32 (row stride n_w[w]) and dst in out_dtype
 * (the same stride in its elements):
 *   dst[i,j] = out_dtype(act(src[i,j] + bias[j]))
 * in the order of epilogue.h (each step one fp32 operation, one rounding
 * to nearest even at the end): the same bits as a GEMM call with the
 * attributes, whatever thread or tile runs it. src == dst is allowed when
 * out_dtype is FP32; src is only read. Nothing to do (no epilogue, src
 * == dst) returns at once. Any thread; the bias must not change while it
 * runs (set_bias is never concurrent with a round). */
void agmm_plan_epilogue_rows(const agmm_plan_t *p, int w, const float *src,
                             int64_t rows, void *dst);

#endif
