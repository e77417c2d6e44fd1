/* Built when agmm is configured without MPI: the MPI entry points say so. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

int agmm_mpi_launcher_detected(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                 "PMIX_RANK", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

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

void agmm_world_destroy(agmm_world_t *world) { (void)world; }
