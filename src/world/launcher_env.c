/* Is this process started by an MPI launcher? Built with or without MPI,
 * so the tool can say "this agmm was built without MPI" under mpirun. */
#include "agmm.h"
#include "common/param.h"

int agmm_mpi_launcher_detected(void)
{
    /* OpenMPI (mpirun/orterun), PMI-1/2 (MPICH hydra, Slurm), PMIx. */
    static const agmm_param_id_t vars[] = {
        AGMM_PARAM_EXT_OMPI_COMM_WORLD_SIZE, AGMM_PARAM_EXT_PMI_SIZE,
        AGMM_PARAM_EXT_PMIX_RANK, AGMM_PARAM_EXT_MPI_LOCALNRANKS};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (agmm_param_is_set(vars[i])) return 1;
    return 0;
}
