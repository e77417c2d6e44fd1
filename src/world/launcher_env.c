/* Is this process started by an MPI launcher? Built with or without MPI,
 * so the tool can say "this agmm was built without MPI" under mpirun. */
#include <stdlib.h>

#include "agmm.h"

int agmm_mpi_launcher_detected(void)
{
    /* OpenMPI (mpirun/orterun), PMI-1/2 (MPICH hydra, Slurm), PMIx. */
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                 "PMIX_RANK", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}
