/* The MPI backend as world/ sees it: world/mpi_world.c initializes MPI and
 * makes the world over MPI_COMM_WORLD, then starts and stops the backend
 * (its communicators and progress thread) with these. Private to the
 * library; built only with MPI. */
#ifndef AGMM_TRANSPORT_MPI_MPI_H
#define AGMM_TRANSPORT_MPI_MPI_H

#include "transport/transport.h"

/* `w` has rank and size set: install the MPI vtable and state (dup'ed
 * communicators, the progress thread). `we_initialized`: agmm called
 * MPI_Init_thread, so stop finalizes MPI. On failure nobody can be told:
 * the caller MPI_Aborts. */
agmm_status_t agmm_mpi_backend_start(agmm_world_t *w, int we_initialized);
/* Stop the progress thread and free the state; finalize MPI when start
 * said so and the world was not aborted (see mpi_state.c). */
void agmm_mpi_backend_stop(agmm_world_t *w);

#endif
