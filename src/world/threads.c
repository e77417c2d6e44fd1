/* Engine threads for a world's ranks: agmm's workers are the parallelism,
 * so each GEMM call runs on its worker's thread only, in every kind of
 * world.
 *
 *   - forked worlds (world/launch.c): OpenBLAS is made single-threaded
 *     before the fork (a forked BLAS thread pool would not survive it);
 *   - MPI worlds (world/mpi_world.c): the same, when the world is made
 *     (before any GEMM runs); without it a rank's OpenBLAS kept its
 *     default (OPENBLAS_NUM_THREADS or the cores) and its threads piled up
 *     on the workers' (issue 14);
 *   - joined worlds (world/join.c): the same, when the rank joins; a rank
 *     started by agmm launch also takes its share of cores from
 *     AGMM_BIND_CPUS then (place/bind.c), for its workers;
 *   - oneDNN needs nothing here: the engine sets OpenMP to one thread
 *     around each call (gemm/onednn/prep.c). */
#include "world/world.h"

#include "gemm/gemm.h"
#include "place/place.h"

void agmm_world_threads(agmm_world_kind_t kind)
{
    switch (kind) {
    case AGMM_WORLD_JOINED:
        /* Started by agmm launch: its share, to pin the workers to. */
        agmm_bind_adopt_env();
        agmm_blas_init();
        break;
    case AGMM_WORLD_FORKED:
    case AGMM_WORLD_MPI:
        agmm_blas_init();
        break;
    }
}
