/* The default splits a caller of the library needs before it makes a plan
 * (include/agmm.h): GEMM_RS's even split of the inner dimension, a rank's
 * part of k under a description (the operation's k_part: op.h) and the
 * default split of a host's cores into workers. One place, so the library,
 * the agmm tool, the cost model and the Python package cannot disagree.
 * Pure functions. */
#include "agmm.h"

#include "common/log.h"
#include "ops/common/op.h"

int64_t agmm_k_split(int64_t k, int nranks, int r)
{
    if (k < 0 || nranks < 1 || r < 0 || r >= nranks) return -1;
    return k / nranks + (r < k % nranks ? 1 : 0);
}

agmm_status_t agmm_plan_desc_k_part(const agmm_plan_desc_t *d, int rank,
                                    int64_t *k0, int64_t *k_len)
{
    if (!d || !k0 || !k_len)
        return agmm_error(AGMM_ERR_INVALID_ARG, "desc_k_part: NULL argument");
    if (d->nranks < 1 || rank < 0 || rank >= d->nranks)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "desc_k_part: rank %d of nranks %d (allowed "
                          "0..nranks-1, nranks >= 1)",
                          rank, d->nranks);
    if (d->k < 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "desc_k_part: k = %lld (allowed >= 0)",
                          (long long)d->k);
    const agmm_operation_t *op = agmm_operation(d->op);
    if (!op)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "desc_k_part: op %d is not valid", (int)d->op);
    int64_t off = 0;
    for (int r = 0; op->splits_k && r < rank; r++)
        off += op->k_part(d, r);
    *k0 = off;
    *k_len = op->k_part(d, rank);
    return AGMM_OK;
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
