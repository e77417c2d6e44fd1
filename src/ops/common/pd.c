/* The plan descriptor (include/agmm.h: agmm_plan_pd_t), as oneDNN's
 * primitive descriptor: one pure step from a description to what a plan of
 * it is, run once and without a world: the common and the operation's
 * checks and the path's rules (desc.c, path_rules.c), then the geometry
 * and its booking (plan_book.c), whose overflow check is the last check.
 * The descriptor keeps its own copy of the description (the arrays too)
 * and answers the queries a caller needs before a plan: the bytes per
 * rank, the rows of A and C of a call, the row tiles (a rank's part of k
 * is agmm_plan_desc_k_part of its description). agmm_plan_desc_check and
 * agmm_plan_bytes_per_rank are this step; plan.c creates a plan from it. */
#include "ops/common/pd.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "ops/common/desc.h"
#include "ops/common/op.h"
#include "ops/common/plan_book.h"

struct agmm_plan_pd {
    agmm_plan_desc_t desc; /* its arrays point at the ones below */
    const agmm_operation_t *op;
    uint64_t bound; /* agmm_plan_pd_bound */
    agmm_activation_t activations[AGMM_MAX_WEIGHTS];
    int64_t arrays[]; /* m_local [P], k_local [P], n_list [n_weights] */
};

/* The checks, then the booking's overflow check; *bound its bytes. */
static agmm_status_t check(const agmm_plan_desc_t *d, uint64_t *bound)
{
    AGMM_CHECK(agmm_desc_check(d));
    *bound = agmm_plan_bytes_booked(d, 0);
    if (*bound == 0)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "plan: the bytes booked per rank exceed 2^62 (or "
                          "overflow 64 bits)");
    return AGMM_OK;
}

agmm_status_t agmm_plan_pd_create(const agmm_plan_desc_t *d,
                                  agmm_plan_pd_t **out)
{
    if (!out) return agmm_error(AGMM_ERR_INVALID_ARG, "plan_pd: out is NULL");
    *out = NULL;
    uint64_t bound = 0;
    AGMM_CHECK(check(d, &bound));
    size_t P = (size_t)d->nranks, nl = d->n_list ? (size_t)d->n_weights : 0;
    agmm_plan_pd_t *pd =
        agmm_alloc(sizeof *pd + (2 * P + nl) * sizeof(int64_t));
    if (!pd) return agmm_error(AGMM_ERR_NO_MEMORY, "plan_pd: out of memory");
    pd->desc = *d;
    pd->op = agmm_operation(d->op);
    pd->bound = bound;
    int64_t *m = pd->arrays, *k = m + P, *n = k + P;
    memcpy(m, d->m_local, P * sizeof(int64_t));
    pd->desc.m_local = m;
    if (d->k_local) {
        memcpy(k, d->k_local, P * sizeof(int64_t));
        pd->desc.k_local = k;
    }
    if (d->n_list) {
        memcpy(n, d->n_list, nl * sizeof(int64_t));
        pd->desc.n_list = n;
    }
    if (d->activations) {
        memcpy(pd->activations, d->activations,
               sizeof(agmm_activation_t) * (size_t)agmm_desc_weights(d));
        pd->desc.activations = pd->activations;
    }
    *out = pd;
    return AGMM_OK;
}

void agmm_plan_pd_destroy(agmm_plan_pd_t *pd)
{
    agmm_free(pd);
}

const agmm_plan_desc_t *agmm_plan_pd_desc(const agmm_plan_pd_t *pd)
{
    return pd ? &pd->desc : NULL;
}

uint64_t agmm_plan_pd_bound(const agmm_plan_pd_t *pd)
{
    return pd->bound;
}

uint64_t agmm_plan_pd_bytes_per_rank(const agmm_plan_pd_t *pd)
{
    if (!pd) return 0;
    agmm_log_mute(1);
    uint64_t bytes = agmm_plan_bytes_booked(&pd->desc, 1);
    agmm_log_mute(0);
    return bytes;
}

agmm_status_t agmm_plan_pd_call_rows(const agmm_plan_pd_t *pd, int rank,
                                     const int64_t *m_rows, int64_t *a_rows,
                                     int64_t *c_rows)
{
    if (!pd || !a_rows || !c_rows)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan_pd: NULL argument");
    const agmm_plan_desc_t *d = &pd->desc;
    if (rank < 0 || rank >= d->nranks)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan_pd: rank %d (allowed 0..%d)", rank,
                          d->nranks - 1);
    if (m_rows && !pd->op->rows_per_call)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan_pd: m_rows on a %s plan (it takes no "
                          "per-call rows)",
                          pd->op->name);
    const int64_t *m = m_rows ? m_rows : d->m_local;
    int64_t M = 0;
    for (int r = 0; r < d->nranks; r++) {
        if (m[r] < 0 || m[r] > d->m_local[r])
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan_pd: m_rows[%d] = %lld (allowed 0..%lld, "
                              "the plan's m_local[%d])",
                              r, (long long)m[r], (long long)d->m_local[r], r);
        M += m[r];
    }
    pd->op->call_rows(rank, m, M, a_rows, c_rows);
    return AGMM_OK;
}

int64_t agmm_plan_pd_tiles(const agmm_plan_pd_t *pd, int rank)
{
    if (!pd || rank < -1 || rank >= pd->desc.nranks) return -1;
    int64_t tiles = 0;
    for (int r = rank < 0 ? 0 : rank;
         r < (rank < 0 ? pd->desc.nranks : rank + 1); r++)
        tiles += AGMM_DIV_UP(pd->desc.m_local[r], pd->desc.tile_m);
    return tiles;
}

agmm_status_t agmm_plan_desc_check(const agmm_plan_desc_t *d)
{
    uint64_t bound;
    return check(d, &bound);
}

uint64_t agmm_plan_bytes_per_rank(const agmm_plan_desc_t *d)
{
    agmm_log_mute(1);
    uint64_t bound,
        bytes = check(d, &bound) == AGMM_OK ? agmm_plan_bytes_booked(d, 1) : 0;
    agmm_log_mute(0);
    return bytes;
}
