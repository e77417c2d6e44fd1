/* All-gather + GEMM with the extended call (agmm_plan_run_args): several
 * weights from one gather, rows that change every round (0 and the plan's
 * most included) and the gathered A handed back. Every round of every rank
 * is compared with agmm_reference (each weight's C within 1e-4, the
 * gathered A byte for byte), for both schedules and auto, 1-4 ranks,
 * uneven and empty shards, partial tiles, fp16/bf16/fp32, 0/1/2 comm
 * workers and every GEMM engine built in. Then ranks that pass different
 * rows: every rank fails, and the one that saw it names the peer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "rank_check.h"

typedef struct shape {
    int nranks;
    int64_t m_max[4];
    int64_t k;
    int nw;
    int64_t n[3];
    int64_t tile_m, tile_n;
    agmm_dtype_t dtype;
    int comm, gemm;
    int dynamic; /* rows change every round */
    agmm_gemm_engine_kind_t engine;
} shape_t;

static const shape_t base_shapes[] = {
    {1, {37}, 19, 3, {23, 8, 5}, 8, 5, AGMM_DTYPE_FP32, 1, 1, 1, 0},
    {2, {64, 64}, 32, 3, {48, 16, 16}, 16, 16, AGMM_DTYPE_FP16, 1, 1, 1, 0},
    {2, {100, 3}, 17, 2, {31, 9, 0}, 7, 4, AGMM_DTYPE_BF16, 0, 3, 1, 0},
    {3, {10, 0, 25}, 9, 3, {40, 7, 13}, 4, 7, AGMM_DTYPE_FP16, 2, 2, 1, 0},
    {4, {5, 9, 1, 12}, 8, 2, {3, 11, 0}, 2, 1, AGMM_DTYPE_FP32, 1, 2, 1, 0},
    {3, {33, 33, 33}, 16, 1, {20, 0, 0}, 64, 64, AGMM_DTYPE_BF16, 0, 1, 1, 0},
    {2, {16, 16}, 24, 3, {32, 32, 32}, 16, 32, AGMM_DTYPE_BF16, 1, 1, 0, 0},
};
#define NBASE  (sizeof base_shapes / sizeof base_shapes[0])
#define ROUNDS 9

static void fill(void *dst, agmm_dtype_t dt, int64_t n, unsigned seed)
{
    float *f = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++)
        f[i] = (float)((int)((seed * 2654435761u + (unsigned)i * 40503u) % 17) -
                       8) /
               8.0f;
    agmm_convert_from_fp32(dt, f, dst, (size_t)n);
    free(f);
}

/* Rows of rank q in round i: the most, 0, 1, a partial tile, ... and every
 * rank 0 once (round 4). The same on every rank. */
static int64_t rows_of(const shape_t *s, int q, int i)
{
    int64_t mx = s->m_max[q];
    if (!s->dynamic) return mx;
    switch ((i + q) % 5) {
    case 0:
        return mx;
    case 1:
        return i == 4 ? 0 : (mx > 0 ? 1 : 0);
    case 2:
        return 0;
    case 3:
        return mx / 2 + (mx > 2);
    default:
        return mx > 0 ? mx - 1 : 0;
    }
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const shape_t *s = arg;
    rank_checks_begin();
    int r = agmm_world_rank(w), P = s->nranks;
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P;
    d.m_local = s->m_max;
    d.k = s->k;
    d.n_weights = s->nw;
    d.n_list = s->n;
    d.n = 0; /* ignored with n_list */
    d.tile_m = s->tile_m;
    d.tile_n = s->tile_n;
    d.dtype = s->dtype;
    d.comm_workers = s->comm;
    d.gemm_workers = s->gemm;
    d.gemm_engine = s->engine;
    d.timeout_s = 20;
    agmm_plan_t *p;
    agmm_status_t st = agmm_plan_create(w, &d, &p);
    CHECK(st == AGMM_OK, "plan_create: %s %s", agmm_status_str(st),
          agmm_last_error());
    if (st != AGMM_OK) return rank_checks_save(r);
    CHECK(agmm_plan_weights(p) == s->nw, "weights %d", agmm_plan_weights(p));
    CHECK(agmm_plan_cols(p, s->nw - 1) == s->n[s->nw - 1], "cols");
    CHECK(agmm_plan_cols(p, s->nw) == -1, "cols out of range");

    size_t es = agmm_dtype_size(s->dtype);
    int64_t Mmax = 0;
    for (int q = 0; q < P; q++)
        Mmax += s->m_max[q];
    void *wt[3];
    float *c[3], *ref = malloc(sizeof(float) * (size_t)(Mmax * 64 + 1));
    void *cv[3]; /* the outputs as run_args takes them */
    agmm_run_args_t a;
    agmm_run_args_init(&a);
    /* A run before every weight is set is refused (and aborts the world:
     * so only check the setter's range here). */
    CHECK(agmm_plan_set_weight_i(p, s->nw, "x") == AGMM_ERR_INVALID_ARG,
          "set_weight_i out of range");
    for (int i = 0; i < s->nw; i++) {
        wt[i] = malloc((size_t)(s->k * s->n[i]) * es);
        cv[i] = c[i] = malloc(sizeof(float) * (size_t)(Mmax * s->n[i] + 1));
        fill(wt[i], s->dtype, s->k * s->n[i], 7u + (unsigned)i);
        CHECK(agmm_plan_set_weight_i(p, i, wt[i]) == AGMM_OK, "set_weight_i");
    }
    unsigned char *gath = malloc((size_t)(Mmax * s->k) * es + 1);
    unsigned char *gref = malloc((size_t)(Mmax * s->k) * es + 1);
    for (int round = 0; round < ROUNDS; round++) {
        int64_t m[4], M = 0;
        const void *shards[4];
        void *shard_mem[4];
        for (int q = 0; q < P; q++) {
            m[q] = rows_of(s, q, round);
            shard_mem[q] = malloc((size_t)(m[q] * s->k) * es + 1);
            fill(shard_mem[q], s->dtype, m[q] * s->k,
                 (unsigned)(round * 31 + q));
            shards[q] = shard_mem[q];
            M += m[q];
        }
        agmm_schedule_t sched = (agmm_schedule_t)(round % 3);
        for (int i = 0; i < s->nw; i++)
            memset(c[i], 0xff, sizeof(float) * (size_t)(Mmax * s->n[i]));
        memset(gath, 0xa5, (size_t)(Mmax * s->k) * es + 1);
        a.schedule = sched;
        a.a_local = shards[r];
        a.c = cv;
        a.m_rows = s->dynamic ? m : NULL;
        a.a_gathered = round % 2 ? NULL : gath;
        st = agmm_plan_run_args(p, &a);
        CHECK(st == AGMM_OK, "run round %d: %s %s", round, agmm_status_str(st),
              agmm_last_error());
        CHECK(agmm_plan_rows(p) == M, "rows %lld, want %lld",
              (long long)agmm_plan_rows(p), (long long)M);
        if (P > 1) CHECK(agmm_plan_row_offset(p, 1) == m[0], "row offset");
        for (int i = 0; i < s->nw && M > 0; i++) {
            agmm_reference(P, shards, m, s->k, s->n[i], s->dtype, wt[i], ref);
            double maxd = 0;
            for (int64_t e = 0; e < M * s->n[i]; e++) {
                double dd = fabs((double)c[i][e] - (double)ref[e]);
                if (!(dd <= maxd)) maxd = dd; /* NaN propagates */
            }
            CHECK(maxd <= 1e-4, "rank %d round %d (%s) weight %d: max diff %g",
                  r, round, agmm_schedule_name(sched), i, maxd);
        }
        if (a.a_gathered) {
            size_t off = 0, row = (size_t)s->k * es;
            for (int q = 0; q < P; q++) {
                memcpy(gref + off, shards[q], (size_t)m[q] * row);
                off += (size_t)m[q] * row;
            }
            CHECK(memcmp(gath, gref, off) == 0,
                  "rank %d round %d: gathered A differs", r, round);
            CHECK(gath[off] == 0xa5, "gathered A written past M rows");
        }
        for (int q = 0; q < P; q++)
            free(shard_mem[q]);
    }
    CHECK(agmm_plan_destroy(p) == AGMM_OK, "destroy");
    for (int i = 0; i < s->nw; i++) {
        free(wt[i]);
        free(c[i]);
    }
    free(ref);
    free(gath);
    free(gref);
    return rank_checks_save(r);
}

/* oneDNN: 150 different row counts on one plan, every result right, and
 * the primitives made for them bounded (64 on demand, then powers of two:
 * at most 96 per prepared weight, gemm/onednn/prep.c). */
static int bounded_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    rank_checks_begin();
    int64_t mx[1] = {160};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = 1;
    d.m_local = mx;
    d.k = 16;
    d.n = 8;
    d.tile_m = 32;
    d.tile_n = 8;
    d.dtype = AGMM_DTYPE_FP32;
    d.gemm_engine = AGMM_GEMM_ENGINE_ONEDNN;
    d.comm_workers = 0;
    agmm_plan_t *p;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 1;
    float wt[16 * 8], a[160 * 16], c[160 * 8], ref[160 * 8];
    fill(wt, AGMM_DTYPE_FP32, 16 * 8, 3);
    fill(a, AGMM_DTYPE_FP32, 160 * 16, 5);
    CHECK(agmm_plan_set_weight(p, wt) == AGMM_OK, "set_weight");
    agmm_gemm_info_t g0, g1;
    agmm_plan_gemm_info(p, &g0);
    void *cs[1] = {c};
    const void *sh[1] = {a};
    int bad = 0;
    for (int64_t m = 1; m <= 150; m++) {
        int64_t rows[1] = {m};
        agmm_run_args_t args;
        agmm_run_args_init(&args);
        args.schedule = m % 2 ? AGMM_SCHEDULE_FUSED : AGMM_SCHEDULE_BASELINE;
        args.a_local = a;
        args.c = cs;
        args.m_rows = rows;
        CHECK(agmm_plan_run_args(p, &args) == AGMM_OK, "run m=%lld: %s",
              (long long)m, agmm_last_error());
        agmm_reference(1, sh, rows, 16, 8, AGMM_DTYPE_FP32, wt, ref);
        for (int64_t i = 0; i < m * 8; i++)
            bad += fabsf(c[i] - ref[i]) > 1e-4f;
    }
    CHECK(bad == 0, "%d elements wrong over 150 row counts", bad);
    agmm_plan_gemm_info(p, &g1);
    uint64_t made = g1.primitives_created - g0.primitives_created;
    CHECK(made <= 96, "%llu primitives made for 150 row counts (at most 96)",
          (unsigned long long)made);
    agmm_plan_destroy(p);
    return rank_checks_save(0);
}

/* Rank 1 is told rank 0 has fewer rows than rank 0 says (arg 0: 4
 * against 5, one tile fewer), or more (arg 1: 8 against 3, a tile rank 0
 * does not send this call). */
static int mismatch_main(agmm_world_t *w, void *arg)
{
    int more = *(const int *)arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    int64_t mx[2] = {8, 8};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = 2;
    d.m_local = mx;
    d.k = 8;
    d.n = 8;
    d.tile_m = 4;
    d.tile_n = 8;
    d.dtype = AGMM_DTYPE_FP32;
    d.timeout_s = 20;
    agmm_plan_t *p;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 1;
    float wt[64] = {0}, a_loc[64] = {0}, c[16 * 8];
    CHECK(agmm_plan_set_weight(p, wt) == AGMM_OK, "set_weight");
    int64_t m[2] = {more ? (r == 1 ? 8 : 3) : (r == 1 ? 4 : 5), 6};
    void *cs[1] = {c};
    agmm_run_args_t a;
    agmm_run_args_init(&a);
    a.a_local = a_loc;
    a.c = cs;
    a.m_rows = m;
    agmm_status_t st = agmm_plan_run_args(p, &a);
    /* Rank 0 got what it expected (its rows are right for its m_rows);
     * rank 1 must refuse rank 0's rows and name it. */
    if (r == 1) {
        CHECK(st == AGMM_ERR_MISMATCH, "rank 1: %s", agmm_status_str(st));
        CHECK(strstr(agmm_last_error(), "rows from rank 0") != NULL,
              "rank 1 names rank 0: %s", agmm_last_error());
    } else {
        CHECK(st == AGMM_OK || st == AGMM_ERR_ABORTED, "rank 0: %s",
              agmm_status_str(st));
    }
    agmm_plan_destroy(p);
    rank_checks_save(r);
    return r == 1 ? 3 : 0; /* the launcher reports the failed rank */
}

/* Descriptions and calls refused without a world. */
static void test_refusals(void)
{
    int64_t m[2] = {4, 4}, n[AGMM_MAX_WEIGHTS + 1];
    for (int i = 0; i <= AGMM_MAX_WEIGHTS; i++)
        n[i] = 8;
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = 2;
    d.m_local = m;
    d.n_list = n;
    d.n_weights = AGMM_MAX_WEIGHTS;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "16 weights: %s",
          agmm_last_error());
    uint64_t b16 = agmm_plan_bytes_per_rank(&d);
    d.n_weights = 1;
    CHECK(agmm_plan_bytes_per_rank(&d) < b16, "16 weights need more than 1");
    d.n_weights = AGMM_MAX_WEIGHTS + 1;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG,
          "17 weights refused");
    d.n_weights = 0;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG,
          "n_list with 0 weights");
    d.n_weights = 2;
    n[1] = 0;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "n_list[1]"),
          "a weight of 0 columns names it: %s", agmm_last_error());
    n[1] = 8;
    d.op = AGMM_OP_GEMM_RS;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_UNSUPPORTED,
          "gemm-rs, 2 weights");
    d.op = AGMM_OP_AG_GEMM;
    d.n_list = NULL;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG,
          "2 weights, no list");
    CHECK(agmm_plan_run_args(NULL, NULL) == AGMM_ERR_INVALID_ARG,
          "run_args(NULL)");
    agmm_run_args_t a;
    memset(&a, 0x5a, sizeof a);
    agmm_run_args_init(&a);
    CHECK(a.c == NULL && a.m_rows == NULL && a.a_gathered == NULL &&
              a.schedule == AGMM_SCHEDULE_FUSED,
          "run_args_init zeroes");
    CHECK(agmm_plan_run_args(NULL, &a) == AGMM_ERR_INVALID_ARG, "NULL plan");
    CHECK(agmm_plan_weights(NULL) == -1 && agmm_plan_cols(NULL, 0) == -1,
          "queries");
    CHECK(agmm_plan_set_weight_i(NULL, 0, n) == AGMM_ERR_INVALID_ARG,
          "set_weight_i");
}

int main(void)
{
    test_refusals();
    rank_checks_init(4);
    for (int e = 1; e <= 2; e++) {
        agmm_gemm_engine_kind_t eng = (agmm_gemm_engine_kind_t)e;
        if (!agmm_gemm_engine_available(eng)) continue;
        for (size_t i = 0; i < NBASE; i++) {
            shape_t s = base_shapes[i];
            s.engine = eng;
            agmm_launch_opts_t o = {0};
            o.nranks = s.nranks;
            o.timeout_s = 20;
            o.quiet = 1;
            int code = -1;
            agmm_status_t st = agmm_launch(&o, rank_main, &s, &code);
            CHECK(st == AGMM_OK && code == 0,
                  "%s shape %zu: launch %s, exit %d",
                  agmm_gemm_engine_name(eng), i, agmm_status_str(st), code);
            rank_checks_collect(s.nranks);
        }
    }
    if (agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN)) {
        agmm_launch_opts_t o1 = {0};
        o1.nranks = 1;
        o1.timeout_s = 20;
        int c1 = -1;
        agmm_launch(&o1, bounded_main, NULL, &c1);
        rank_checks_collect(1);
        CHECK(c1 == 0, "bounded primitives: exit %d", c1);
    }
    for (int more = 0; more <= 1; more++) {
        agmm_launch_opts_t o = {0};
        o.nranks = 2;
        o.timeout_s = 20;
        o.quiet = 1;
        int code = -1;
        agmm_launch(&o, mismatch_main, &more, &code);
        rank_checks_collect(2);
        CHECK(code != 0, "a rows mismatch (%s) fails the run",
              more ? "more" : "fewer");
    }
    CHECK_DONE("test_multi");
}
