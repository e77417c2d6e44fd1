/* The epilogue's part of `agmm run`'s check (epilogue_check.h). */
#include "epilogue_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agmm_ext.h"

int agmm_tool_has_epilogue(const agmm_cli_t *cli)
{
    return cli->bias || cli->activation != AGMM_ACT_NONE ||
           cli->out_dtype != AGMM_DTYPE_FP32;
}

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

const float *agmm_tool_out_f32(const agmm_tool_rank_t *t, int i, int64_t count)
{
    if (t->cli->out_dtype == AGMM_DTYPE_FP32) return t->cs[i];
    /* bf16 and fp16 widen to fp32 exactly. */
    agmm_convert_to_fp32(t->cli->out_dtype, t->cs[i], t->c32s[i],
                         (size_t)count);
    return t->c32s[i];
}
