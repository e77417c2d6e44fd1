/* The GEMM path of a plan (agmm_gemm_path_t): for AGMM_GEMM_PATH_AUTO,
 * the measurement that picks one at plan creation, the only collective
 * step of a plan's own part (which paths the engine has for the plan's
 * dtype is path_rules.c).
 *
 * The measurement (each rank, on the thread that creates the plan, which
 * is its GEMM worker 0's): for each candidate, one prepared weight slice
 * of the plan's inner dimension and up to 256 columns (512 for a call of
 * at most 32 rows, whose weight streaming matters more than its compute),
 * one warm-up call and three timed ones at the plan's usual call rows (a
 * tile, or all its rows when fewer), the best of them; for the fp32 path
 * also the conversion of those rows to fp32, which a round does once per
 * row whatever the columns. The round's predicted GEMM time is then
 * rows/call x (call x columns/slice + conversion). The inputs are zeros:
 * a GEMM's speed does not depend on the values, except for subnormals,
 * which zeros are not.
 *
 * Agreement: every rank allgathers its two predicted times (native, f32;
 * +inf for a path it does not have, or whose booking does not fit in this
 * host's available memory over the ranks sharing it), and every rank
 * picks the path whose
 * slowest rank is fastest (a tie goes to native: fewer bytes), so every
 * rank computes the same way from the same numbers. The allgather happens
 * for every AUTO plan of a 16-bit dtype, measured or not, so that every
 * rank makes the same collective calls.
 *
 * Cache (path_probe.c, with the timing itself): per process, keyed by (engine,
 * dtype, k, columns, call rows): a plan whose shape was measured before times
 * nothing. Guarded by a mutex (plans are created by one thread per world, but a
 * process may hold several worlds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "ops/common/book.h"
#include "ops/common/path.h"
#include "ops/common/path_probe.h"
#include "ops/common/plan.h"
#include "ops/common/plan_book.h"

/* ------------------------------------------------------------ memory */

/* What this host's memory allows one rank: MemAvailable over the ranks
 * that share it (a shared-memory world: all of them; under MPI the count
 * per host is not known here: this rank alone). 0: unknown, no limit. */
static uint64_t memory_limit(const agmm_plan_t *p)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
    fclose(f);
    int here =
        strcmp(agmm_world_transport_name(p->world), "shm") ? 1 : p->nranks;
    return (uint64_t)kib * 1024u / (uint64_t)here;
}

/* The bytes this rank's plan books on `path` (0 on failure). */
static uint64_t bytes_on(agmm_plan_t *p, agmm_gemm_path_t path)
{
    agmm_book_t b;
    agmm_plan_set_path(p, path);
    return agmm_plan_book(p, &b) == AGMM_OK ? agmm_book_total(&b) : 0;
}

/* ------------------------------------------------------------ choosing */

int agmm_path_decide(const double *round_us, int nranks)
{
    double worst[2] = {0, 0};
    for (int r = 0; r < nranks; r++)
        for (int i = 0; i < 2; i++)
            worst[i] = AGMM_MAX(worst[i], round_us[2 * r + i]);
    return worst[1] < worst[0] ? 1 : 0; /* a tie: native */
}

agmm_status_t agmm_path_choose(agmm_plan_t *p, const agmm_plan_desc_t *d,
                               uint64_t bound_bytes, int ok)
{
    agmm_path_probe_fn probe_override = agmm_path_probe_hook();
    const agmm_gemm_engine_t *e = p->engine;
    agmm_path_choice_t *c = &p->choice;
    memset(c, 0, sizeof *c);
    int native = agmm_path_has_native(e, d->dtype);
    /* INT8 has one path (native: path_check) and, on it, two variants to
     * measure: s8 x s8, and A shifted to u8 with the compensation (their
     * results are the same bits); a forced native takes s8 x s8. */
    int int8 = d->dtype == AGMM_DTYPE_INT8;
    p->int8_u8 = 0;
    if (int8 && d->gemm_path != AGMM_GEMM_PATH_AUTO) {
        c->by = "forced";
        p->path = AGMM_GEMM_PATH_NATIVE;
        return AGMM_OK;
    }
    /* A quantized weight: the wq kernels read the dtype itself (they
     * widen A's rows to fp32 in their own scratch), so AUTO is native, not
     * measured (every rank has the same description: no allgather). */
    if (d->weight_dtype != AGMM_WDTYPE_SAME &&
        d->gemm_path == AGMM_GEMM_PATH_AUTO) {
        c->by = "only";
        p->path = d->dtype == AGMM_DTYPE_FP32 ? AGMM_GEMM_PATH_F32
                                              : AGMM_GEMM_PATH_NATIVE;
        return AGMM_OK;
    }
    if (d->gemm_path != AGMM_GEMM_PATH_AUTO || d->dtype == AGMM_DTYPE_FP32) {
        c->by = d->gemm_path == AGMM_GEMM_PATH_AUTO ? "only" : "forced";
        p->path =
            d->dtype == AGMM_DTYPE_FP32 ? AGMM_GEMM_PATH_F32 : d->gemm_path;
        return AGMM_OK;
    }
    /* The call every round makes most: a tile, or all rows when fewer. */
    probe_key_t key = {e->kind, d->dtype, p->k_gemm, 0,
                       AGMM_MIN(d->tile_m, AGMM_MAX(p->max_rows, 1))};
    for (int i = 0; ok && i < p->nw; i++)
        key.ncols += p->n_w[i];
    probe_result_t res = {{INFINITY, INFINITY}, {0, 0}, {0, 0}, {"", ""}};
    double t0 = agmm_now();
    agmm_status_t st = AGMM_OK;
    if (!ok) { /* no geometry: only the allgather (then the failure) */
        c->by = "only";
        st = AGMM_ERR_NO_MEMORY;
    } else if (key.k == 0) { /* no GEMM here: no preference */
        c->by = "only";
        res.call_us[0] = res.call_us[1] = 0;
    } else if (!native) { /* still in the allgather below, as every rank */
        c->by = "only";
        res.call_us[1] = 0;
    } else if (agmm_path_cache_find(&key, &res)) {
        c->by = "cached";
    } else {
        c->by = "measured";
        int64_t cols = AGMM_MIN(key.ncols, key.rows <= 32 ? 512 : 256);
        for (int f32 = 0; f32 < 2 && st == AGMM_OK; f32++)
            st = probe_override
                     ? probe_override(p->rank, f32, &res.call_us[f32],
                                      &res.conv_us[f32])
                     : agmm_path_probe(e, &key, cols, f32, &res, NULL, 0);
        for (int f32 = 0; f32 < 2; f32++) /* per column: to the whole width */
            res.call_us[f32] *= (double)key.ncols / (double)cols;
        if (st == AGMM_OK && !probe_override) agmm_path_cache_add(&key, &res);
        c->ms = (agmm_now() - t0) * 1e3;
    }
    /* A path whose memory does not fit is no candidate (mine: +inf). The
     * exact bookings build engine descriptors: only when a bound that
     * needs none (the buffers without the engine, and twice an fp32 copy
     * of the weights for the engine) does not fit. */
    uint64_t limit = ok && strcmp(c->by, "only") && !int8 ? memory_limit(p) : 0;
    if (limit > 0) {
        uint64_t bound = bound_bytes;
        bound += 8u * (uint64_t)key.k * (uint64_t)key.ncols;
        if (bound > 0 && bound <= limit) limit = 0; /* both fit */
    }
    int fits[2] = {1, 1};
    for (int i = 0; i < 2 && limit > 0; i++) {
        uint64_t need =
            bytes_on(p, i ? AGMM_GEMM_PATH_F32 : AGMM_GEMM_PATH_NATIVE);
        fits[i] = need > 0 && need <= limit;
    }
    if (!fits[0] && !fits[1]) fits[0] = fits[1] = 1; /* the create fails */
    /* This rank's predicted GEMM time of one round per path. */
    double calls = (double)AGMM_DIV_UP(AGMM_MAX(p->M_max, 1), key.rows);
    double mine[2], *all = agmm_alloc(sizeof mine * (size_t)p->nranks);
    for (int i = 0; i < 2; i++)
        mine[i] = st == AGMM_OK && fits[i]
                      ? calls * (res.call_us[i] + res.conv_us[i])
                      : INFINITY;
    agmm_status_t st2 =
        all ? agmm_world_allgather(p->world, mine, all, sizeof mine)
            : agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    if (st == AGMM_OK) st = st2;
    if (!ok) st = AGMM_OK; /* the caller has the geometry's failure */
    if (st == AGMM_OK && ok) {
        int pick = agmm_path_decide(all, p->nranks);
        p->path = pick && !int8 ? AGMM_GEMM_PATH_F32 : AGMM_GEMM_PATH_NATIVE;
        p->int8_u8 = int8 && pick;
        c->n = strcmp(c->by, "only") ? 2 : 0;
        for (int i = 0; i < 2; i++) {
            double worst = 0, gf = INFINITY;
            for (int r = 0; r < p->nranks; r++)
                worst = AGMM_MAX(worst, all[2 * r + i]);
            c->round_us[i] = worst;
            if (res.call_us[i] > 0 && isfinite(res.call_us[i]))
                gf = 2e-3 * (double)key.rows * (double)key.k *
                     (double)key.ncols / res.call_us[i];
            c->gflops[i] = isfinite(gf) ? gf : 0;
            snprintf(c->impl[i], sizeof c->impl[i], "%s", res.impl[i]);
        }
    }
    agmm_free(all);
    /* bf16w (issue 48): agmm's bf16-weight kernel as a third candidate */
    if (d->dtype == AGMM_DTYPE_BF16 && d->weight_dtype == AGMM_WDTYPE_SAME &&
        d->gemm_engine == AGMM_GEMM_ENGINE_AUTO) {
        agmm_status_t st3 = agmm_path_bf16w_choose(
            p, &key, ok && st == AGMM_OK && c->n == 2, calls);
        if (st == AGMM_OK && ok) st = st3;
    }
    return st;
}
