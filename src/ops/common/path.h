/* The GEMM path of a plan (agmm_gemm_path_t): its rules (path_rules.c:
 * pure, what an engine has for a dtype) and its choice at plan creation
 * (path.c: measured for AUTO, collective). */
#ifndef AGMM_OPS_PATH_H
#define AGMM_OPS_PATH_H

#include <stdint.h>

#include "agmm.h"
#include "gemm/engine.h"

/* How a plan's GEMM path was chosen (path.c): by "forced", "only",
 * "measured" or "cached"; for the last two, both candidates [native, f32]
 * (INT8: [s8 x s8, u8 x s8] on its one path)
 * with the slowest rank's predicted GEMM time of a round, this rank's rate
 * and the implementation the probe ran; the time spent measuring. */
typedef struct agmm_path_choice {
    const char *by;
    int n;
    double round_us[2], gflops[2];
    char impl[2][64];
    double ms;
} agmm_path_choice_t;

/* (path_rules.c) has_native: does engine e read dtype dt itself.
 * gemm_dtype: what the engine reads on a path. check: the description's
 * gemm_path (a forced path the engine lacks: UNSUPPORTED).
 * (path.c) choose: p->path and p->choice for a plan with its geometry (ok
 * 0: the geometry failed: it only takes part in the collective;
 * collective for AUTO with a 16-bit dtype: one allgather); bound: the
 * descriptor's bytes per rank with the engine's share bounded (pd.h),
 * which decides whether the exact bookings must be compared with the
 * memory available. decide: the path index (0
 * native, 1 f32) whose slowest rank is fastest, from nranks pairs of
 * predicted times. set_probe: a test replaces the measurement (per rank
 * and path, the call and conversion times in us; NULL: measure). */
int agmm_path_has_native(const agmm_gemm_engine_t *e, agmm_dtype_t dt);
agmm_dtype_t agmm_path_gemm_dtype(agmm_dtype_t dt, agmm_gemm_path_t path);
agmm_status_t agmm_path_check(const agmm_plan_desc_t *d,
                              const agmm_gemm_engine_t *e);
agmm_status_t agmm_path_choose(agmm_plan_t *p, const agmm_plan_desc_t *d,
                               uint64_t bound, int ok);
int agmm_path_decide(const double *round_us, int nranks);
typedef agmm_status_t (*agmm_path_probe_fn)(int rank, int f32, double *call_us,
                                            double *conv_us);
void agmm_path_set_probe(agmm_path_probe_fn fn);

#endif
