/* The engine registry: which engines are built, and the process-wide count
 * of engine primitives created (the "nothing is created in a round"
 * check of tests/test_gemm_engine.c and agmm_plan_gemm_info). */
#include "gemm/engine.h"

#include <stdatomic.h>

#include "common/util.h"

/* Bumped by prepare() on the plan owner's thread, read by anyone: its own
 * cache line, relaxed (a count, ordering nothing). */
static struct {
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t n;
} created;

void agmm_gemm_engine_count_creation(void)
{
    atomic_fetch_add_explicit(&created.n, 1, memory_order_relaxed);
}

uint64_t agmm_gemm_engine_created(void)
{
    return atomic_load_explicit(&created.n, memory_order_relaxed);
}

const agmm_gemm_engine_t *agmm_gemm_engine_get(agmm_gemm_engine_kind_t kind)
{
    switch (kind) {
    case AGMM_GEMM_ENGINE_AUTO:
#ifdef AGMM_HAVE_ONEDNN
        return &agmm_gemm_engine_onednn;
#else
        return &agmm_gemm_engine_openblas;
#endif
    case AGMM_GEMM_ENGINE_ONEDNN:
#ifdef AGMM_HAVE_ONEDNN
        return &agmm_gemm_engine_onednn;
#else
        return NULL;
#endif
    case AGMM_GEMM_ENGINE_OPENBLAS:
        return &agmm_gemm_engine_openblas;
    }
    return NULL;
}

const char *agmm_gemm_engine_name(agmm_gemm_engine_kind_t kind)
{
    switch (kind) {
    case AGMM_GEMM_ENGINE_AUTO:
        return "auto";
    case AGMM_GEMM_ENGINE_ONEDNN:
        return "onednn";
    case AGMM_GEMM_ENGINE_OPENBLAS:
        return "openblas";
    }
    return "invalid";
}

int agmm_gemm_engine_available(agmm_gemm_engine_kind_t kind)
{
    return agmm_gemm_engine_get(kind) != NULL;
}
