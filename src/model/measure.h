/* Internal to the model and its command: agmm_model_measure (measure.c,
 * measure_mem.c) with what it found out besides the rates (the path it timed,
 * the engine's kernel, the columns and rows it covered, how long it took), for
 * `agmm model`'s header and --json (tools/agmm/model.c). */
#ifndef AGMM_MODEL_MEASURE_H
#define AGMM_MODEL_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "agmm_model.h"

typedef struct agmm_model_measure_info {
    /* The engine (never AUTO) and path (NATIVE or F32; fp32 inputs: F32)
     * the rates are for: desc's, AUTO resolved as a plan would (a 16-bit
     * dtype: both timed at a tile's rows, the faster per tile kept). */
    agmm_gemm_engine_kind_t engine;
    agmm_gemm_path_t path;
    char impl[64];    /* the kernel the engine picked for the largest call */
    int64_t k;        /* the inner dimension timed (gemm-rs/ar: largest part) */
    int64_t cols;     /* one GEMM worker's columns (the span timed) */
    int64_t min_cols; /* the fewest columns a large call was timed over */
    double seconds;   /* the whole measurement */
    /* Row counts wanted that were not timed (over the budget or the
     * memory cap): the model clamps them to the largest timed. */
    int skipped;
    /* The copy and reduce rates: the bytes of the buffer they were timed
     * over (a tile: measure.c), and on how many CPUs (2: putter and owner
     * on two, 1: the calling thread alone; measure_mem.c). */
    int64_t mem_bytes;
    int mem_cpus;
    /* Why the engine is not desc's AUTO one, or NULL: a quantized weight's
     * wq kernels, or agmm's bf16-weight kernel measured faster from memory
     * (as a plan picks it: ops/common/path_bf16w.c). */
    const char *engine_by;
    /* The weight-streaming floor (dram_gbs, agmm_model.h): the bytes of one
     * rank's prepared weight (the slowest rank's k), the last-level cache
     * sysfs names (0: none), the cache assumed (that, or a quarter of the
     * DRAM probe's buffer), the weights each rank uses in turn, and
     * whether ranks_per_host x weight_sets such weights outgrow it (then
     * m->dram_gbs is the probe's rate). */
    double weight_bytes;
    int64_t llc_bytes, cache_bytes;
    int weight_sets;
    int streams;
} agmm_model_measure_info_t;

/* agmm_model_measure, and (info non-NULL) what it timed. */
agmm_status_t agmm_model_measure_info(agmm_model_machine_t *m,
                                      const agmm_plan_desc_t *desc,
                                      double budget_s,
                                      agmm_model_measure_info_t *info);
/* The same for ranks that each use `weight_sets` (>= 1) weights in turn,
 * one a round (`agmm bench --weight-sets`, a model's layers): the weight
 * streams when ranks_per_host x weight_sets of them outgrow the cache. */
agmm_status_t agmm_model_measure_sets(agmm_model_machine_t *m,
                                      const agmm_plan_desc_t *desc,
                                      double budget_s, int weight_sets,
                                      agmm_model_measure_info_t *info);

/* The row counts to time for desc (measure_rows.c), sorted, at most
 * AGMM_MODEL_MAX_RATES into out[], each at most row_cap: 1, a tile, M,
 * each shard and each shard's last partial tile, then powers of two
 * between; over the limit the closest neighbours (in log rows) go first,
 * powers of two before the calls' own counts, the first and the last
 * never. *over_cap: how many wanted counts were above row_cap (timed at
 * row_cap instead). 0, or -1 when out of memory. */
int agmm_model_measure_rows(const agmm_plan_desc_t *desc, int64_t row_cap,
                            int64_t *out, int *n, int *over_cap);

/* copy_gbs and reduce_gbs over `bytes` (at least 4 KiB) within about
 * `slice` seconds (at least 3 iterations), a put and a sum as a round on
 * shared memory makes them: on two CPUs when this thread may use two
 * (*cpus 2), else on this thread alone (*cpus 1) (measure_mem.c). Every
 * thread it starts is joined before it returns. */
agmm_status_t agmm_model_measure_memory(size_t bytes, double slice,
                                        double *copy_gbs, double *reduce_gbs,
                                        int *cpus);

#endif
