/* GEMM + reduce-scatter is bit-reproducible whatever order the partial
 * tiles arrive in: the owner sums sources in rank order 0..P-1.
 *
 * Three ranks, the same inputs every round, values with many significant
 * bits (so fp32 sums depend on their order). Round 1: fused, nobody
 * delayed. Rounds 2 and 3: fused with rank 0 (then rank 2) sleeping 30 ms
 * before the round, so its tiles reach their owners last instead of
 * first. Their C must equal round 1's bit for bit on every rank. Round 4
 * (baseline: whole partial GEMM, bulk puts, the same fixed-order sum) must
 * match within a tight tolerance (its GEMM calls cover different row
 * counts, which an engine may block differently), and every round
 * matches agmm_reference_rs within 1e-3. Per GEMM engine built in, with
 * 1 comm worker, and with 0 (the GEMM workers put). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agmm_ext.h"
#include "check.h"
#include "ops/gemm_rs/tiles.h"
#include "test_data.h"

#define P 3
static const int64_t m_local[P] = {37, 0, 29};
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

/* Returns 0, or a code saying what went wrong on this rank. */
static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P;
    d.m_local = m_local;
    d.k = K;
    d.n = N;
    d.tile_m = 8;
    d.tile_n = 16;
    d.dtype = cf->dtype;
    d.gemm_engine = cf->engine;
    d.comm_workers = cf->comm_workers;
    d.gemm_workers = 2;
    d.op = AGMM_OP_GEMM_RS;
    agmm_plan_t *plan = NULL;
    if (agmm_plan_create(w, &d, &plan) != AGMM_OK) return 100;
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
    int bad = agmm_plan_set_weight(plan, wt[r]) != AGMM_OK ? 101 : 0;
    if (!bad &&
        agmm_reference_rs(P, (const void *const *)a, (const void *const *)wt,
                          (const int64_t[]){kpart(0), kpart(1), kpart(2)}, M, N,
                          cf->dtype, row0, rows, ref) != AGMM_OK)
        bad = 102;
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
            bad = 103 + e;
    }
    for (int e = 0; !bad && e < ROUNDS; e++)
        for (int64_t i = 0; i < rows * N; i++) {
            if (!(fabsf(c[e][i] - ref[i]) <= 1e-3f + 1e-3f * fabsf(ref[i])))
                bad = 110 + e;
            if (e == 1 || e == 2) /* bit for bit */
                if (memcmp(&c[e][i], &c[0][i], sizeof(float))) bad = 120 + e;
            if (e == 3 &&
                !(fabsf(c[3][i] - c[0][i]) <= 1e-5f * (1 + fabsf(c[0][i]))))
                bad = 130;
        }
    if (agmm_plan_destroy(plan) != AGMM_OK && !bad) bad = 140;
    for (int e = 0; e < ROUNDS; e++)
        free(c[e]);
    for (int p = 0; p < P; p++) {
        free(a[p]);
        free(wt[p]);
    }
    free(ref);
    return bad;
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
                      "(110+e: off the reference in round e+1; 120+e: not "
                      "bit-identical to round 1; 130: baseline off fused)",
                      agmm_gemm_engine_name(cf.engine), whole, cw,
                      agmm_dtype_name(cf.dtype), code);
            }
        }
    CHECK_DONE("test_rs_repro");
}
