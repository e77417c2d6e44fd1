/* The MPI backend as world/ sees it: world/mpi_world.c initializes MPI and
 * makes the world over MPI_COMM_WORLD, then starts and stops the backend
 * (its communicators and progress thread) with these. Private to the
 * library; built only with MPI. */
#ifndef AGMM_TRANSPORT_MPI_MPI_H
#define AGMM_TRANSPORT_MPI_MPI_H

#include "transport/transport.h"

/* `w` has rank, size and its control table set: install the MPI data-plane
 * vtable and state (dup'ed communicators, the progress thread).
 * `we_initialized`: agmm called MPI_Init_thread, so stop finalizes MPI. On
 * failure nobody can be told: the caller MPI_Aborts. */
agmm_status_t agmm_mpi_backend_start(agmm_world_t *w, int we_initialized);
/* Stop the progress thread and free the state; finalize MPI when start
 * said so. In an aborted world it does not return: it ends the whole job
 * with MPI_Abort (see mpi_state.c). */
void agmm_mpi_backend_stop(agmm_world_t *w);

/* The MPI world's control entries (world/world_ops.h); world/mpi_world.c
 * registers them as the world's control table. barrier/allgather (mpi_coll.c):
 * collective over the backend's `coll` communicator, one thread per rank.
 * abort (mpi.c): records into this rank's cell and sends the reason to
 * every peer as a control message; aborted: reads the cell; any thread.
 * dropped (mpi_win.c): control messages that outlived their window. */
agmm_status_t agmm_mpi_barrier(agmm_world_t *w, double deadline);
agmm_status_t agmm_mpi_allgather(agmm_world_t *w, const void *in, void *out,
                                 size_t bytes, double deadline);
void agmm_mpi_abort(agmm_world_t *w, const char *reason);
const char *agmm_mpi_aborted(agmm_world_t *w);
uint64_t agmm_mpi_dropped(agmm_world_t *w);

#endif
