/* The GEMM engine interface (src/gemm/engine.h), every engine built in:
 *   - every dtype x row counts (1, a tile, a partial tile, a coalesced run
 *     of tiles) x column ranges (whole, offset) against the reference GEMM
 *     (gemm_ref.c), with A's lda > k and C written at a row offset with
 *     ldc > ncols (cells outside the rows x ncols block stay untouched);
 *   - two threads running one prepared weight at once, each with its own
 *     scratch;
 *   - no primitive created by runs of prepared row counts, nor by the
 *     rounds of a plan (fused, baseline, gemm-only, monolithic) after
 *     agmm_plan_create: the "no primitive creation inside a timed round"
 *     rule.
 * Inputs are multiples of 1/2 in [-2, 2]: every product and sum is exact
 * in fp32, so results must equal the reference bit for bit. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "check/gemm_ref.h"
#include "gemm/convert.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
#include "gemm/gemm.h"

enum { K = 67, N = 150, LDA = K + 3, TILE = 32, ROW_OFF = 5 };
static const int64_t k_rows[] = {1, TILE, 13, 3 * TILE};
#define NROWS ((int)(sizeof k_rows / sizeof k_rows[0]))
enum { MMAX = 3 * TILE };

static float val(uint64_t i, uint64_t salt)
{
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ salt * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (float)((int)(h % 9) - 4) * 0.5f;
}

typedef struct {
    const agmm_gemm_engine_t *e;
    agmm_gemm_prep_t *prep;
    const void *a;    /* MMAX x LDA in the engine's input dtype */
    const float *ref; /* MMAX x ncols */
    int64_t m, ncols, ldc;
    void *scratch;
    int ok; /* result */
} job_t;

/* Run m rows into C at ROW_OFF (ldc), compare with ref, check the rest of
 * C is untouched (NaN). */
static void *run_job(void *arg)
{
    job_t *j = arg;
    int64_t rows = ROW_OFF + j->m + 2;
    float *c = malloc(sizeof(float) * (size_t)(rows * j->ldc));
    for (int64_t i = 0; i < rows * j->ldc; i++)
        c[i] = NAN;
    j->ok = j->e->run(j->prep, j->m, j->a, NULL, c + ROW_OFF * j->ldc,
                      j->scratch) == AGMM_OK;
    for (int64_t r = 0; r < rows && j->ok; r++)
        for (int64_t col = 0; col < j->ldc; col++) {
            float got = c[r * j->ldc + col];
            int inside = r >= ROW_OFF && r < ROW_OFF + j->m && col < j->ncols;
            if (inside ? got != j->ref[(r - ROW_OFF) * j->ncols + col]
                       : !isnan(got)) {
                j->ok = 0;
                break;
            }
        }
    free(c);
    return NULL;
}

static void test_engine(const agmm_gemm_engine_t *e, agmm_dtype_t dt)
{
    size_t es = agmm_dtype_size(dt);
    agmm_dtype_t in = e->input_dtype(dt);
    /* W [K, N] and A [MMAX, LDA] in dt, and their fp32 values. */
    float *w32 = malloc(sizeof(float) * K * N);
    float *a32 = malloc(sizeof(float) * MMAX * LDA);
    for (int i = 0; i < K * N; i++)
        w32[i] = val((uint64_t)i, 1);
    for (int i = 0; i < MMAX * LDA; i++)
        a32[i] = val((uint64_t)i, 2);
    void *w = malloc(es * K * N), *a = malloc(es * MMAX * LDA);
    agmm_convert_from_f32(dt, w32, w, K * N);
    agmm_convert_from_f32(dt, a32, a, MMAX * LDA);
    const void *a_in = in == dt ? a : (const void *)a32;

    static const int64_t ranges[][2] = {{0, N}, {10, 83}};
    for (int ri = 0; ri < 2; ri++) {
        int64_t c0 = ranges[ri][0], ncols = ranges[ri][1] - c0;
        int64_t ldc = ncols + 7;
        agmm_gemm_attr_t attr;
        agmm_gemm_attr_init(&attr, in, dt);
        agmm_gemm_shape_t shape = {.k = K,
                                   .ncols = ncols,
                                   .ldw = N,
                                   .lda = LDA,
                                   .ldc = ldc,
                                   .rows = k_rows,
                                   .nrows = NROWS};
        agmm_gemm_prep_t *prep = NULL;
        uint64_t est_w = 0, est_s = 0;
        agmm_status_t st = e->estimate(&shape, &attr, 0, &est_w, &est_s);
        CHECK(st == AGMM_OK, "%s %s: estimate: %s", e->name,
              agmm_dtype_name(dt), agmm_last_error());
        st = e->prepare(&shape, &attr, NULL, &prep);
        CHECK(st == AGMM_OK, "%s %s: prepare: %s", e->name, agmm_dtype_name(dt),
              agmm_last_error());
        if (st != AGMM_OK) continue;
        CHECK(e->weight_bytes(prep) == est_w && e->scratch_bytes(prep) == est_s,
              "%s %s: estimate %llu + %llu, prepared %llu + %zu", e->name,
              agmm_dtype_name(dt), (unsigned long long)est_w,
              (unsigned long long)est_s,
              (unsigned long long)e->weight_bytes(prep),
              e->scratch_bytes(prep));
        agmm_gemm_operand_t wop = {.w = (const unsigned char *)w +
                                        (size_t)c0 * es,
                                   .bias = NULL,
                                   .w_scale = NULL};
        st = e->load(prep, &wop);
        CHECK(st == AGMM_OK, "%s: load: %s", e->name, agmm_last_error());
        CHECK(strlen(e->impl(prep)) > 0, "%s: no impl string", e->name);
        size_t sb = e->scratch_bytes(prep);
        void *scratch[2] = {sb ? malloc(sb) : NULL, sb ? malloc(sb) : NULL};
        float *ref = malloc(sizeof(float) * MMAX * (size_t)ncols);
        uint64_t created = agmm_gemm_engine_created();
        for (int round = 0; round < 3; round++)
            for (int i = 0; i < NROWS; i++) {
                int64_t m = k_rows[i];
                agmm_gemm_ref(m, ncols, K, a32, LDA, w32 + c0, N, ref, ncols);
                job_t j = {e, prep, a_in, ref, m, ncols, ldc, scratch[0], 0};
                run_job(&j);
                CHECK(j.ok, "%s %s cols [%lld,%lld) m=%lld: wrong result (%s)",
                      e->name, agmm_dtype_name(dt), (long long)c0,
                      (long long)(c0 + ncols), (long long)m, agmm_last_error());
            }
        /* Two threads at once on the same prepared weight. */
        agmm_gemm_ref(MMAX, ncols, K, a32, LDA, w32 + c0, N, ref, ncols);
        job_t jobs[2] = {{e, prep, a_in, ref, MMAX, ncols, ldc, scratch[0], 0},
                         {e, prep, a_in, ref, TILE, ncols, ldc, scratch[1], 0}};
        pthread_t th;
        pthread_create(&th, NULL, run_job, &jobs[1]);
        run_job(&jobs[0]);
        pthread_join(th, NULL);
        CHECK(jobs[0].ok && jobs[1].ok, "%s %s: concurrent runs", e->name,
              agmm_dtype_name(dt));
        CHECK(agmm_gemm_engine_created() == created,
              "%s %s: runs created %llu primitives", e->name,
              agmm_dtype_name(dt),
              (unsigned long long)(agmm_gemm_engine_created() - created));
        e->destroy(prep);
        free(scratch[0]);
        free(scratch[1]);
        free(ref);
    }
    free(w32);
    free(a32);
    free(w);
    free(a);
}

/* A plan's rounds create no primitive: every schedule and part, uneven
 * shards with partial tiles, two GEMM workers in row groups; for gemm-rs
 * also with one comm worker (the fused schedule then calls per tile
 * instead of per owner's block: gemm_rs/fused.c), and gemm-ar (gemm-rs's
 * calls) with one. */
static int rank_main(agmm_world_t *world, void *arg)
{
    const agmm_plan_desc_t *d = arg;
    agmm_plan_t *plan;
    if (agmm_plan_create(world, d, &plan) != AGMM_OK) return 3;
    int r = agmm_world_rank(world);
    size_t es = agmm_dtype_size(d->dtype);
    void *w = calloc((size_t)(d->k * d->n), es);
    /* all-gather: A_r is m_local[r] x k; gemm-rs, gemm-ar: M x k_local[r]
     * <= M x k; C: M x n is enough for every op */
    int64_t a_rows =
        d->op != AGMM_OP_AG_GEMM ? agmm_plan_rows(plan) : d->m_local[r];
    void *a = calloc((size_t)(a_rows * d->k) + 1, es);
    float *c = calloc((size_t)(agmm_plan_rows(plan) * d->n), sizeof(float));
    int rc = agmm_plan_set_weight(plan, w) == AGMM_OK ? 0 : 4;
    uint64_t before = agmm_gemm_engine_created();
    for (int i = 0; rc == 0 && i < 3; i++) {
        if (agmm_plan_run(plan, AGMM_SCHEDULE_FUSED, a, c) != AGMM_OK ||
            agmm_plan_run(plan, AGMM_SCHEDULE_BASELINE, a, c) != AGMM_OK ||
            agmm_plan_run_part(plan, AGMM_PART_GEMM_ONLY, a, c) != AGMM_OK ||
            agmm_plan_run_part(plan, AGMM_PART_MONOLITHIC, a, c) != AGMM_OK ||
            agmm_plan_set_weight(plan, w) != AGMM_OK)
            rc = 5;
    }
    if (rc == 0 && agmm_gemm_engine_created() != before) rc = 6;
    agmm_plan_destroy(plan);
    free(w);
    free(a);
    free(c);
    return rc;
}

static void test_plan_rounds(agmm_gemm_engine_kind_t kind, agmm_dtype_t dt,
                             agmm_op_t op, int comm_workers)
{
    int64_t m_local[2] = {70, 45};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = 2;
    d.m_local = m_local;
    d.k = 40;
    d.n = 24;
    d.tile_m = 16;
    d.tile_n = 32;
    d.dtype = dt;
    d.gemm_engine = kind;
    d.op = op;
    d.comm_workers = comm_workers;
    d.gemm_workers = 2;
    agmm_launch_opts_t o = {0};
    o.nranks = 2;
    o.timeout_s = 30;
    int code = -1;
    agmm_status_t st = agmm_launch(&o, rank_main, &d, &code);
    CHECK(st == AGMM_OK && code == 0,
          "%s %s %s, %d comm workers: plan rounds (exit %d; 6: primitives "
          "created in a round)",
          agmm_op_name(op), agmm_gemm_engine_name(kind), agmm_dtype_name(dt),
          comm_workers, code);
}

/* The memory estimate counts what each engine allocates: oneDNN keeps a
 * bf16 weight as bf16 and reads bf16/fp32 rows in place (no g32), though
 * it books a scratchpad per GEMM worker, which OpenBLAS does not (under
 * 1 MiB here; test_booking checks every byte of both). */
static void test_bytes(void)
{
    int64_t m_local[2] = {2048, 2048};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = 2;
    d.m_local = m_local;
    d.dtype = AGMM_DTYPE_BF16;
    d.gemm_engine = AGMM_GEMM_ENGINE_OPENBLAS;
    uint64_t ob = agmm_plan_bytes_per_rank(&d);
    uint64_t kn = (uint64_t)(d.k * d.n), mk = (uint64_t)(4096 * d.k);
    CHECK(ob >= mk * 2 + kn * 4 + mk * 4, "openblas bf16 estimate %llu",
          (unsigned long long)ob);
    d.gemm_engine = AGMM_GEMM_ENGINE_ONEDNN;
    if (!agmm_gemm_engine_available(d.gemm_engine)) return;
    if (!agmm_gemm_path_available(d.gemm_engine, d.dtype,
                                  AGMM_GEMM_PATH_NATIVE)) {
        /* No native bf16 here: oneDNN converts as OpenBLAS does. */
        uint64_t dn = agmm_plan_bytes_per_rank(&d);
        CHECK(dn >= mk * 2 + kn * 4 + mk * 4,
              "onednn bf16 (f32 path) estimate %llu", (unsigned long long)dn);
        return;
    }
    d.gemm_path = AGMM_GEMM_PATH_NATIVE; /* auto counts the larger, f32 */
    uint64_t dn = agmm_plan_bytes_per_rank(&d);
    CHECK(dn > 0 && ob - dn + (1u << 20) >= kn * 2 + mk * 4,
          "onednn bf16 estimate %llu: no fp32 weight, no g32 (openblas %llu)",
          (unsigned long long)dn, (unsigned long long)ob);
}

int main(void)
{
    agmm_blas_init(); /* one BLAS thread per call, as in every rank */
    static const agmm_gemm_engine_kind_t kinds[] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                                    AGMM_GEMM_ENGINE_ONEDNN};
    static const agmm_dtype_t dts[] = {AGMM_DTYPE_FP16, AGMM_DTYPE_BF16,
                                       AGMM_DTYPE_FP32};
    CHECK(agmm_gemm_engine_get(AGMM_GEMM_ENGINE_AUTO) != NULL,
          "no AUTO engine");
    test_bytes();
    CHECK(agmm_gemm_engine_get((agmm_gemm_engine_kind_t)7) == NULL,
          "an invalid kind has an engine");
    for (int ki = 0; ki < 2; ki++) {
        const agmm_gemm_engine_t *e = agmm_gemm_engine_get(kinds[ki]);
        if (!e) {
            printf("%s: not built in, skipped\n",
                   agmm_gemm_engine_name(kinds[ki]));
            /* The plan refuses it by name. */
            int64_t m = 4;
            agmm_plan_desc_t d;
            agmm_plan_desc_init(&d);
            d.m_local = &m;
            d.gemm_engine = kinds[ki];
            CHECK(agmm_plan_desc_check(&d) == AGMM_ERR_UNSUPPORTED &&
                      strstr(agmm_last_error(), "onednn"),
                  "unbuilt engine: %s", agmm_last_error());
            continue;
        }
        for (int di = 0; di < 3; di++) {
            test_engine(e, dts[di]);
            test_plan_rounds(kinds[ki], dts[di], AGMM_OP_AG_GEMM, 0);
            test_plan_rounds(kinds[ki], dts[di], AGMM_OP_GEMM_RS, 0);
            test_plan_rounds(kinds[ki], dts[di], AGMM_OP_GEMM_RS, 1);
            test_plan_rounds(kinds[ki], dts[di], AGMM_OP_GEMM_AR, 1);
        }
    }
    CHECK_DONE("test_gemm_engine");
}
