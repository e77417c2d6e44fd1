/* GEMM + reduce-scatter and GEMM + all-reduce with rows per call
 * (agmm_run_args_t.m_rows): one plan made for the most rows runs calls
 * whose rows change every call (the most, fewer, partial tiles, 0 on some
 * ranks, 0 on all), each with both schedules. Every call matches
 * agmm_reference_rs within 1e-3 (gemm-rs: the rank's rows of C; gemm-ar:
 * every row of the call, and a hash of C allgathered is the same on every
 * rank), and is bit for bit what a plan made for exactly those rows gives
 * with the same schedule (same GEMM calls, same reduction order). 3 ranks
 * and 1, 0 and 1 comm workers, fp32 and bf16, every GEMM engine built in.
 * Then ranks that pass different m_rows: the owner whose rows they
 * disagree on fails with AGMM_ERR_MISMATCH naming the peer, in both
 * schedules; with gemm-ar the peer, which may wait for that owner's
 * reduced tiles, returns well before the plan's timeout (the abort reaches
 * it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agmm_ext.h"
#include "rank_check.h"
#include "test_data.h"

enum { K = 70, N = 45, MAXSETS = 8 };

typedef struct cfg {
    int nranks;
    int64_t m_max[3];
    int nsets;
    int64_t sets[MAXSETS][3]; /* the calls' rows */
    agmm_gemm_engine_kind_t engine;
    int comm_workers;
    agmm_dtype_t dtype;
    agmm_op_t op;
} cfg_t;

static const cfg_t shapes[] = {
    {3,
     {20, 9, 13},
     7,
     {{20, 9, 13},
      {5, 0, 13},
      {0, 0, 0},
      {1, 9, 2},
      {17, 3, 0},
      {20, 9, 13},
      {0, 9, 0}},
     0,
     0,
     0,
     0},
    {1, {21, 0, 0}, 5, {{21}, {0}, {5}, {13}, {21}}, 0, 0, 0, 0},
};

/* A plan for rows m on GEMM path `path` (AUTO: measured). */
static agmm_plan_t *plan_for(agmm_world_t *w, const cfg_t *cf, const int64_t *m,
                             agmm_gemm_path_t path)
{
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = cf->nranks;
    d.m_local = m;
    d.k = K;
    d.n = N;
    d.tile_m = 8;
    d.tile_n = 16;
    d.dtype = cf->dtype;
    d.gemm_engine = cf->engine;
    d.comm_workers = cf->comm_workers;
    d.gemm_workers = 2;
    d.timeout_s = 30;
    d.gemm_path = path;
    d.op = cf->op;
    agmm_plan_t *p = NULL;
    agmm_status_t st = agmm_plan_create(w, &d, &p);
    CHECK(st == AGMM_OK, "plan: %s", agmm_last_error());
    return st == AGMM_OK ? p : NULL;
}

/* One call on p with rows m (NULL: the plan's) into c; OK or not. */
static int call(agmm_plan_t *p, agmm_schedule_t s, const int64_t *m,
                const void *a, float *c)
{
    void *cs[1] = {c};
    agmm_run_args_t args;
    agmm_run_args_init(&args);
    args.schedule = s;
    args.a_local = a;
    args.c = cs;
    args.m_rows = m;
    agmm_status_t st = agmm_plan_run_args(p, &args);
    CHECK(st == AGMM_OK, "run (%s): %s", agmm_schedule_name(s),
          agmm_last_error());
    return st == AGMM_OK;
}

/* Rows of C on rank r for rows m: its own (gemm-rs) or every row (gemm-ar),
 * from *row0. */
static int64_t c_rows(const cfg_t *cf, const int64_t *m, int r, int64_t *row0)
{
    int64_t M = 0;
    *row0 = 0;
    for (int q = 0; q < cf->nranks; q++) {
        M += m[q];
        *row0 += q < r ? m[q] : 0;
    }
    if (cf->op == AGMM_OP_GEMM_RS) return m[r];
    *row0 = 0;
    return M;
}

/* gemm-ar: is this hash of C the same on every rank (allgathered)? */
static int same_everywhere(agmm_world_t *w, const float *c, int64_t n, int P)
{
    const unsigned char *b = (const unsigned char *)c;
    uint64_t h = 1469598103934665603ull, all[3];
    for (size_t i = 0; i < (size_t)n * sizeof(float); i++)
        h = (h ^ b[i]) * 1099511628211ull;
    if (agmm_world_allgather(w, &h, all, sizeof h) != AGMM_OK) return 0;
    for (int q = 0; q < P; q++)
        if (all[q] != h) return 0;
    return 1;
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *cf = arg;
    rank_checks_begin();
    int r = agmm_world_rank(w), P = cf->nranks;
    int64_t kl[3];
    const void *wt[3];
    for (int q = 0; q < P; q++) {
        kl[q] = agmm_k_split(K, P, q);
        wt[q] = test_make(cf->dtype, 20 + q, kl[q] * N);
    }
    agmm_plan_t *p = plan_for(w, cf, cf->m_max, AGMM_GEMM_PATH_AUTO);
    if (!p) return rank_checks_save(r);
    CHECK(agmm_plan_set_weight(p, wt[r]) == AGMM_OK, "set_weight");
    /* The plans of exactly the calls' rows take the path this one chose
     * (a timed choice may differ, and so would the bits). */
    agmm_gemm_info_t info;
    CHECK(agmm_plan_gemm_info(p, &info) == AGMM_OK, "gemm_info");
    float *got[MAXSETS][2];
    void *a[MAXSETS][3];
    int64_t row0, most = c_rows(cf, cf->m_max, r, &row0);
    size_t cb = sizeof(float) * (size_t)(most * N + 1); /* + a canary */
    float *ref = malloc(cb), *exact = malloc(cb);
    /* The calls on the plan of the most rows, rows changing every call. */
    for (int i = 0; i < cf->nsets; i++) {
        const int64_t *m = cf->sets[i];
        int64_t M = 0, rows = c_rows(cf, m, r, &row0);
        for (int q = 0; q < P; q++)
            M += m[q];
        for (int q = 0; q < P; q++)
            a[i][q] = test_make(cf->dtype, 100 * i + 10 + q, M * kl[q]);
        CHECK(agmm_reference_rs(P, (const void *const *)a[i], wt, kl, M, N,
                                cf->dtype, row0, rows, ref) == AGMM_OK,
              "reference");
        for (int j = 0; j < 2; j++) {
            agmm_schedule_t s =
                (i + j) % 2 ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED;
            got[i][s] = malloc(cb);
            for (int64_t e = 0; e <= rows * N; e++)
                got[i][s][e] = NAN;
            if (!call(p, s, m, a[i][r], got[i][s])) continue;
            if (cf->op == AGMM_OP_GEMM_AR)
                CHECK(same_everywhere(w, got[i][s], rows * N, P),
                      "rank %d call %d (%s): C differs between ranks", r, i,
                      agmm_schedule_name(s));
            CHECK(agmm_plan_rows(p) == M, "call %d: rows %lld, want %lld", i,
                  (long long)agmm_plan_rows(p), (long long)M);
            int bad = 0;
            for (int64_t e = 0; e < rows * N; e++)
                bad += !(fabsf(got[i][s][e] - ref[e]) <=
                         1e-3f + 1e-3f * fabsf(ref[e]));
            CHECK(bad == 0, "rank %d call %d (%s): %d elements off", r, i,
                  agmm_schedule_name(s), bad);
            CHECK(isnan(got[i][s][rows * N]), "c written past its rows");
        }
    }
    CHECK(agmm_plan_destroy(p) == AGMM_OK, "destroy");
    /* The same calls on plans made for exactly their rows. */
    for (int i = 0; i < cf->nsets; i++) {
        const int64_t *m = cf->sets[i];
        int64_t M = 0, rows = c_rows(cf, m, r, &row0);
        for (int q = 0; q < P; q++)
            M += m[q];
        agmm_plan_t *x = M > 0 ? plan_for(w, cf, m, info.path) : NULL;
        if (x) CHECK(agmm_plan_set_weight(x, wt[r]) == AGMM_OK, "set_weight");
        for (int s = 0; x && s < 2; s++) {
            if (!call(x, (agmm_schedule_t)s, NULL, a[i][r], exact)) continue;
            CHECK(memcmp(exact, got[i][s],
                         sizeof(float) * (size_t)(rows * N)) == 0,
                  "rank %d call %d (%s): not bit for bit the plan of its rows",
                  r, i, agmm_schedule_name((agmm_schedule_t)s));
        }
        if (x) CHECK(agmm_plan_destroy(x) == AGMM_OK, "destroy");
    }
    for (int i = 0; i < cf->nsets; i++) {
        free(got[i][0]);
        free(got[i][1]);
        for (int q = 0; q < P; q++)
            free(a[i][q]);
    }
    for (int q = 0; q < P; q++)
        free((void *)wt[q]);
    free(ref);
    free(exact);
    return rank_checks_save(r);
}

/* The m_rows each rank passes in a mismatch case: rank 0 and rank 1 are
 * told different rows of rank 0 (rank 0 is the owner that sees it). */
typedef struct mis {
    int64_t rank0[2], rank1[2];
    agmm_schedule_t schedule;
    agmm_op_t op;
} mis_t;

static int mismatch_main(agmm_world_t *w, void *arg)
{
    const mis_t *mc = arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    cfg_t cf = {2, {8, 8},          0,     {{0}}, AGMM_GEMM_ENGINE_AUTO,
                0, AGMM_DTYPE_FP32, mc->op};
    agmm_plan_t *p = plan_for(w, &cf, cf.m_max, AGMM_GEMM_PATH_AUTO);
    if (!p) return rank_checks_save(r);
    float wt[35 * N], a[16 * 35], c[16 * N]; /* gemm-ar: every row */
    memset(wt, 0, sizeof wt);
    memset(a, 0, sizeof a);
    CHECK(agmm_plan_set_weight(p, wt) == AGMM_OK, "set_weight");
    const int64_t *m = r == 0 ? mc->rank0 : mc->rank1;
    void *cs[1] = {c};
    agmm_run_args_t args;
    agmm_run_args_init(&args);
    args.schedule = mc->schedule;
    args.a_local = a;
    args.c = cs;
    args.m_rows = m;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    agmm_status_t st = agmm_plan_run_args(p, &args);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    char want[80];
    snprintf(want, sizeof want, "but rank 1 sends %lld",
             (long long)mc->rank1[0]);
    if (r == 0) {
        CHECK(st == AGMM_ERR_MISMATCH, "rank 0: %s", agmm_status_str(st));
        CHECK(strstr(agmm_last_error(), "rows from rank 1") &&
                  strstr(agmm_last_error(), want),
              "rank 0 names rank 1 and its count: %s", agmm_last_error());
    } else {
        CHECK(st == AGMM_OK || st == AGMM_ERR_ABORTED, "rank 1: %s",
              agmm_status_str(st));
        /* not the plan's timeout (30 s): rank 0's abort woke it */
        CHECK(secs < 10, "rank 1 returned after %.1f s", secs);
    }
    agmm_plan_destroy(p);
    rank_checks_save(r);
    return r == 0 ? 3 : 0; /* the launcher reports the failed rank */
}

int main(void)
{
    rank_checks_init(3);
    agmm_dtype_t dtypes[] = {AGMM_DTYPE_FP32, AGMM_DTYPE_BF16};
    agmm_op_t ops[] = {AGMM_OP_GEMM_RS, AGMM_OP_GEMM_AR};
    for (int e = 1; e <= 2; e++) {
        agmm_gemm_engine_kind_t eng = (agmm_gemm_engine_kind_t)e;
        if (!agmm_gemm_engine_available(eng)) continue;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] * 2; i++)
            for (int cw = 0; cw <= 1; cw++) {
                cfg_t cf = shapes[i / 2];
                cf.op = ops[i % 2];
                cf.engine = eng;
                cf.comm_workers = cw;
                cf.dtype = dtypes[cw];
                agmm_launch_opts_t o = {0};
                o.nranks = cf.nranks;
                o.timeout_s = 60;
                o.quiet = 1;
                int code = -1;
                agmm_status_t st = agmm_launch(&o, rank_main, &cf, &code);
                CHECK(st == AGMM_OK && code == 0,
                      "%s, %s, %d ranks, %d comm workers, %s: launch %s, exit "
                      "%d",
                      agmm_op_name(cf.op), agmm_gemm_engine_name(eng),
                      cf.nranks, cw, agmm_dtype_name(cf.dtype),
                      agmm_status_str(st), code);
                rank_checks_collect(cf.nranks);
            }
    }
    /* Rank 1 sends fewer rows of rank 0 (one tile fewer), none (no tile
     * at all), or more than rank 0 has (rank 0 has none: it sums nothing,
     * and checks at the end of its round). */
    const mis_t cases[] = {
        {{5, 6}, {4, 6}, 0, 0}, {{8, 6}, {0, 6}, 0, 0}, {{0, 6}, {3, 6}, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int s = 0; s < 4; s++) {
            mis_t mc = cases[i];
            mc.schedule = (agmm_schedule_t)(s % 2);
            mc.op = ops[s / 2];
            agmm_launch_opts_t o = {0};
            o.nranks = 2;
            o.timeout_s = 20;
            o.quiet = 1;
            int code = -1;
            agmm_launch(&o, mismatch_main, &mc, &code);
            rank_checks_collect(2);
            CHECK(code != 0, "a rows mismatch (%s, case %zu, %s) fails the run",
                  agmm_op_name(mc.op), i, agmm_schedule_name(mc.schedule));
        }
    CHECK_DONE("test_rs_rows");
}
