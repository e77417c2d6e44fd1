/* The attributes' epilogue pass; see epilogue.h. */
#include "gemm/epilogue.h"

#include <math.h>
#include <stddef.h>

#include "gemm/convert.h"

float agmm_gemm_act_f32(agmm_gemm_act_t act, float x)
{
    switch (act) {
    case AGMM_GEMM_ACT_NONE:
        return x;
    case AGMM_GEMM_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case AGMM_GEMM_ACT_GELU_TANH: {
        const float s = 0.7978845608028654f; /* sqrt(2 / pi) */
        return 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
    }
    case AGMM_GEMM_ACT_GELU_ERF:
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case AGMM_GEMM_ACT_SILU:
        return x / (1.0f + expf(-x));
    }
    return x;
}

/* C_old[j] of one row of c in dtype dt. */
static float old_value(agmm_dtype_t dt, const void *row, int64_t j)
{
    switch (dt) {
    case AGMM_DTYPE_FP32:
        return ((const float *)row)[j];
    case AGMM_DTYPE_BF16:
        return agmm_bf16_to_f32(((const uint16_t *)row)[j]);
    case AGMM_DTYPE_FP16:
        return agmm_fp16_to_f32(((const uint16_t *)row)[j]);
    case AGMM_DTYPE_INT8: /* never a C dtype (agmm_gemm_check) */
        break;
    }
    return 0.0f;
}

void agmm_gemm_epilogue(const agmm_gemm_attr_t *attr, int64_t m, int64_t ncols,
                        float *acc, int64_t ldacc, const float *a_scale,
                        const float *w_scale, const float *bias, void *c,
                        int64_t ldc)
{
    size_t es = agmm_dtype_size(attr->c_dtype);
    for (int64_t i = 0; i < m; i++) {
        float *v = acc + (size_t)i * (size_t)ldacc;
        unsigned char *crow = (unsigned char *)c + (size_t)i * (size_t)ldc * es;
        for (int64_t j = 0; j < ncols; j++) {
            float x = v[j];
            if (w_scale) x *= w_scale[j];
            if (a_scale) x *= a_scale[i];
            if (bias) x += bias[j];
            if (attr->accumulate) x += old_value(attr->c_dtype, crow, j);
            v[j] = agmm_gemm_act_f32(attr->act, x);
        }
        if (attr->c_dtype != AGMM_DTYPE_FP32 || (void *)v != (void *)crow)
            agmm_convert_from_f32(attr->c_dtype, v, crow, (size_t)ncols);
    }
}
