/* agmm_plan_gemm_info (agmm.h): what a plan's GEMM engine is and did,
 * for reports, read from the plan's engine side (gemm_plan.c) and its
 * path choice (path.c). The plan owner's thread. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "gemm/epilogue.h"
#include "ops/common/plan.h"

/* The segments with an engine call (none on an empty inner part). */
static int nsegs(const agmm_plan_t *p)
{
    return p->k_gemm > 0 ? p->seg_off[p->ngroups] : 0;
}

agmm_status_t agmm_plan_gemm_info(const agmm_plan_t *p, agmm_gemm_info_t *info)
{
    if (!p || !info)
        return agmm_error(AGMM_ERR_INVALID_ARG, "gemm_info: NULL argument");
    if (!agmm_plan_is_live(p))
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "gemm_info: the plan was destroyed or never made");
    memset(info, 0, sizeof *info);
    info->engine = p->engine->kind;
    info->name = p->engine->name;
    info->version = p->engine->version();
    snprintf(info->impl, sizeof info->impl, "%s",
             p->ngroups > 0 && p->seg[0].prep ? p->engine->impl(p->seg[0].prep)
                                              : "");
    info->threads_per_call =
        p->engine->kind == AGMM_GEMM_ENGINE_OPENBLAS ? agmm_blas_threads() : 1;
    info->primitives_created = agmm_gemm_engine_created();
    info->path = p->path;
    info->chosen_by = p->choice.by ? p->choice.by : "forced";
    info->candidates = p->choice.n;
    info->int8_variant = !p->int8 ? NULL : p->int8_u8 ? "u8s8" : "s8s8";
    for (int i = 0; i < p->choice.n; i++) {
        info->candidate[i].path =
            i && !p->int8 ? AGMM_GEMM_PATH_F32 : AGMM_GEMM_PATH_NATIVE;
        info->candidate[i].round_us = p->choice.round_us[i];
        info->candidate[i].gflops = p->choice.gflops[i];
        snprintf(info->candidate[i].impl, sizeof info->candidate[i].impl, "%s",
                 p->choice.impl[i]);
    }
    info->choose_ms = p->choice.ms;
    int pass = 0;
    for (int j = 0; j < nsegs(p); j++)
        pass += p->seg[j].pass;
    info->epilogue = !p->epilogue                                ? "none"
                     : !(p->epilogue && p->op->epilogue_in_gemm) ? "pass"
                     : pass == nsegs(p)                          ? "pass"
                     : pass > 0                                  ? "mixed"
                                                                 : "engine";
    info->epilogue_isa = agmm_gemm_epilogue_isa();
    return AGMM_OK;
}
