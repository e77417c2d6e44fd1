/* Built instead of mpi_world.c when agmm is configured without MPI: the MPI
 * entry points say so. */
#include "common/log.h"

agmm_status_t agmm_world_create_mpi(int *argc, char ***argv, double timeout_s,
                                    agmm_world_t **out)
{
    (void)argc;
    (void)argv;
    (void)timeout_s;
    if (out) *out = NULL;
    return agmm_error(AGMM_ERR_UNSUPPORTED,
                      "this agmm was built without MPI (configure with "
                      "-DAGMM_MPI=ON)");
}
