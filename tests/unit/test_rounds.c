/* Stress through the library: random shapes, tiles, dtypes, weight modes
 * and worker counts, 1..4 ranks oversubscribing the cores, many rounds per
 * plan with the inputs changing every round and the fused and baseline
 * schedules alternating at random; every round of every rank is compared
 * with agmm_reference().
 *
 * Each configuration draws its GEMM engine among those built in, and its
 * GEMM path (auto, native where the engine has it, f32).
 *
 * Inputs are small multiples of 1/2, so every product and sum is exact in
 * fp32 (and in fp16/bf16 inputs): the result must equal the reference bit
 * for bit, whatever order the BLAS adds in. C is filled with NaN before
 * each round, so an element nobody wrote fails too.
 *
 * usage: test_rounds [configs [rounds [seed]]]   (default 24 40 1) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"

#define MAX_RANKS 4

typedef struct config {
    agmm_plan_desc_t desc;
    int64_t m_local[MAX_RANKS];
    int rounds;
    uint64_t seed;
} config_t;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int64_t pick(uint64_t *s, int64_t lo, int64_t hi)
{
    *s = mix(*s);
    return lo + (int64_t)(*s % (uint64_t)(hi - lo + 1));
}

/* Value i of stream (round, id): one of -2, -1.5, ..., 2. */
static float value(uint64_t seed, int round, int id, int64_t i)
{
    uint64_t h = mix(seed ^ mix(((uint64_t)round << 32) ^ ((uint64_t)id << 8) ^
                                mix((uint64_t)i)));
    return (float)((int)(h % 9) - 4) * 0.5f;
}

static void *make(const config_t *cf, int round, int id, int64_t n)
{
    float *f = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    void *out = malloc(4 * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        f[i] = value(cf->seed, round, id, i);
    agmm_convert_from_fp32(cf->desc.dtype, f, out, (size_t)n);
    free(f);
    return out;
}

/* Per rank: one plan, `rounds` rounds; returns the number of wrong
 * elements (or 1000000 + round on an API failure). */
static int rank_main(agmm_world_t *w, void *arg)
{
    const config_t *cf = arg;
    const agmm_plan_desc_t *d = &cf->desc;
    int r = agmm_world_rank(w), P = d->nranks;
    int64_t M = 0, k = d->k, n = d->n;
    for (int p = 0; p < P; p++)
        M += d->m_local[p];
    agmm_plan_t *plan = NULL;
    if (agmm_plan_create(w, d, &plan) != AGMM_OK) return 100;
    int wid = d->weights == AGMM_WEIGHTS_SHARED ? -1 : r;
    void *wt = make(cf, -1, wid, k * n);
    float *c = malloc(sizeof(float) * (size_t)(M * n));
    float *ref = malloc(sizeof(float) * (size_t)(M * n));
    int bad = agmm_plan_set_weight(plan, wt) != AGMM_OK ? 101 : 0;
    agmm_gemm_info_t gi0, gi1;
    if (!bad && agmm_plan_gemm_info(plan, &gi0) != AGMM_OK) bad = 105;
    uint64_t sched = cf->seed ^ 0x5eed;
    for (int round = 0; round < cf->rounds && !bad; round++) {
        void *shards[MAX_RANKS];
        for (int p = 0; p < P; p++)
            shards[p] = make(cf, round, p, d->m_local[p] * k);
        for (int64_t i = 0; i < M * n; i++)
            c[i] = NAN;
        agmm_schedule_t s =
            pick(&sched, 0, 2) ? AGMM_SCHEDULE_FUSED : AGMM_SCHEDULE_BASELINE;
        if (agmm_plan_run(plan, s, shards[r], c) != AGMM_OK) {
            bad = 102;
        } else if (agmm_reference(P, (const void *const *)shards, d->m_local, k,
                                  n, d->dtype, wt, ref) != AGMM_OK) {
            bad = 103;
        } else {
            int64_t wrong = 0, first = -1;
            for (int64_t i = 0; i < M * n; i++)
                if (!(c[i] == ref[i]) && wrong++ == 0) first = i;
            if (wrong) {
                fprintf(stderr,
                        "rank %d round %d (%s): %lld of %lld elements wrong, "
                        "first at row %lld col %lld: %g, want %g\n",
                        r, round,
                        s == AGMM_SCHEDULE_FUSED ? "fused" : "baseline",
                        (long long)wrong, (long long)(M * n),
                        (long long)(first / n), (long long)(first % n),
                        (double)c[first], (double)ref[first]);
                bad = 1;
            }
        }
        for (int p = 0; p < P; p++)
            free(shards[p]);
    }
    /* No engine primitive was created by a round. */
    if (!bad && (agmm_plan_gemm_info(plan, &gi1) != AGMM_OK ||
                 gi1.primitives_created != gi0.primitives_created)) {
        fprintf(stderr, "rank %d: %llu primitives created during rounds\n", r,
                (unsigned long long)(gi1.primitives_created -
                                     gi0.primitives_created));
        bad = 106;
    }
    if (!bad && agmm_plan_destroy(plan) != AGMM_OK) bad = 104;
    free(wt);
    free(c);
    free(ref);
    return bad;
}

int main(int argc, char **argv)
{
    int configs = argc > 1 ? atoi(argv[1]) : 24;
    int rounds = argc > 2 ? atoi(argv[2]) : 40;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    uint64_t s = seed;
    int total_rounds = 0;
    for (int i = 0; i < configs; i++) {
        config_t cf;
        memset(&cf, 0, sizeof cf);
        agmm_plan_desc_t *d = &cf.desc;
        agmm_plan_desc_init(d);
        d->nranks = (int)pick(&s, 1, MAX_RANKS);
        int64_t M = 0;
        for (int p = 0; p < d->nranks; p++) {
            /* Some empty shards, some shorter than a tile. */
            cf.m_local[p] = pick(&s, 0, 4) == 0 ? 0 : pick(&s, 1, 37);
            M += cf.m_local[p];
        }
        if (M == 0) cf.m_local[d->nranks - 1] = 1;
        d->m_local = cf.m_local;
        d->k = pick(&s, 1, 33);
        d->n = pick(&s, 1, 41);
        d->tile_m = pick(&s, 1, 12);
        d->tile_n = pick(&s, 1, 16);
        d->dtype = (agmm_dtype_t)pick(&s, 0, 2);
        d->weights = (agmm_weights_t)pick(&s, 0, 1);
        d->comm_workers = (int)pick(&s, 0, 2);
        d->gemm_workers = (int)pick(&s, 1, 3);
        d->timeout_s = 60;
        /* Either engine built in (drawn last: earlier draws unchanged). */
        d->gemm_engine = agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN) &&
                                 pick(&s, 0, 1)
                             ? AGMM_GEMM_ENGINE_ONEDNN
                             : AGMM_GEMM_ENGINE_OPENBLAS;
        /* The GEMM path likewise, among those the engine has for the
         * dtype (drawn after the engine). */
        d->gemm_path = (agmm_gemm_path_t)pick(&s, 0, 2);
        if (d->gemm_path == AGMM_GEMM_PATH_NATIVE &&
            agmm_plan_desc_check(d) == AGMM_ERR_UNSUPPORTED)
            d->gemm_path = AGMM_GEMM_PATH_F32;
        cf.rounds = rounds;
        cf.seed = mix(seed + (uint64_t)i);

        agmm_launch_opts_t o = {0};
        o.nranks = d->nranks;
        o.timeout_s = 60;
        int code = -1;
        agmm_status_t st = agmm_launch(&o, rank_main, &cf, &code);
        char m[64] = "";
        for (int p = 0, len = 0; p < d->nranks; p++)
            len += snprintf(m + len, sizeof m - (size_t)len, "%s%lld",
                            p ? "," : "", (long long)cf.m_local[p]);
        CHECK(st == AGMM_OK && code == 0,
              "config %d: ranks %d m_local %s k %lld n %lld tiles %lldx%lld %s "
              "%s weights, %d comm + %d GEMM workers, %s, path %s: exit code "
              "%d",
              i, d->nranks, m, (long long)d->k, (long long)d->n,
              (long long)d->tile_m, (long long)d->tile_n,
              agmm_dtype_name(d->dtype),
              d->weights == AGMM_WEIGHTS_SHARED ? "shared" : "per-rank",
              d->comm_workers, d->gemm_workers,
              agmm_gemm_engine_name(d->gemm_engine),
              agmm_gemm_path_name(d->gemm_path), code);
        total_rounds += rounds;
    }
    printf("test_rounds: %d configurations, %d rounds each, %d rounds checked "
           "on every rank (seed %llu)\n",
           configs, rounds, total_rounds, (unsigned long long)seed);
    CHECK_DONE("test_rounds");
}
