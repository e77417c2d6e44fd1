/* The control plane's table: what a world does besides moving data, one
 * table per way ranks come to exist. world/ owns it: world/launch.c
 * registers the forked (shm) worlds' table, world/joined.c the joined
 * worlds' one and world/mpi_world.c the MPI worlds' one, in
 * agmm_world_t.ctl, before the backend starts; only world/ calls through
 * it (world.c), everyone else calls world/world.h.
 *
 * The entries are implemented next to the state they work on, in the
 * backend folders (transport/shm/shm.c over the shared control block,
 * transport/mpi/mpi_coll.c and mpi.c over MPI collectives and control
 * messages) and
 * exported through the headers world/ already includes (shm/shm.h,
 * mpi/mpi.h): world/ includes transport/, never the other way round.
 *
 * This header includes nothing of transport/ (only the public agmm.h), so
 * a test can build a fake control table without a backend
 * (tests/unit/test_link.c). */
#ifndef AGMM_WORLD_WORLD_OPS_H
#define AGMM_WORLD_WORLD_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

typedef struct agmm_world_ops {
    /* The backend's name ("shm", "mpi"): agmm_world_transport_name and
     * messages. */
    const char *name;
    /* Collective, with a deadline (agmm_now() seconds). Called by one
     * thread per rank (the plan's). */
    agmm_status_t (*barrier)(agmm_world_t *w, double deadline);
    /* Collective: `bytes` per rank, at most AGMM_ALLGATHER_MAX. */
    agmm_status_t (*allgather)(agmm_world_t *w, const void *in, void *out,
                               size_t bytes, double deadline);
    /* Deliver an abort with a one-line reason (first caller wins): the
     * state machine is common/abort.c, the backend records into its cell
     * and tells the peers. Any thread. */
    void (*abort)(agmm_world_t *w, const char *reason);
    /* NULL while the world runs; the reason once it is aborted. Any
     * thread (acquire load of the abort cell). */
    const char *(*aborted)(agmm_world_t *w);
    /* Optional (NULL: a real link): the settings of an emulated link
     * (transport/shm/link.h); returns 1 when emulated. */
    int (*link)(const agmm_world_t *w, double *gbps, double *latency_us);
    /* Optional (NULL: none can be): control messages that arrived for a
     * window already freed, dropped and counted (mpi/mpi_win.c,
     * mpi/wintab.h). */
    uint64_t (*dropped)(agmm_world_t *w);
    /* Optional (NULL: the world is not the caller's to destroy, e.g. a
     * forked one, owned by the launcher): agmm_world_destroy. Local. */
    void (*destroy)(agmm_world_t *w);
} agmm_world_ops_t;

#endif
