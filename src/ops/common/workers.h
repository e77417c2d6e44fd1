/* Worker threads of one round. Each worker records its own status and
 * error line; the round reports the first real failure. */
#ifndef AGMM_OPS_WORKERS_H
#define AGMM_OPS_WORKERS_H

#include <pthread.h>

#include "agmm.h"
#include "common/util.h"

typedef struct agmm_worker agmm_worker_t;
typedef agmm_status_t (*agmm_worker_fn)(agmm_worker_t *self);

struct agmm_worker {
    /* Written by this worker only; read after join. */
    _Alignas(AGMM_CACHE_LINE) agmm_worker_fn fn;
    void *ctx;
    int index; /* within its role */
    pthread_t thread;
    agmm_status_t status;
    char error[400];
};

/* Run workers[0..n) concurrently (worker 0 on the calling thread) and join
 * them. On a failure the world is aborted so no peer waits for this rank
 * any longer. Returns the first failure, preferring a rank's own error over
 * AGMM_ERR_ABORTED (which only echoes another rank's), and prints it once
 * for the rank. */
agmm_status_t agmm_workers_run(agmm_world_t *world, agmm_worker_t *workers,
                               int n);

/* Run one round with the plan's comm and GEMM workers: GEMM workers get
 * indices 0..G-1 (worker 0 runs on the calling thread), comm workers
 * 0..C-1; every worker's ctx is `round`. */
struct agmm_round;
agmm_status_t agmm_round_run(struct agmm_round *round, agmm_worker_fn gemm_fn,
                             agmm_worker_fn comm_fn);

#endif
