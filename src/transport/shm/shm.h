/* The shm backend as world/ sees it: the embedded launcher
 * (world/launch.c) maps the control block before fork and makes each
 * rank's world after it; a joined world (world/join.c, joined.c)
 * attaches the control block inside its named control segment. Private to the
 * library. */
#ifndef AGMM_TRANSPORT_SHM_SHM_H
#define AGMM_TRANSPORT_SHM_SHM_H

#include "transport/transport.h"

typedef struct agmm_shm_shared agmm_shm_shared_t;
/* Bytes of the control block of `nranks` ranks. All zero is its initial
 * state. */
size_t agmm_shm_ctl_bytes(int nranks);
/* Before fork: map the control block (anonymous, shared). link_gbps > 0
 * turns the link emulator on (link.h). Window segments are named after job
 * "fork-<launcher pid>". */
agmm_status_t agmm_shm_prepare(int nranks, double link_gbps,
                               double link_latency_us, agmm_shm_shared_t **out);
/* A joined rank: the control block is `ctl` (agmm_shm_ctl_bytes(nranks),
 * zeroed by its creator, mapped by the caller, which unmaps it after
 * agmm_shm_release); window segments are named after `job`. */
agmm_status_t agmm_shm_attach(void *ctl, int nranks, const char *job,
                              agmm_shm_shared_t **out);
/* In rank `rank` after fork: the world over the shared mappings (starts the
 * link emulator's delivery thread when it is on). */
agmm_status_t agmm_shm_world_init(agmm_shm_shared_t *sh, int rank,
                                  agmm_world_t *w);
/* In the rank, before it exits: stops the delivery thread, frees the
 * rank's state. */
void agmm_shm_world_fini(agmm_world_t *w);
/* From the launcher: abort every rank with `reason` (first abort wins). */
void agmm_shm_abort_all(agmm_shm_shared_t *sh, const char *reason);
const char *agmm_shm_abort_reason(agmm_shm_shared_t *sh);
/* The forked world's control entries (world/world_ops.h), over the shared
 * control block; world/launch.c registers them as the world's control
 * table. barrier/allgather: collective, one thread per rank; abort and
 * aborted: any thread. */
agmm_status_t agmm_shm_barrier(agmm_world_t *w, double deadline);
agmm_status_t agmm_shm_allgather(agmm_world_t *w, const void *in, void *out,
                                 size_t bytes, double deadline);
void agmm_shm_abort(agmm_world_t *w, const char *reason);
const char *agmm_shm_aborted(agmm_world_t *w);
int agmm_shm_link(const agmm_world_t *w, double *gbps, double *latency_us);
/* The job name the world's window segments carry ("fork-<pid>" for a
 * forked world). */
const char *agmm_shm_job(const agmm_shm_shared_t *sh);
/* Windows of this rank allocated and not yet freed (any thread). */
int agmm_shm_live_windows(agmm_world_t *w);
/* After every rank exited (forked) or when leaving (joined): free, and
 * unmap the control block if prepare mapped it. */
void agmm_shm_release(agmm_shm_shared_t *sh);

#endif
