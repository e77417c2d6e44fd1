/* Engine threads for a world's ranks: agmm's workers are the parallelism,
 * so each GEMM call runs on its worker's thread only.
 *
 *   - forked worlds (world/launch.c): OpenBLAS is made single-threaded
 *     before the fork (a forked BLAS thread pool would not survive it);
 *   - oneDNN needs nothing here: the engine sets OpenMP to one thread
 *     around each call (gemm/gemm_onednn.c);
 *   - MPI worlds (world/mpi_world.c) leave the BLAS as the process set it,
 *     as before this file existed (see the note in agmm_world_threads). */
#include "world/world.h"

#include "gemm/gemm.h"

void agmm_world_threads(agmm_world_kind_t kind)
{
    switch (kind) {
    case AGMM_WORLD_FORKED:
        agmm_blas_init();
        break;
    case AGMM_WORLD_MPI:
        /* Unchanged behaviour: an MPI rank's OpenBLAS keeps its default
         * thread count (OPENBLAS_NUM_THREADS or the cores). Making it one
         * thread per call here, like forked ranks, is a behaviour change
         * left for its own issue. */
        break;
    }
}
