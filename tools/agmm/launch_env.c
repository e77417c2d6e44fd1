/* Each rank's environment under agmm launch (launch.h): agmm's joined-
 * world variables (agmm_world_from_env reads AGMM_RANK, AGMM_WORLD_SIZE,
 * AGMM_JOB first), torchrun's (RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT: torch.distributed's env://
 * rendezvous; USE_LIBUV=0 unless the user set it: a torch built without
 * libuv, as Debian 13's 2.6, fails that rendezvous otherwise, and torch's
 * store without libuv works on every torch), and for a bound rank its
 * CPUs (AGMM_BIND_CPUS, which the library's joined ranks pin their
 * workers to: src/place/bind.c) and OMP_NUM_THREADS (its CPU count,
 * unless the user set it). */
#include <stdio.h>
#include <stdlib.h>

#include "common/param.h"
#include "launch.h"

int agmm_launch_env(const agmm_launch_job_t *j, int r, char **env, int max,
                    char *store, size_t len)
{
    int n = 0;
    size_t at = 0;
#define PUT(...)                                                               \
    do {                                                                       \
        if (n < max && at < len) {                                             \
            int w_ = snprintf(store + at, len - at, __VA_ARGS__);              \
            if (w_ >= 0 && (size_t)w_ < len - at) {                            \
                env[n++] = store + at;                                         \
                at += (size_t)w_ + 1;                                          \
            }                                                                  \
        }                                                                      \
    } while (0)
/* The names of the parameter table's rows (common/param.h). */
#define NAME(id) agmm_param(AGMM_PARAM_##id)->name
    PUT("%s=%d", NAME(RANK), r);
    PUT("%s=%d", NAME(WORLD_SIZE), j->nranks);
    PUT("%s=%s", NAME(JOB), j->job);
    PUT("%s=%d", NAME(EXT_RANK), r);
    PUT("LOCAL_RANK=%d", r); /* torch's alone: agmm never reads it */
    PUT("%s=%d", NAME(EXT_WORLD_SIZE), j->nranks);
    PUT("%s=%d", NAME(EXT_LOCAL_WORLD_SIZE), j->nranks);
    PUT("%s=127.0.0.1", NAME(EXT_MASTER_ADDR));
    PUT("%s=%d", NAME(EXT_MASTER_PORT), j->master_port);
    if (!agmm_param_is_set(AGMM_PARAM_EXT_USE_LIBUV))
        PUT("%s=0", NAME(EXT_USE_LIBUV));
    if (j->place.bound) {
        char cpus[4200];
        agmm_cpuset_format(&j->place.rank[r].cpus, cpus, sizeof cpus);
        PUT("%s=%s", NAME(BIND_CPUS), cpus);
        if (!agmm_param_is_set(AGMM_PARAM_EXT_OMP_NUM_THREADS))
            PUT("%s=%d", NAME(EXT_OMP_NUM_THREADS),
                agmm_cpuset_count(&j->place.rank[r].cpus));
    }
#undef NAME
#undef PUT
    return n;
}
