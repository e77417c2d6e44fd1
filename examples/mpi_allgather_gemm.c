/* The same program under an MPI launcher: the world comes from
 * agmm_world_create_mpi() instead of agmm_launch(); the plan, the rounds
 * and the check are allgather_gemm.c's rank_main, unchanged.
 *
 *   mpirun -np 2 ./example_mpi_allgather_gemm
 *
 * (ctest example_mpi_runs, built when agmm is built with MPI.) */
#define main forked_main /* allgather_gemm.c's main, unused here */
#include "allgather_gemm.c"
#undef main

int main(int argc, char **argv)
{
    agmm_world_t *world;
    if (agmm_world_create_mpi(&argc, &argv, 60.0, &world) != AGMM_OK) {
        fprintf(stderr, "agmm_world_create_mpi: %s\n", agmm_last_error());
        return 1;
    }
    if (agmm_world_size(world) != P) {
        fprintf(stderr, "run it with mpirun -np %d\n", P);
        return 1; /* leaving without destroy: mpirun ends the job */
    }
    int rc = rank_main(world, NULL);
    if (rc != 0) return rc; /* a failed world: no collective finalize */
    agmm_world_destroy(world);
    return 0;
}
