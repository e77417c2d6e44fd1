/* The plan descriptor (agmm_plan_pd_t): made from a good description of
 * every operation, it holds its own copy (the caller's arrays may change
 * after), its bytes per rank are agmm_plan_bytes_per_rank's, its call rows
 * are each operation's A and C rows (with and without m_rows) and its
 * tiles the row tiles; a bad description fails as agmm_plan_desc_check
 * does and leaves no descriptor; bad query arguments are refused. */
#include <stdint.h>

#include "agmm.h"
#include "check.h"

static void fill(agmm_plan_desc_t *d, agmm_op_t op, int64_t *m)
{
    agmm_plan_desc_init(d);
    d->nranks = 3;
    d->m_local = m;
    d->k = 40;
    d->n = 24;
    d->tile_m = 4;
    d->tile_n = 8;
    d->op = op;
}

static void each_op(agmm_op_t op)
{
    int64_t m[3] = {9, 0, 4}, rows[3] = {2, 0, 3}, a, c, k0, kp;
    agmm_plan_desc_t d;
    fill(&d, op, m);
    agmm_plan_pd_t *pd = NULL;
    agmm_status_t st = agmm_plan_pd_create(&d, &pd);
    CHECK(st == AGMM_OK && pd, "op %s: %s", agmm_op_name(op),
          agmm_status_str(st));
    if (!pd) return;
    uint64_t want = agmm_plan_bytes_per_rank(&d);
    m[0] = 1000; /* the descriptor's copy stays */
    const agmm_plan_desc_t *pdd = agmm_plan_pd_desc(pd);
    CHECK(pdd && pdd->m_local != m && pdd->m_local[0] == 9 && pdd->k == 40,
          "op %s: the descriptor's description", agmm_op_name(op));
    m[0] = 9;
    CHECK(want > 0 && agmm_plan_pd_bytes_per_rank(pd) == want,
          "op %s: bytes %llu, want %llu", agmm_op_name(op),
          (unsigned long long)agmm_plan_pd_bytes_per_rank(pd),
          (unsigned long long)want);
    for (int r = 0; r < 3; r++) {
        int split = op != AGMM_OP_AG_GEMM;
        CHECK(agmm_plan_desc_k_part(pdd, r, &k0, &kp) == AGMM_OK &&
                  kp == (split ? agmm_k_split(40, 3, r) : 40),
              "op %s rank %d: k part %lld", agmm_op_name(op), r, (long long)kp);
        for (int given = 0; given < 2; given++) {
            const int64_t *mr = given ? rows : m;
            int64_t M = mr[0] + mr[1] + mr[2];
            int64_t wa = op == AGMM_OP_AG_GEMM ? mr[r] : M;
            int64_t wc = op == AGMM_OP_GEMM_RS   ? mr[r]
                         : op == AGMM_OP_GEMM_AR ? M
                                                 : M;
            st = agmm_plan_pd_call_rows(pd, r, given ? rows : NULL, &a, &c);
            CHECK(st == AGMM_OK && a == wa && c == wc,
                  "op %s rank %d m_rows %d: %s, A %lld C %lld rows, want "
                  "%lld %lld",
                  agmm_op_name(op), r, given, agmm_status_str(st), (long long)a,
                  (long long)c, (long long)wa, (long long)wc);
        }
    }
    CHECK(agmm_plan_pd_tiles(pd, 0) == 3 && agmm_plan_pd_tiles(pd, 1) == 0 &&
              agmm_plan_pd_tiles(pd, 2) == 1 && agmm_plan_pd_tiles(pd, -1) == 4,
          "op %s: tiles", agmm_op_name(op));
    CHECK(agmm_plan_pd_tiles(pd, 3) == -1 && agmm_plan_pd_tiles(pd, -2) == -1,
          "op %s: tiles of no rank", agmm_op_name(op));
    CHECK(agmm_plan_pd_call_rows(pd, 3, NULL, &a, &c) == AGMM_ERR_INVALID_ARG,
          "rank = nranks");
    CHECK(agmm_plan_pd_call_rows(pd, 0, NULL, NULL, &c) == AGMM_ERR_INVALID_ARG,
          "NULL a_rows");
    int64_t over[3] = {10, 0, 0};
    CHECK(agmm_plan_pd_call_rows(pd, 0, over, &a, &c) == AGMM_ERR_INVALID_ARG,
          "m_rows over m_local");
    agmm_plan_pd_destroy(pd);
}

int main(void)
{
    each_op(AGMM_OP_AG_GEMM);
    each_op(AGMM_OP_GEMM_RS);
    each_op(AGMM_OP_GEMM_AR);
    int64_t m[3] = {9, 0, 4};
    agmm_plan_desc_t d;
    fill(&d, AGMM_OP_AG_GEMM, m);
    d.tile_m = 0;
    agmm_plan_pd_t *pd = (agmm_plan_pd_t *)&d; /* must become NULL */
    CHECK(agmm_plan_pd_create(&d, &pd) == agmm_plan_desc_check(&d) &&
              agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG && !pd,
          "bad description");
    CHECK(agmm_plan_pd_create(NULL, &pd) == AGMM_ERR_INVALID_ARG && !pd,
          "NULL description");
    CHECK(agmm_plan_pd_create(&d, NULL) == AGMM_ERR_INVALID_ARG, "NULL out");
    CHECK(!agmm_plan_pd_desc(NULL) && agmm_plan_pd_bytes_per_rank(NULL) == 0 &&
              agmm_plan_pd_tiles(NULL, 0) == -1,
          "NULL descriptor");
    agmm_plan_pd_destroy(NULL);
    CHECK_DONE("test_pd");
}
