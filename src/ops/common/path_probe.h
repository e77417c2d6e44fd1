/* The GEMM path probe (path_probe.c), shared by path.c and path_bf16w.c
 * (the bf16w candidate, issue 48): the key a measurement is cached under,
 * its result, the measurement itself, the per-process cache and the tests'
 * hook; and path_bf16w.c's candidate, which path.c calls. */
#ifndef AGMM_OPS_COMMON_PATH_PROBE_H
#define AGMM_OPS_COMMON_PATH_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"
#include "gemm/engine.h"
#include "ops/common/path.h"

typedef struct probe_key {
    agmm_gemm_engine_kind_t engine;
    agmm_dtype_t dtype;
    int64_t k, ncols, rows;
} probe_key_t;

/* One rank's measurement of both paths for one key (+inf: not a path
 * here). */
typedef struct probe_result {
    double call_us[2], conv_us[2]; /* [native, f32] */
    double gflops[2];
    char impl[2][64];
} probe_result_t;

/* Time engine e on key's dtype, k and rows over a slice of `cols`
 * columns into r's slot 0 (native) or 1 (f32; INT8: u8 x s8); evict
 * (evict_bytes, or NULL): read before each call, so the slice streams
 * from memory. Logged errors. */
agmm_status_t agmm_path_probe(const agmm_gemm_engine_t *e,
                              const probe_key_t *key, int64_t cols, int f32,
                              probe_result_t *r, const unsigned char *evict,
                              size_t evict_bytes);
/* The per-process cache (mutex-guarded): 1 and *out when found. */
int agmm_path_cache_find(const probe_key_t *k, probe_result_t *out);
void agmm_path_cache_add(const probe_key_t *k, const probe_result_t *r);
/* The tests' probe hook (agmm_path_set_probe, path.h), or NULL; is it
 * set? */
agmm_path_probe_fn agmm_path_probe_hook(void);
int agmm_path_probe_overridden(void);

/* path_bf16w.c: the bf16w candidate for a bf16 AUTO-engine plan (its
 * comment); collective (an allgather on every rank). ok: this rank has a
 * geometry and the engine's paths were measured; calls: the round's
 * calls. May set p->engine to the wq engine and p->path to native. */
agmm_status_t agmm_path_bf16w_choose(agmm_plan_t *p, const probe_key_t *key,
                                     int ok, double calls);
/* The candidate's parts, which the model's measurement calls too
 * (src/model/measure.c), so that it picks the engine a plan picks:
 * applies: key's calls are few rows (at most 32), no test hook replaces
 * the probe, AGMM_BF16W_AUTO is on. measure: one call of key's rows over
 * all key's columns, us, [0] agmm's bf16-weight kernel, [1] engine
 * `native`'s native path, each measured with the weight streamed from
 * memory when it outgrows the largest cache, or found in the per-process
 * cache; *ms (when not NULL) grows by the time spent measuring. */
int agmm_path_bf16w_applies(const probe_key_t *key);
agmm_status_t agmm_path_bf16w_measure(const agmm_gemm_engine_t *native,
                                      const probe_key_t *key, double call_us[2],
                                      double *ms);

#endif /* AGMM_OPS_COMMON_PATH_PROBE_H */
