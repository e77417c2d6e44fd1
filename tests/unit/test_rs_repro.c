/* GEMM + reduce-scatter is bit-reproducible whatever order the partial
 * tiles arrive in: the owner sums sources in rank order 0..P-1.
 *
 * Four ranks, the same inputs every round, values with many significant
 * bits (so fp32 sums depend on their order): rank 0 starts from its own
 * partial, rank 1 too (s_1 + s_0 commutes), rank 3 adds onto the sources
 * before it, rank 2 has no rows. Round 1: fused, nobody
 * delayed. Rounds 2 and 3: fused with rank 0 (then rank 2) sleeping 30 ms
 * before the round, so its tiles reach their owners last instead of
 * first. Their C must equal round 1's bit for bit on every rank. Round 4
 * (baseline: whole partial GEMM, bulk puts, the same fixed-order sum) must
 * match within a tight tolerance (its GEMM calls cover different row
 * counts, which an engine may block differently), and every round
 * matches agmm_reference_rs within 1e-3. Per GEMM engine built in, with
 * 1 comm worker, and with 0 (the GEMM workers put). Then the order itself,
 * for gemm-rs and gemm-ar (order_main). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agmm_ext.h"
#include "check.h"
#include "ops/gemm_rs/tiles.h"
#include "test_data.h"

#define P 4
static const int64_t m_local[P] = {37, 11, 0, 29};
enum { K = 70, N = 45, ROUNDS = 4 };

typedef struct cfg {
    agmm_gemm_engine_kind_t engine;
    int comm_workers;
    agmm_dtype_t dtype;
} cfg_t;

static int64_t kpart(int r)
{
    return K / P + (r < K % P);
}

static void describe(agmm_plan_desc_t *d, const cfg_t *cf, agmm_op_t op)
{
    agmm_plan_desc_init(d);
    d->nranks = P;
    d->m_local = m_local;
    d->k = K;
    d->n = N;
    d->tile_m = 8;
    d->tile_n = 16;
    d->dtype = cf->dtype;
    d->gemm_engine = cf->engine;
    d->comm_workers = cf->comm_workers;
    d->gemm_workers = 2;
    d->op = op;
}

/* Returns 0, or a code saying what went wrong on this rank. */
static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    describe(&d, cf, AGMM_OP_GEMM_RS);
    agmm_plan_t *plan = NULL;
    if (agmm_plan_create(w, &d, &plan) != AGMM_OK) return 80;
    int64_t M = 0, rows = m_local[r], row0 = 0;
    for (int p = 0; p < P; p++)
        M += m_local[p];
    for (int p = 0; p < r; p++)
        row0 += m_local[p];
    void *a[P], *wt[P];
    for (int p = 0; p < P; p++) {
        a[p] = test_make(cf->dtype, 10 + p, M * kpart(p));
        wt[p] = test_make(cf->dtype, 20 + p, kpart(p) * N);
    }
    size_t cb = sizeof(float) * (size_t)(rows * N) + 1;
    float *c[ROUNDS], *ref = malloc(cb);
    int bad = agmm_plan_set_weight(plan, wt[r]) != AGMM_OK ? 81 : 0;
    if (!bad && agmm_reference_rs(
                    P, (const void *const *)a, (const void *const *)wt,
                    (const int64_t[]){kpart(0), kpart(1), kpart(2), kpart(3)},
                    M, N, cf->dtype, row0, rows, ref) != AGMM_OK)
        bad = 82;
    for (int e = 0; e < ROUNDS; e++) {
        c[e] = malloc(cb);
        for (int64_t i = 0; i < rows * N; i++)
            c[e][i] = NAN;
        int delayed = e == 1 ? 0 : e == 2 ? 2 : -1;
        if (r == delayed) nanosleep(&(struct timespec){0, 30000000}, NULL);
        if (!bad &&
            agmm_plan_run(plan,
                          e == 3 ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED,
                          a[r], c[e]) != AGMM_OK)
            bad = 83 + e;
    }
    for (int e = 0; !bad && e < ROUNDS; e++)
        for (int64_t i = 0; i < rows * N; i++) {
            if (!(fabsf(c[e][i] - ref[i]) <= 1e-3f + 1e-3f * fabsf(ref[i])))
                bad = 90 + e;
            if (e == 1 || e == 2) /* bit for bit */
                if (memcmp(&c[e][i], &c[0][i], sizeof(float))) bad = 100 + e;
            if (e == 3 &&
                !(fabsf(c[3][i] - c[0][i]) <= 1e-5f * (1 + fabsf(c[0][i]))))
                bad = 110;
        }
    if (agmm_plan_destroy(plan) != AGMM_OK && !bad) bad = 111;
    for (int e = 0; e < ROUNDS; e++)
        free(c[e]);
    for (int p = 0; p < P; p++) {
        free(a[p]);
        free(wt[p]);
    }
    free(ref);
    return bad;
}

/* The order itself, on partials every engine computes exactly: A_r has
 * ones in its first column, W_r's first row is order_v[r], the rest zeros,
 * so every element of rank r's partial is order_v[r]. In rank order C is
 * ((2^24 + 1) - 2^24) + 1 = 1 (2^24 + 1 rounds to 2^24); rank 1 starting
 * from its own partial gives the same, but rank 3 starting from its own
 * gives ((1 + 2^24) + 1) - 2^24 = 0, and rank 2 (had it rows) 2. Both
 * reduce operations, both schedules; returns 0 or 60 + what failed
 * (codes over 125 reach the launcher as 1). */
static const float order_v[P] = {16777216.0f, 1.0f, -16777216.0f, 1.0f};

static int order_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    int r = agmm_world_rank(w);
    int64_t M = 0, kr = kpart(r);
    for (int p = 0; p < P; p++)
        M += m_local[p];
    size_t es = agmm_dtype_size(cf->dtype);
    float *a32 = calloc((size_t)(M * kr), sizeof(float));
    float *w32 = calloc((size_t)(kr * N), sizeof(float));
    void *a = malloc((size_t)(M * kr) * es),
         *wt = malloc((size_t)(kr * N) * es);
    float *c = malloc(sizeof(float) * (size_t)(M * N));
    int bad = a32 && w32 && a && wt && c ? 0 : 60;
    for (int64_t i = 0; !bad && i < M; i++)
        a32[i * kr] = 1.0f;
    for (int64_t j = 0; !bad && j < N; j++)
        w32[j] = order_v[r];
    if (!bad && (agmm_convert_from_fp32(cf->dtype, a32, a, (size_t)(M * kr)) ||
                 agmm_convert_from_fp32(cf->dtype, w32, wt, (size_t)(kr * N))))
        bad = 61;
    if (bad) agmm_world_abort(w, "order test: no inputs"); /* peers end */
    /* Every rank makes every collective call whatever C it found, so that
     * one rank's wrong C is reported as such, not as a peer's timeout; a
     * failed call aborts the world, and the rank stops there. */
    const agmm_op_t ops[2] = {AGMM_OP_GEMM_RS, AGMM_OP_GEMM_AR};
    int wrong = 0; /* 70 + 2 op + schedule: the first wrong C */
    for (int o = 0; !bad && o < 2; o++) {
        agmm_plan_desc_t d;
        describe(&d, cf, ops[o]);
        agmm_plan_t *plan = NULL;
        if (agmm_plan_create(w, &d, &plan) != AGMM_OK ||
            agmm_plan_set_weight(plan, wt) != AGMM_OK)
            bad = 62;
        int64_t rows = ops[o] == AGMM_OP_GEMM_AR ? M : m_local[r];
        for (int sb = 0; !bad && sb < 2; sb++) {
            for (int64_t i = 0; i < rows * N; i++)
                c[i] = NAN;
            if (agmm_plan_run(plan,
                              sb ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED,
                              a, c) != AGMM_OK)
                bad = 63;
            for (int64_t i = 0; !bad && !wrong && i < rows * N; i++)
                if (c[i] != 1.0f) wrong = 70 + 2 * o + sb;
        }
        if (agmm_plan_destroy(plan) != AGMM_OK && !bad) bad = 64;
    }
    free(a32);
    free(w32);
    free(a);
    free(wt);
    free(c);
    return bad ? bad : wrong;
}

int main(void)
{
    agmm_gemm_engine_kind_t engines[] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                         AGMM_GEMM_ENGINE_ONEDNN};
    agmm_dtype_t dtypes[] = {AGMM_DTYPE_BF16, AGMM_DTYPE_FP32};
    /* The fused GEMM phase both ways: one call per owner's block, and (few
     * rows, the default at these sizes) one call over every block. */
    for (int whole = 0; whole < 2; whole++)
        for (int ei = 0; ei < 2; ei++) {
            if (!agmm_gemm_engine_available(engines[ei])) continue;
            agmm_rs_set_whole_rows(whole ? AGMM_RS_WHOLE_ROWS : -1);
            for (int cw = 0; cw <= 1; cw++) {
                cfg_t cf = {engines[ei], cw, dtypes[cw]};
                agmm_launch_opts_t o = {0};
                o.nranks = P;
                o.timeout_s = 30;
                o.quiet = 1;
                int code = -1;
                agmm_status_t st = agmm_launch(&o, rank_main, &cf, &code);
                CHECK(st == AGMM_OK && code == 0,
                      "%s, one call %d, %d comm workers, %s: exit code %d "
                      "(90+e: off the reference in round e+1; 100+e: not "
                      "bit-identical to round 1; 110: baseline off fused)",
                      agmm_gemm_engine_name(cf.engine), whole, cw,
                      agmm_dtype_name(cf.dtype), code);
                code = -1;
                st = agmm_launch(&o, order_main, &cf, &code);
                CHECK(st == AGMM_OK && code == 0,
                      "%s, one call %d, %d comm workers, %s: the order of "
                      "the sums: exit code %d (70 + 2 op + schedule: C not "
                      "1 in rank order; op 0 gemm-rs, 1 gemm-ar; schedule 0 "
                      "fused, 1 baseline)",
                      agmm_gemm_engine_name(cf.engine), whole, cw,
                      agmm_dtype_name(cf.dtype), code);
            }
        }
    CHECK_DONE("test_rs_repro");
}
