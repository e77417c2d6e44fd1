/* The control plane as the library uses it inside: barrier, small
 * allgather and abort with explicit deadlines and reasons, the
 * variable-size gather to rank 0, over whichever backend made the world,
 * and the engine thread setup of each kind of world's ranks. ops/ and
 * trace/ call these, never a table: the
 * world's control table (world_ops.h, agmm_world_t.ctl) is called only in
 * world.c, the data-plane table only through the agmm_tp_* wrappers of
 * transport/transport.h (the public agmm_world_* in agmm.h are thin
 * checked wrappers over these). */
#ifndef AGMM_WORLD_WORLD_H
#define AGMM_WORLD_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "world/world_ops.h"

/* How the ranks of a world came to exist. */
typedef enum {
    AGMM_WORLD_FORKED, /* forked by the embedded launcher, over shm */
    AGMM_WORLD_MPI,    /* the processes of an MPI communicator */
    AGMM_WORLD_JOINED  /* started by anyone on one host, joined by name */
} agmm_world_kind_t;

/* Engine thread setup for the ranks of a `kind` world (threads.c): called
 * once per process before the ranks' workers start (before the fork for
 * forked worlds). */
void agmm_world_threads(agmm_world_kind_t kind);

/* Collective, with a deadline (agmm_now() seconds). */
agmm_status_t agmm_world_barrier_until(agmm_world_t *w, double deadline);
/* Collective: `bytes` per rank (at most AGMM_ALLGATHER_MAX) from every
 * rank into out[rank * bytes]. */
agmm_status_t agmm_world_allgather_until(agmm_world_t *w, const void *in,
                                         void *out, size_t bytes,
                                         double deadline);
/* Mark the world aborted with `reason` as given (first abort wins; the
 * public agmm_world_abort prefixes "rank N aborted:"). Any thread. Also
 * declared in transport/transport.h, for the transport's own waits. */
void agmm_world_abort_with(agmm_world_t *w, const char *reason);
/* NULL while the world runs; the reason once it is aborted. Any thread. */
const char *agmm_world_aborted(agmm_world_t *w);
/* Internal query (tests, --verbose): control messages dropped because they
 * outlived their window. Plan teardown waits for in-flight acks, so this
 * stays 0 unless a world was aborted. */
uint64_t agmm_world_dropped_messages(agmm_world_t *w);

/* Collective, variable size: rank r contributes bytes[r] (every rank
 * passes the same bytes[], e.g. agreed with the allgather above) from
 * `mine`; rank 0 receives them all, in rank order, in `out` (sum(bytes);
 * NULL on rank 0 fails with AGMM_ERR_NO_MEMORY after taking part; ignored
 * elsewhere). `what_kind` names the data in timeout and abort messages
 * (gatherv.c). */
agmm_status_t agmm_world_gatherv(agmm_world_t *w, const void *mine,
                                 const size_t *bytes, void *out,
                                 const char *what_kind);

#endif
