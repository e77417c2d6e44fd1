/* The schedule: every work item is computed exactly once per round, by both
 * schedules, for shapes with uneven and empty shards, partial tiles and any
 * worker counts; and the output equals the reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "ops/common/plan.h"
#include "ops/common/schedule.h"
#include "rank_check.h"

/* Pure: the worker shares tile every (tile, block) exactly once. */
static void test_shares(void)
{
    for (int G = 1; G <= 9; G++)
        for (int64_t nb = 1; nb <= 10; nb++)
            for (int64_t tiles = 0; tiles <= 7; tiles++) {
                int count[8][10];
                memset(count, 0, sizeof count);
                for (int g = 0; g < G; g++) {
                    agmm_worker_share_t s;
                    if (!agmm_worker_share(g, G, nb, &s)) continue;
                    int64_t t0, t1;
                    agmm_share_tiles(&s, tiles, &t0, &t1);
                    for (int64_t t = t0; t < t1; t++)
                        for (int64_t j = s.j0; j < s.j1; j++)
                            count[t][j]++;
                }
                int ok = 1;
                for (int64_t t = 0; t < tiles; t++)
                    for (int64_t j = 0; j < nb; j++)
                        ok &= count[t][j] == 1;
                CHECK(ok, "G=%d blocks=%lld tiles=%lld", G, (long long)nb,
                      (long long)tiles);
                CHECK(agmm_busy_gemm_workers(G, nb) >= (G < nb ? G : nb),
                      "busy workers G=%d blocks=%lld", G, (long long)nb);
            }
}

typedef struct shape {
    int nranks;
    int64_t m_local[4];
    int64_t k, n, tile_m, tile_n;
    agmm_dtype_t dtype;
    agmm_weights_t weights;
    int comm, gemm;
} shape_t;

static const shape_t shapes[] = {
    {1, {37}, 19, 23, 8, 5, AGMM_DTYPE_FP32, AGMM_WEIGHTS_SHARED, 1, 1},
    {2, {64, 64}, 32, 48, 16, 16, AGMM_DTYPE_FP16, AGMM_WEIGHTS_SHARED, 1, 1},
    {2, {100, 3}, 17, 31, 7, 4, AGMM_DTYPE_BF16, AGMM_WEIGHTS_PER_RANK, 0, 3},
    {3, {10, 0, 25}, 9, 40, 4, 7, AGMM_DTYPE_FP16, AGMM_WEIGHTS_PER_RANK, 2, 2},
    {4, {5, 9, 1, 12}, 8, 3, 2, 1, AGMM_DTYPE_FP32, AGMM_WEIGHTS_SHARED, 1, 5},
    {3,
     {33, 33, 33},
     16,
     20,
     64,
     64,
     AGMM_DTYPE_BF16,
     AGMM_WEIGHTS_SHARED,
     0,
     1},
};
#define ROUNDS 3

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

static int rank_main(agmm_world_t *w, void *arg)
{
    const shape_t *s = arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = s->nranks;
    d.m_local = s->m_local;
    d.k = s->k;
    d.n = s->n;
    d.tile_m = s->tile_m;
    d.tile_n = s->tile_n;
    d.dtype = s->dtype;
    d.weights = s->weights;
    d.comm_workers = s->comm;
    d.gemm_workers = s->gemm;
    d.timeout_s = 20;
    agmm_plan_t *p;
    agmm_status_t st = agmm_plan_create(w, &d, &p);
    CHECK(st == AGMM_OK, "plan_create: %s", agmm_status_str(st));
    if (st != AGMM_OK) return rank_checks_save(r);

    size_t es = agmm_dtype_size(s->dtype);
    int64_t M = agmm_plan_rows(p);
    void *wt = malloc((size_t)(s->k * s->n) * es);
    const void *shards[4];
    void *shard_mem[4];
    float *c = malloc(sizeof(float) * (size_t)(M * s->n));
    float *ref = malloc(sizeof(float) * (size_t)(M * s->n));
    fill(wt, s->dtype, s->k * s->n,
         s->weights == AGMM_WEIGHTS_SHARED ? 7u : 100u + (unsigned)r);
    CHECK(agmm_plan_set_weight(p, wt) == AGMM_OK, "set_weight");
    for (int round = 0; round < 2 * ROUNDS; round++) {
        for (int q = 0; q < s->nranks; q++) {
            shard_mem[q] = malloc((size_t)(s->m_local[q] * s->k) * es + 1);
            fill(shard_mem[q], s->dtype, s->m_local[q] * s->k,
                 (unsigned)(round * 31 + q));
            shards[q] = shard_mem[q];
        }
        /* Alternate the schedules: they share windows and epochs. */
        agmm_schedule_t sched =
            round % 2 ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED;
        memset(c, 0xff, sizeof(float) * (size_t)(M * s->n)); /* NaN */
        st = agmm_plan_run(p, sched, shards[r], c);
        CHECK(st == AGMM_OK, "run round %d: %s", round, agmm_status_str(st));
        agmm_reference(s->nranks, shards, s->m_local, s->k, s->n, s->dtype, wt,
                       ref);
        double maxd = 0;
        for (int64_t i = 0; i < M * s->n; i++) {
            double dd = fabs((double)c[i] - (double)ref[i]);
            if (!(dd <= maxd)) maxd = dd; /* NaN propagates */
        }
        CHECK(maxd <= 1e-4, "rank %d round %d (%s): max diff %g", r, round,
              sched ? "baseline" : "fused", maxd);
        for (int q = 0; q < s->nranks; q++)
            free(shard_mem[q]);
    }
    /* Every (tile, block) item of every source, once per round. */
    int64_t bad = 0;
    for (int64_t gt = 0; gt < p->total_tiles; gt++)
        for (int64_t j = 0; j < p->col_blocks; j++)
            bad += agmm_plan_item_count(p, gt, j) != 2 * ROUNDS;
    CHECK(bad == 0, "rank %d: %lld items not computed exactly once per round",
          r, (long long)bad);
    CHECK(agmm_plan_destroy(p) == AGMM_OK, "destroy");
    free(wt);
    free(c);
    free(ref);
    return rank_checks_save(r);
}

int main(void)
{
    test_shares();
    rank_checks_init(4);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        agmm_launch_opts_t o = {0};
        o.nranks = shapes[i].nranks;
        o.timeout_s = 20;
        int code = -1;
        agmm_status_t st =
            agmm_launch(&o, rank_main, (void *)&shapes[i], &code);
        CHECK(st == AGMM_OK && code == 0, "shape %zu: launch %s, exit %d", i,
              agmm_status_str(st), code);
        rank_checks_collect(shapes[i].nranks);
    }
    CHECK_DONE("test_schedule");
}
