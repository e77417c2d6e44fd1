/* The default splits of include/agmm.h: agmm_k_split's parts sum to k and
 * differ by at most one, the first ranks larger; agmm_plan_desc_k_part's
 * part and offset of each rank for every operation, given or split;
 * agmm_default_workers' rule on hand-computed cases; bad input refused. */
#include <stdint.h>

#include "agmm.h"
#include "check.h"

static void k_split_sums(void)
{
    for (int64_t k = 0; k <= 40; k++)
        for (int p = 1; p <= 9; p++) {
            int64_t sum = 0;
            for (int r = 0; r < p; r++) {
                int64_t part = agmm_k_split(k, p, r);
                int64_t want = k / p + (r < k % p ? 1 : 0);
                CHECK(part == want, "k %lld P %d rank %d: %lld, want %lld",
                      (long long)k, p, r, (long long)part, (long long)want);
                sum += part;
            }
            CHECK(sum == k, "k %lld P %d: parts sum to %lld", (long long)k, p,
                  (long long)sum);
        }
    CHECK(agmm_k_split(INT64_MAX, 3, 0) == INT64_MAX / 3 + 1, "huge k");
    CHECK(agmm_k_split(-1, 2, 0) == -1, "k < 0");
    CHECK(agmm_k_split(10, 0, 0) == -1, "nranks 0");
    CHECK(agmm_k_split(10, 2, 2) == -1, "r = nranks");
    CHECK(agmm_k_split(10, 2, -1) == -1, "r < 0");
}

static void desc_k_part(void)
{
    int64_t m[3] = {4, 4, 4}, given[3] = {5, 0, 2}, k0, kp;
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = 3;
    d.m_local = m;
    d.k = 7;
    d.n = 8;
    static const agmm_op_t ops[] = {AGMM_OP_AG_GEMM, AGMM_OP_GEMM_RS,
                                    AGMM_OP_GEMM_AR};
    for (int o = 0; o < 3; o++)
        for (int g = 0; g < 2; g++) {
            d.op = ops[o];
            d.k_local = g && d.op != AGMM_OP_AG_GEMM ? given : NULL;
            int64_t off = 0;
            for (int r = 0; r < 3; r++) {
                int64_t want = d.op == AGMM_OP_AG_GEMM ? 7
                               : d.k_local             ? given[r]
                                                       : agmm_k_split(7, 3, r);
                agmm_status_t st = agmm_plan_desc_k_part(&d, r, &k0, &kp);
                CHECK(st == AGMM_OK && kp == want &&
                          k0 == (d.op == AGMM_OP_AG_GEMM ? 0 : off),
                      "op %d given %d rank %d: %s, k0 %lld part %lld", o, g, r,
                      agmm_status_str(st), (long long)k0, (long long)kp);
                off += want;
            }
        }
    d.op = AGMM_OP_GEMM_RS;
    d.k_local = NULL;
    CHECK(agmm_plan_desc_k_part(NULL, 0, &k0, &kp) == AGMM_ERR_INVALID_ARG,
          "NULL desc");
    CHECK(agmm_plan_desc_k_part(&d, 0, NULL, &kp) == AGMM_ERR_INVALID_ARG,
          "NULL k0");
    CHECK(agmm_plan_desc_k_part(&d, 3, &k0, &kp) == AGMM_ERR_INVALID_ARG,
          "rank = nranks");
    CHECK(agmm_plan_desc_k_part(&d, -1, &k0, &kp) == AGMM_ERR_INVALID_ARG,
          "rank < 0");
    d.op = (agmm_op_t)99;
    CHECK(agmm_plan_desc_k_part(&d, 0, &k0, &kp) == AGMM_ERR_INVALID_ARG,
          "bad op");
}

static void default_workers(void)
{
    /* usable cores, ranks per host, comm given, want comm, want gemm */
    static const int cases[][5] = {
        {2, 2, -1, 0, 1}, /* 2 x 2 > 2: no comm worker */
        {4, 2, -1, 1, 1}, /* 2 x 2 <= 4: one comm, 4/2 - 1 GEMM */
        {16, 2, -1, 1, 7}, {16, 3, -1, 1, 4}, {1, 4, -1, 0, 1},
        {16, 2, 0, 0, 8}, /* comm given: GEMM follows from it */
        {16, 2, 9, 9, 1}, /* at least one GEMM worker */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *c = cases[i];
        int comm = -5, gemm = -5;
        agmm_status_t st = agmm_default_workers(c[0], c[1], c[2], &comm, &gemm);
        CHECK(st == AGMM_OK && comm == c[3] && gemm == c[4],
              "cores %d ranks %d comm given %d: %s, comm %d gemm %d, want "
              "%d %d",
              c[0], c[1], c[2], agmm_status_str(st), comm, gemm, c[3], c[4]);
    }
    int comm, gemm;
    CHECK(agmm_default_workers(0, 1, -1, &comm, &gemm) == AGMM_ERR_INVALID_ARG,
          "0 cores");
    CHECK(agmm_default_workers(4, 0, -1, &comm, &gemm) == AGMM_ERR_INVALID_ARG,
          "0 ranks");
    CHECK(agmm_default_workers(4, 1, -1, NULL, &gemm) == AGMM_ERR_INVALID_ARG,
          "NULL comm");
    CHECK(agmm_default_workers(4, 1, -1, &comm, NULL) == AGMM_ERR_INVALID_ARG,
          "NULL gemm");
}

int main(void)
{
    k_split_sums();
    desc_k_part();
    default_workers();
    CHECK_DONE("test_split");
}
