/* `agmm run`'s check of the epilogue (--bias, --activation, --out-dtype;
 * epilogue_check.c): the reference's epilogue and the allowance a result
 * gets for it on top of the bound of the value before it. */
#ifndef AGMM_TOOL_EPILOGUE_CHECK_H
#define AGMM_TOOL_EPILOGUE_CHECK_H

#include <stdint.h>

#include "tool.h"

/* Weight i's reference ref ([rows, n] fp32, the product or sum) becomes
 * the epilogue's result (agmm_reference_epilogue with t's bias of weight
 * i and the activation; a gated one packs it into [rows, n / 2]); raw
 * (may be NULL) receives ref as it was (the product, whose size the bound
 * before the epilogue is relative to) and pre (may be NULL) ref + bias,
 * the value before the activation (both [rows, n]). Returns 0 or 1. */
int agmm_tool_ref_epilogue(const agmm_tool_rank_t *t, int i, int64_t rows,
                           int64_t n, float *ref, float *raw, float *pre);

/* The bound of one element of C, from `before`, the bound the product
 * meets (allclose's, or int8's few roundings, relative to the product:
 * raw, not pre, whose bias may cancel it), pre (product + bias) and ref
 * (after the activation):
 *   slope * (before + 2^-24 |pre|) + 8 * 2^-24 * max(|pre|, |ref|)
 *   + h * |ref| + tiny
 * slope: the activation's largest (agmm_activation_max_slope: an error
 * before it grows by at most that); 2^-24 |pre|: the fp32 addition of the
 * bias; 8 ulps: the fp32 activation's own error (libm's tanhf/erff/expf
 * and the formula's roundings); h: half an ulp of the output dtype (2^-8
 * bf16, 2^-11 fp16, 0 fp32), the one rounding to it; tiny: fp16's
 * smallest subnormal step (2^-25, else 1e-30). */
double agmm_tool_epi_bound(const agmm_cli_t *cli, double before, double pre,
                           double ref);

/* The bound of element e of a [rows, nc] C (nc: agmm_tool_c_cols) after
 * agmm_tool_ref_epilogue, the product's own bound being rel * |raw| +
 * abs_: agmm_tool_epi_bound of raw[e], pre[e], ref[e]; with a gated
 * activation, raw and pre are [rows, 2 nc] ([gate | up] rows) and the
 * bound combines the gate's and the up's (epilogue_check.c, glu_bound). */
double agmm_tool_epi_bound_at(const agmm_cli_t *cli, double rel, double abs_,
                              const float *raw, const float *pre,
                              const float *ref, int64_t e, int64_t nc);

/* The same with each element's own bound before the epilogue: before
 * [rows, n] (n = 2 nc with a gated activation, else nc), absolute. */
double agmm_tool_epi_bound_each(const agmm_cli_t *cli, const double *before,
                                const float *pre, const float *ref, int64_t e,
                                int64_t nc);

/* Weight i's output of this round as fp32 (count elements): t->cs[i]
 * itself with an fp32 C, else converted exactly into t->c32s[i]. */
const float *agmm_tool_out_f32(const agmm_tool_rank_t *t, int i, int64_t count);

#endif
