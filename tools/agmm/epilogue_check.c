/* The epilogue's part of `agmm run`'s check (epilogue_check.h). */
#include "epilogue_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agmm_ext.h"

int agmm_tool_ref_epilogue(const agmm_tool_rank_t *t, int i, int64_t rows,
                           int64_t n, float *ref, float *raw, float *pre)
{
    const agmm_cli_t *cli = t->cli;
    const float *bias = cli->bias ? t->biases[i] : NULL;
    if (raw) memcpy(raw, ref, (size_t)(rows * n) * sizeof(float));
    if (agmm_reference_epilogue(rows, n, bias, AGMM_ACT_NONE, ref) != AGMM_OK)
        return 1;
    if (pre) memcpy(pre, ref, (size_t)(rows * n) * sizeof(float));
    return agmm_reference_epilogue(rows, n, NULL, cli->activation, ref) !=
           AGMM_OK;
}

double agmm_tool_epi_bound(const agmm_cli_t *cli, double before, double pre,
                           double ref)
{
    double slope = agmm_activation_max_slope(cli->activation);
    double h = cli->out_dtype == AGMM_DTYPE_BF16   ? 0x1p-8
               : cli->out_dtype == AGMM_DTYPE_FP16 ? 0x1p-11
                                                   : 0;
    double tiny = cli->out_dtype == AGMM_DTYPE_FP16 ? 0x1p-25 : 1e-30;
    double big = fabs(pre) > fabs(ref) ? fabs(pre) : fabs(ref);
    return slope * (before + 0x1p-24 * fabs(pre)) + 8 * 0x1p-24 * big +
           h * fabs(ref) + tiny;
}

/* A gated element's bound: out = act(g) * u (agmm.h), each of g and u
 * with its own bound before (bg, bu: the products'), s the gate
 * activation's largest slope:
 *   eg = s (bg + 2^-24 |g|) + 8 * 2^-24 max(|g|, |act(g)|)
 *     (the bias's addition, then the fp32 activation, as agmm_tool_epi_bound)
 *   eu = bu + 2^-24 |u|                              (the bias's addition)
 *   |out - ref| <= eg |u| + (|act(g)| + eg) eu + 2 * 2^-24 |ref|
 *                  + h |ref| + tiny
 * (2 ulps: the fp32 multiply and the reference's rounding to fp32; h and
 * tiny as agmm_tool_epi_bound). act(g) is ref / u where u is not 0, else
 * bounded by |g| s. */
static double glu_bound(const agmm_cli_t *cli, double bg, double bu, double g,
                        double u, double ref)
{
    double s = agmm_activation_max_slope(cli->activation);
    double h = cli->out_dtype == AGMM_DTYPE_BF16   ? 0x1p-8
               : cli->out_dtype == AGMM_DTYPE_FP16 ? 0x1p-11
                                                   : 0;
    double tiny = cli->out_dtype == AGMM_DTYPE_FP16 ? 0x1p-25 : 1e-30;
    double act = u != 0 ? fabs(ref / u) : s * fabs(g);
    double big = fabs(g) > act ? fabs(g) : act;
    double eg = s * (bg + 0x1p-24 * fabs(g)) + 8 * 0x1p-24 * big;
    double eu = bu + 0x1p-24 * fabs(u);
    return eg * fabs(u) + (act + eg) * eu + (2 * 0x1p-24 + h) * fabs(ref) +
           tiny;
}

double agmm_tool_epi_bound_at(const agmm_cli_t *cli, double rel, double abs_,
                              const float *raw, const float *pre,
                              const float *ref, int64_t e, int64_t nc)
{
    if (agmm_activation_gate(cli->activation) == AGMM_ACT_NONE)
        return agmm_tool_epi_bound(cli, rel * fabs((double)raw[e]) + abs_,
                                   pre[e], ref[e]);
    int64_t g = e / nc * 2 * nc + e % nc, u = g + nc;
    return glu_bound(cli, rel * fabs((double)raw[g]) + abs_,
                     rel * fabs((double)raw[u]) + abs_, pre[g], pre[u], ref[e]);
}

double agmm_tool_epi_bound_each(const agmm_cli_t *cli, const double *before,
                                const float *pre, const float *ref, int64_t e,
                                int64_t nc)
{
    if (agmm_activation_gate(cli->activation) == AGMM_ACT_NONE)
        return agmm_tool_epi_bound(cli, before[e], pre[e], ref[e]);
    int64_t g = e / nc * 2 * nc + e % nc, u = g + nc;
    return glu_bound(cli, before[g], before[u], pre[g], pre[u], ref[e]);
}

const float *agmm_tool_out_f32(const agmm_tool_rank_t *t, int i, int64_t count)
{
    if (t->cli->out_dtype == AGMM_DTYPE_FP32) return t->cs[i];
    /* bf16 and fp16 widen to fp32 exactly. */
    agmm_convert_to_fp32(t->cli->out_dtype, t->cs[i], t->c32s[i],
                         (size_t)count);
    return t->c32s[i];
}
