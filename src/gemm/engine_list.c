/* The list of GEMM engines (engine_list.h) and the selection over it:
 * the first entry that applies to a request. The order is the choice:
 * oneDNN before OpenBLAS for AUTO, the quantized wq engine before wq's
 * bf16-weight one for the WQ kind. */
#include "gemm/engine_list.h"

#include <stddef.h>
#include <string.h>

#define ALL_DTYPES                                                             \
    ((1u << AGMM_DTYPE_FP16) | (1u << AGMM_DTYPE_BF16) |                       \
     (1u << AGMM_DTYPE_FP32) | (1u << AGMM_DTYPE_INT8))

static const agmm_gemm_entry_t list[] = {
#ifdef AGMM_HAVE_ONEDNN /* the build option: -DAGMM_ONEDNN=ON */
    {&agmm_gemm_engine_onednn, AGMM_GEMM_CAP_AUTO | AGMM_GEMM_CAP_PLAIN_W,
     ALL_DTYPES, NULL},
#endif
    /* int8 A: input_dtype says fp32, and plans refuse it (no exact path) */
    {&agmm_gemm_engine_openblas, AGMM_GEMM_CAP_AUTO | AGMM_GEMM_CAP_PLAIN_W,
     ALL_DTYPES, NULL},
    {&agmm_gemm_engine_wq, AGMM_GEMM_CAP_AUTO | AGMM_GEMM_CAP_QUANT_W,
     ALL_DTYPES & ~(1u << AGMM_DTYPE_INT8), NULL},
    {&agmm_gemm_engine_wq_bf16, AGMM_GEMM_CAP_PLAIN_W, 1u << AGMM_DTYPE_BF16,
     NULL},
};

static int applies(const agmm_gemm_entry_t *e, const agmm_gemm_request_t *r)
{
    if (r->kind == AGMM_GEMM_ENGINE_AUTO ? !(e->caps & AGMM_GEMM_CAP_AUTO)
                                         : e->engine->kind != r->kind)
        return 0;
    if (r->dtype >= 0 &&
        (r->dtype > AGMM_DTYPE_INT8 || !(e->dtypes & (1u << r->dtype))))
        return 0;
    if (r->weight == AGMM_GEMM_W_PLAIN && !(e->caps & AGMM_GEMM_CAP_PLAIN_W))
        return 0;
    if (r->weight == AGMM_GEMM_W_QUANT && !(e->caps & AGMM_GEMM_CAP_QUANT_W))
        return 0;
    return !e->cpu_ok || e->cpu_ok();
}

const agmm_gemm_engine_t *agmm_gemm_engine_find(const agmm_gemm_request_t *r)
{
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (applies(&list[i], r)) return list[i].engine;
    return NULL;
}

const agmm_gemm_engine_t *agmm_gemm_engine_get(agmm_gemm_engine_kind_t kind)
{
    agmm_gemm_request_t r = {kind, -1, AGMM_GEMM_W_ANY};
    return agmm_gemm_engine_find(&r);
}

const agmm_gemm_engine_t *agmm_gemm_engine_of_desc(const agmm_plan_desc_t *d)
{
    agmm_gemm_request_t r = {d->gemm_engine, (int)d->dtype,
                             d->weight_dtype != AGMM_WDTYPE_SAME
                                 ? AGMM_GEMM_W_QUANT
                                 : AGMM_GEMM_W_PLAIN};
    return agmm_gemm_engine_find(&r);
}

/* The kinds' names (agmm.h), built in or not: the messages name an engine
 * a build lacks. */
static const char *const kind_names[] = {
    [AGMM_GEMM_ENGINE_AUTO] = "auto",
    [AGMM_GEMM_ENGINE_ONEDNN] = "onednn",
    [AGMM_GEMM_ENGINE_OPENBLAS] = "openblas",
    [AGMM_GEMM_ENGINE_WQ] = "wq",
};

const char *agmm_gemm_engine_name(agmm_gemm_engine_kind_t kind)
{
    if ((unsigned)kind >= sizeof kind_names / sizeof kind_names[0])
        return "invalid";
    return kind_names[kind];
}

int agmm_gemm_engine_from_name(const char *name)
{
    for (size_t k = 0; name && k < sizeof kind_names / sizeof kind_names[0];
         k++)
        if (kind_names[k] && !strcmp(name, kind_names[k])) return (int)k;
    return -1;
}

int agmm_gemm_engine_available(agmm_gemm_engine_kind_t kind)
{
    return agmm_gemm_engine_get(kind) != NULL;
}
