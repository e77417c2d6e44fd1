/* The default splits a caller of the library needs before it makes a plan
 * (include/agmm.h): GEMM_RS's even split of the inner dimension and the
 * default split of a host's cores into workers. One place, so the library,
 * the agmm tool and the Python package cannot disagree. Pure functions. */
#include "agmm.h"

#include "common/log.h"

int64_t agmm_k_split(int64_t k, int nranks, int r)
{
    if (k < 0 || nranks < 1 || r < 0 || r >= nranks) return -1;
    return k / nranks + (r < k % nranks ? 1 : 0);
}

agmm_status_t agmm_default_workers(int usable_cores, int ranks_per_host,
                                   int comm_given, int *comm_workers,
                                   int *gemm_workers)
{
    if (!comm_workers || !gemm_workers)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "default_workers: NULL output pointer");
    if (usable_cores < 1 || ranks_per_host < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "default_workers: usable_cores %d and "
                          "ranks_per_host %d must both be >= 1",
                          usable_cores, ranks_per_host);
    int comm = comm_given;
    if (comm < 0) comm = (int64_t)ranks_per_host * 2 <= usable_cores ? 1 : 0;
    int64_t gemm = (int64_t)(usable_cores / ranks_per_host) - comm;
    *comm_workers = comm;
    *gemm_workers = gemm < 1 ? 1 : (int)gemm;
    return AGMM_OK;
}
