/* agmm_trace_create: attaching a recorder to a plan. The plan hands the
 * trace what it needs (shape, lanes, an event bound) through an
 * agmm_trace_source_t; the trace never sees the plan (trace/ does not
 * include ops/). */
#include <stdlib.h>

#include "common/log.h"
#include "ops/common/plan.h"
#include "trace/trace.h"

/* An upper bound of the events one worker records in one round, from the
 * schedules (fused.c, baseline.c, run.c): per (local tile, peer) a put,
 * its publish and an ack wait; per tile of any source a wait, a conversion
 * and a GEMM; per peer a few shard-level events (baseline) and the acks;
 * the round itself. */
static size_t events_per_round(const agmm_plan_t *p)
{
    size_t P = (size_t)p->nranks;
    size_t mine = (size_t)p->tiles[p->rank];
    return 3 * mine * (P - 1) + 3 * (size_t)p->total_tiles + 4 * P + 8;
}

/* Called by the trace when recording stops (gather or destroy). */
static void plan_detach(void *owner, agmm_trace_t *t)
{
    agmm_plan_t *p = owner;
    if (p && agmm_plan_is_live(p) && p->trace == t) p->trace = NULL;
}

agmm_status_t agmm_trace_create(agmm_plan_t *p, int max_rounds,
                                agmm_trace_t **out)
{
    if (!p || !out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "trace_create: NULL argument");
    *out = NULL;
    if (!agmm_plan_is_live(p))
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "trace_create: the plan was destroyed or never made");
    if (p->trace)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "trace_create: the plan already has a trace");
    if (max_rounds < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "trace_create: max_rounds %d (allowed >= 1)",
                          max_rounds);
    agmm_trace_meta_t meta = {
        .nranks = p->nranks,
        .gemm_workers = p->desc.gemm_workers,
        .comm_workers = p->desc.comm_workers,
        .k = p->desc.k,
        .n = p->desc.n,
        .tile_m = p->desc.tile_m,
        .tile_n = p->desc.tile_n,
        .col_blocks = p->col_blocks,
        .total_tiles = p->total_tiles,
        .m_local = p->m_local,
        .tiles = p->tiles,
        .tile_base = p->tile_base,
        .dtype = agmm_dtype_name(p->desc.dtype),
    };
    agmm_trace_source_t src = {
        .world = p->world,
        .rank = p->rank,
        .converts = p->desc.dtype != AGMM_DTYPE_FP32,
        .meta = &meta,
        .events_per_round = events_per_round(p),
        .detach = plan_detach,
        .owner = p,
    };
    agmm_trace_t *t = NULL;
    AGMM_CHECK(agmm_trace_new(&src, max_rounds, &t));
    p->trace = t;
    *out = t;
    return AGMM_OK;
}
