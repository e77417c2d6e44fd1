/* The GEMM paths' rules (agmm_gemm_path_t), pure functions of an engine
 * and a dtype: which paths the engine has for a dtype (the public
 * agmm_gemm_path_available, and has_native), what the engine reads on a
 * path, and a description's gemm_path checked against them (a step of
 * the descriptor, desc.c). Calls nothing of a plan; path.c measures. */
#include "common/log.h"
#include "gemm/engine_list.h"
#include "ops/common/path.h"

const char *agmm_gemm_path_name(agmm_gemm_path_t path)
{
    switch (path) {
    case AGMM_GEMM_PATH_AUTO:
        return "auto";
    case AGMM_GEMM_PATH_NATIVE:
        return "native";
    case AGMM_GEMM_PATH_F32:
        return "f32";
    }
    return "invalid";
}

int agmm_path_has_native(const agmm_gemm_engine_t *e, agmm_dtype_t dt)
{
    return dt != AGMM_DTYPE_FP32 && e->input_dtype(dt) == dt;
}

int agmm_gemm_path_available(agmm_gemm_engine_kind_t kind, agmm_dtype_t dtype,
                             agmm_gemm_path_t path)
{
    const agmm_gemm_engine_t *e = agmm_gemm_engine_get(kind);
    if (!e || agmm_dtype_size(dtype) == 0) return 0;
    if (dtype == AGMM_DTYPE_INT8) /* integer dot products or nothing */
        return (path == AGMM_GEMM_PATH_AUTO || path == AGMM_GEMM_PATH_NATIVE) &&
               agmm_path_has_native(e, dtype);
    if (path == AGMM_GEMM_PATH_AUTO || path == AGMM_GEMM_PATH_F32) return 1;
    return path == AGMM_GEMM_PATH_NATIVE &&
           (dtype == AGMM_DTYPE_FP32 || agmm_path_has_native(e, dtype));
}

agmm_dtype_t agmm_path_gemm_dtype(agmm_dtype_t dt, agmm_gemm_path_t path)
{
    return path == AGMM_GEMM_PATH_NATIVE ? dt : AGMM_DTYPE_FP32;
}

agmm_status_t agmm_path_check(const agmm_plan_desc_t *d,
                              const agmm_gemm_engine_t *e)
{
    agmm_gemm_path_t path = d->gemm_path;
    if (path != AGMM_GEMM_PATH_AUTO && path != AGMM_GEMM_PATH_NATIVE &&
        path != AGMM_GEMM_PATH_F32)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: gemm_path %d is not valid (allowed: auto, "
                          "native, f32)",
                          (int)path);
    if (d->dtype == AGMM_DTYPE_INT8 && !agmm_path_has_native(e, d->dtype))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: dtype int8 needs exact int8 products, which "
                          "the %s engine does not have here: %s",
                          e->name, e->why_not_native(d->dtype));
    if (d->dtype == AGMM_DTYPE_INT8 && path == AGMM_GEMM_PATH_F32)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: gemm_path f32 with dtype int8 (int8 runs "
                          "on integer dot products; allowed: auto, native)");
    if (path == AGMM_GEMM_PATH_NATIVE && d->dtype != AGMM_DTYPE_FP32 &&
        !agmm_path_has_native(e, d->dtype))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: gemm_path native: the %s engine has no "
                          "native %s kernel on this CPU (allowed here: auto, "
                          "f32)",
                          e->name, agmm_dtype_name(d->dtype));
    return AGMM_OK;
}
