/* The GEMM path (agmm_gemm_path_t): chosen by measurement, agreed by the
 * ranks, cached, forced, refused.
 *
 *   - the decision: from injected per-rank times, the path whose slowest
 *     rank is fastest, a tie to native; both outcomes;
 *   - a plan with injected probe times (the measurement replaced): where
 *     native is faster every rank runs native, where f32 is faster f32,
 *     and where the ranks disagree the slowest rank decides;
 *   - measured for real (oneDNN bf16): a first plan measures (time > 0,
 *     both candidates with a rate), a second plan of the same shape times
 *     nothing ("cached") and runs the same path;
 *   - forced: f32 runs f32 ("forced"); native where the engine has none
 *     (OpenBLAS) is refused by name; an invalid value too;
 *   - every path's rounds equal the reference (fused and baseline). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/gemm.h"
#include "ops/common/path.h"
#include "ops/common/plan.h"

enum { P = 2, K = 96, N = 80 };
static const int64_t m_local[P] = {40, 24};

/* Injected times (us) per rank: [rank][native, f32]. */
static double fake[P][2];

static agmm_status_t fake_probe(int rank, int f32, double *call_us,
                                double *conv_us)
{
    *call_us = fake[rank][f32];
    *conv_us = 0;
    return AGMM_OK;
}

static void desc_for(agmm_plan_desc_t *d, agmm_gemm_engine_kind_t e,
                     agmm_gemm_path_t path)
{
    agmm_plan_desc_init(d);
    d->nranks = P;
    d->m_local = m_local;
    d->k = K;
    d->n = N;
    d->tile_m = 16;
    d->tile_n = 32;
    d->dtype = AGMM_DTYPE_BF16;
    d->gemm_engine = e;
    d->gemm_path = path;
    d->comm_workers = 0;
    d->gemm_workers = 1;
}

static float value(int64_t i)
{
    return (float)((i * 37 % 23) - 11) / 16.0f;
}

/* One round of each schedule against the reference (bf16 inputs exact in
 * fp32, so the only difference is the summation order). */
static int rounds_match(agmm_world_t *w, agmm_plan_t *p)
{
    int r = agmm_world_rank(w);
    int64_t M = m_local[0] + m_local[1], row0 = r ? m_local[0] : 0;
    float *f = malloc(sizeof(float) * (size_t)(M * K + K * N));
    uint16_t *a = malloc(2 * (size_t)(M * K)), *wt = malloc(2 * K * N);
    float *c = malloc(sizeof(float) * (size_t)(M * N)),
          *ref = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t i = 0; i < M * K + K * N; i++)
        f[i] = value(i);
    agmm_convert_from_fp32(AGMM_DTYPE_BF16, f, a, (size_t)(M * K));
    agmm_convert_from_fp32(AGMM_DTYPE_BF16, f + M * K, wt, K * N);
    const void *shards[P] = {a, a + m_local[0] * K};
    int bad = agmm_plan_set_weight(p, wt) != AGMM_OK ||
              agmm_reference(P, shards, m_local, K, N, AGMM_DTYPE_BF16, wt,
                             ref) != AGMM_OK;
    for (int s = 0; s < 2 && !bad; s++) {
        if (agmm_plan_run(p, s ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED,
                          a + row0 * K, c) != AGMM_OK) {
            bad = 1;
            break;
        }
        for (int64_t i = 0; i < M * N && !bad; i++)
            bad = fabsf(c[i] - ref[i]) > 1e-4f * (1 + fabsf(ref[i]));
    }
    free(f);
    free(a);
    free(wt);
    free(c);
    free(ref);
    return bad;
}

typedef struct job {
    agmm_gemm_engine_kind_t engine;
    agmm_gemm_path_t path; /* asked */
    agmm_gemm_path_t want; /* expected (AUTO: either) */
    const char *by;        /* expected chosen_by (NULL: any) */
    int twice;             /* a second plan: cached, same path */
} job_t;

static int rank_main(agmm_world_t *w, void *arg)
{
    const job_t *j = arg;
    agmm_plan_desc_t d;
    desc_for(&d, j->engine, j->path);
    agmm_gemm_path_t first = AGMM_GEMM_PATH_AUTO;
    for (int i = 0; i <= j->twice; i++) {
        agmm_plan_t *p = NULL;
        agmm_gemm_info_t g;
        if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 10;
        if (agmm_plan_gemm_info(p, &g) != AGMM_OK) return 11;
        if (j->want != AGMM_GEMM_PATH_AUTO && g.path != j->want) return 12;
        if (i == 0 && j->by && strcmp(g.chosen_by, j->by)) return 13;
        if (i == 0) first = g.path;
        if (!strcmp(g.chosen_by, "measured")) {
            if (g.candidates != 2 || !(g.candidate[0].gflops > 0) ||
                !(g.candidate[1].gflops > 0) || !(g.choose_ms > 0))
                return 14;
        }
        if (i == 1 && (strcmp(g.chosen_by, "cached") || g.choose_ms != 0 ||
                       g.path != first))
            return 15;
        if (rounds_match(w, p)) return 16;
        if (agmm_plan_destroy(p) != AGMM_OK) return 17;
    }
    return 0;
}

static int launch(const job_t *j)
{
    agmm_launch_opts_t o;
    memset(&o, 0, sizeof o);
    o.nranks = P;
    o.timeout_s = 60;
    int code = -1;
    if (agmm_launch(&o, rank_main, (void *)j, &code) != AGMM_OK) return -1;
    return code;
}

/* An engine with one path for bf16: auto runs f32 without measuring,
 * native is refused by name. */
static void only_f32(agmm_gemm_engine_kind_t e, const char *what)
{
    job_t only = {e, AGMM_GEMM_PATH_AUTO, AGMM_GEMM_PATH_F32, "only", 0};
    CHECK(launch(&only) == 0, "%s: f32, the only path", what);
    agmm_plan_desc_t d;
    desc_for(&d, e, AGMM_GEMM_PATH_NATIVE);
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_UNSUPPORTED &&
              strstr(agmm_last_error(), "gemm_path native"),
          "native on %s refused by name: %s", what, agmm_last_error());
}

static void test_decide(void)
{
    double native_fast[4] = {10, 20, 11, 21}, f32_fast[4] = {20, 10, 21, 9};
    double split[4] = {10, 12, 30, 14}, tie[4] = {5, 5, 7, 7};
    CHECK(agmm_path_decide(native_fast, 2) == 0, "native faster on both");
    CHECK(agmm_path_decide(f32_fast, 2) == 1, "f32 faster on both");
    CHECK(agmm_path_decide(split, 2) == 1,
          "the slowest rank decides (native 30 vs f32 14)");
    CHECK(agmm_path_decide(tie, 2) == 0, "a tie goes to native");
    double inf[4] = {INFINITY, 3, INFINITY, 4};
    CHECK(agmm_path_decide(inf, 2) == 1, "a path a rank lacks is never picked");
}

int main(void)
{
    agmm_blas_init();
    test_decide();
    if (!agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN)) {
        printf("test_path: no oneDNN engine: the measured cases need a "
               "native path (OpenBLAS has only f32)\n");
    } else if (!agmm_gemm_path_available(AGMM_GEMM_ENGINE_ONEDNN,
                                         AGMM_DTYPE_BF16,
                                         AGMM_GEMM_PATH_NATIVE)) {
        /* No native bf16 matmul in this oneDNN on this CPU (AVX2 only):
         * auto has one path and measures nothing, native is refused. */
        printf("test_path: this oneDNN has no native bf16 matmul on this "
               "CPU: the measured cases need one\n");
        only_f32(AGMM_GEMM_ENGINE_ONEDNN, "oneDNN without native bf16");
    } else {
        /* Injected times: both outcomes, and a split between the ranks. */
        agmm_path_set_probe(fake_probe);
        fake[0][0] = fake[1][0] = 10, fake[0][1] = fake[1][1] = 20;
        job_t nat = {AGMM_GEMM_ENGINE_ONEDNN, AGMM_GEMM_PATH_AUTO,
                     AGMM_GEMM_PATH_NATIVE, "measured", 0};
        CHECK(launch(&nat) == 0, "native faster (injected): native chosen");
        fake[0][0] = fake[1][0] = 20, fake[0][1] = fake[1][1] = 10;
        job_t f32 = nat;
        f32.want = AGMM_GEMM_PATH_F32;
        CHECK(launch(&f32) == 0, "f32 faster (injected): f32 chosen");
        fake[0][0] = 10, fake[0][1] = 12, fake[1][0] = 30, fake[1][1] = 14;
        CHECK(launch(&f32) == 0, "rank 1 slow on native: both run f32");
        agmm_path_set_probe(NULL);
        /* Measured, then cached (the second plan in the same processes). */
        job_t real = {AGMM_GEMM_ENGINE_ONEDNN, AGMM_GEMM_PATH_AUTO,
                      AGMM_GEMM_PATH_AUTO, "measured", 1};
        int code = launch(&real);
        CHECK(code == 0, "measured, then cached (exit %d)", code);
        job_t forced = {AGMM_GEMM_ENGINE_ONEDNN, AGMM_GEMM_PATH_F32,
                        AGMM_GEMM_PATH_F32, "forced", 0};
        CHECK(launch(&forced) == 0, "forced f32 on oneDNN bf16");
        forced.path = forced.want = AGMM_GEMM_PATH_NATIVE;
        CHECK(launch(&forced) == 0, "forced native on oneDNN bf16");
    }
    only_f32(AGMM_GEMM_ENGINE_OPENBLAS, "OpenBLAS");
    agmm_plan_desc_t d;
    desc_for(&d, AGMM_GEMM_ENGINE_OPENBLAS, AGMM_GEMM_PATH_NATIVE);
    d.gemm_path = (agmm_gemm_path_t)7;
    CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "gemm_path 7"),
          "an invalid path refused by name: %s", agmm_last_error());
    d.gemm_path = AGMM_GEMM_PATH_NATIVE;
    d.dtype = AGMM_DTYPE_FP32;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "fp32 takes native (= f32)");
    CHECK_DONE("test_path");
}
