/* The memory estimate is the allocation: over a grid of operations,
 * shapes (uneven and empty shards, several weights, a given k split),
 * dtypes, GEMM engines, GEMM paths and worker counts, every rank of a real
 * plan holds exactly the bytes its booking says (agmm_plan_bytes_held
 * against the booking of a plan that has only its geometry, on the path
 * the plan runs), and the most over the ranks equals
 * agmm_plan_bytes_per_rank() of the description: equal, not "at least".
 * With gemm_path auto the estimate is the larger of the two paths' (the
 * choice is made at creation): there the most held must equal the
 * estimate of the path chosen, and the estimate the larger of the forced
 * paths'. A buffer allocated outside the booking, or an engine whose
 * estimate differs from what it allocates, fails here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/gemm.h"
#include "ops/common/book.h"
#include "ops/common/plan.h"
#include "ops/common/plan_book.h"

typedef struct shape {
    int P;
    int64_t m[4];
    int64_t k, n, tile_m, tile_n;
    int nw;        /* > 1: several weights (ag-gemm only) */
    int64_t kl[4]; /* kl[0] >= 0: this k split (gemm-rs) */
} shape_t;

static const shape_t shapes[] = {
    {2, {64, 64}, 96, 80, 16, 32, 1, {-1}},
    {3, {37, 0, 29}, 70, 45, 8, 16, 1, {-1}},
    {2, {5, 130}, 33, 300, 32, 64, 3, {-1}},
    {3, {16, 16, 1}, 64, 64, 16, 16, 1, {0, 40, 24}},
};

typedef struct cfg {
    shape_t s;
    agmm_op_t op;
    agmm_dtype_t dtype;
    agmm_gemm_engine_kind_t engine;
    agmm_gemm_path_t path;
    int gemm_workers;
    int comm_workers;
    agmm_wdtype_t wdtype; /* a quantized weight: the wq engine */
} cfg_t;

static void make_desc(const cfg_t *c, agmm_plan_desc_t *d, int64_t *n_list)
{
    agmm_plan_desc_init(d);
    d->nranks = c->s.P;
    d->m_local = c->s.m;
    d->k = c->s.k;
    d->n = c->s.n;
    d->tile_m = c->s.tile_m;
    d->tile_n = c->s.tile_n;
    d->dtype = c->dtype;
    d->gemm_engine = c->engine;
    d->gemm_path = c->path;
    d->gemm_workers = c->gemm_workers;
    d->comm_workers = c->comm_workers;
    d->op = c->op;
    if (c->op == AGMM_OP_AG_GEMM && c->s.nw > 1) {
        for (int i = 0; i < c->s.nw; i++)
            n_list[i] = c->s.n + 17 * i;
        d->n_weights = c->s.nw;
        d->n_list = n_list;
    }
    if (c->op != AGMM_OP_AG_GEMM && c->s.kl[0] >= 0) d->k_local = c->s.kl;
    d->weight_dtype = c->wdtype; /* groups of 32 where no k split cuts one */
    d->group_size = c->op == AGMM_OP_AG_GEMM ? 32 : 0;
    d->weight_zero_point = c->wdtype == AGMM_WDTYPE_INT4;
}

/* What the booking of rank r's plan on `path` adds up to. */
static uint64_t booked(const agmm_plan_desc_t *d, int r, agmm_gemm_path_t path)
{
    agmm_plan_t sk;
    memset(&sk, 0, sizeof sk);
    uint64_t total = 0;
    agmm_book_t b;
    if (agmm_plan_geometry(&sk, d, r) == AGMM_OK) {
        agmm_plan_set_path(&sk, path);
        if (agmm_plan_book(&sk, &b) == AGMM_OK) total = agmm_book_total(&b);
    }
    agmm_free(sk.layout);
    return total;
}

/* The estimate of the description on a forced path. */
static uint64_t estimate_on(const agmm_plan_desc_t *d, agmm_gemm_path_t path)
{
    agmm_plan_desc_t f = *d;
    f.gemm_path = path;
    return agmm_plan_bytes_per_rank(&f);
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const cfg_t *c = arg;
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    int64_t n_list[8];
    make_desc(c, &d, n_list);
    agmm_plan_t *p = NULL;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 10;
    agmm_gemm_info_t g;
    if (agmm_plan_gemm_info(p, &g) != AGMM_OK) return 16;
    uint64_t held = agmm_plan_bytes_held(p), want = booked(&d, r, g.path);
    uint64_t all[4] = {0};
    int code = 0;
    if (agmm_world_allgather(w, &held, all, sizeof held) != AGMM_OK) code = 11;
    if (held != want) {
        fprintf(stderr, "rank %d holds %llu bytes, its booking says %llu\n", r,
                (unsigned long long)held, (unsigned long long)want);
        code = 12;
    }
    uint64_t most = 0;
    for (int q = 0; q < c->s.P; q++)
        if (all[q] > most) most = all[q];
    uint64_t est = agmm_plan_bytes_per_rank(&d);
    if (c->path == AGMM_GEMM_PATH_AUTO && c->wdtype != AGMM_WDTYPE_SAME) {
        /* quantized: auto is native, measured nothing (path.c) */
        if (code == 0 && est != estimate_on(&d, AGMM_GEMM_PATH_NATIVE))
            code = 17;
    } else if (c->path ==
               AGMM_GEMM_PATH_AUTO) { /* the larger; the chosen one */
        uint64_t nat = estimate_on(&d, AGMM_GEMM_PATH_NATIVE);
        uint64_t f32 = estimate_on(&d, AGMM_GEMM_PATH_F32);
        if (code == 0 && est != (nat > f32 ? nat : f32)) code = 17;
        est = g.path == AGMM_GEMM_PATH_NATIVE ? nat : f32;
    }
    if (code == 0 && most != est) {
        fprintf(stderr,
                "the most a rank holds is %llu bytes, the estimate %llu\n",
                (unsigned long long)most, (unsigned long long)est);
        code = 13;
    }
    if (agmm_plan_destroy(p) != AGMM_OK && code == 0) code = 14;
    if (agmm_plan_bytes_held(p) != 0 && code == 0) code = 15; /* destroyed */
    return code;
}

/* One configuration: its estimate, then a real plan on every rank. */
static void run_config(const cfg_t *c, int si)
{
    agmm_plan_desc_t d;
    int64_t n_list[8];
    make_desc(c, &d, n_list);
    uint64_t est = agmm_plan_bytes_per_rank(&d);
    CHECK(est > 0, "shape %d op %d: estimate 0", si, (int)c->op);
    agmm_launch_opts_t o;
    memset(&o, 0, sizeof o);
    o.nranks = c->s.P;
    o.timeout_s = 60;
    int code = -1;
    agmm_status_t st = agmm_launch(&o, rank_main, (void *)c, &code);
    CHECK(st == AGMM_OK && code == 0,
          "shape %d, %s, %s, %s, path %s, %d GEMM workers: exit %d (12: a "
          "rank's bytes differ from its booking, 13: the estimate differs "
          "from the most held, 17: auto's estimate is not the larger "
          "path's)",
          si, agmm_op_name(c->op), agmm_dtype_name(c->dtype),
          agmm_gemm_engine_name(c->engine), agmm_gemm_path_name(c->path),
          c->gemm_workers, code);
}

int main(void)
{
    agmm_blas_init();
    static const agmm_gemm_engine_kind_t engines[] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                                      AGMM_GEMM_ENGINE_ONEDNN};
    static const agmm_dtype_t dtypes[] = {AGMM_DTYPE_FP16, AGMM_DTYPE_BF16,
                                          AGMM_DTYPE_FP32};
    /* The path: each in turn over the grid (native only where the engine
     * has one on this CPU: oneDNN bf16 with AVX512_BF16 or AMX; else
     * auto). */
    static const agmm_gemm_path_t paths[] = {
        AGMM_GEMM_PATH_AUTO, AGMM_GEMM_PATH_F32, AGMM_GEMM_PATH_NATIVE};
    int configs = 0;
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++)
        for (int n = 0; n < 2 * 2 * 3 * 2; n++) {
            int op = n % 2, e = n / 2 % 2, dt = n / 4 % 3, g = 1 + 2 * (n / 12);
            if (!agmm_gemm_engine_available(engines[e])) continue;
            cfg_t c = {.s = shapes[si],
                       .op = (agmm_op_t)op,
                       .dtype = dtypes[dt],
                       .engine = engines[e],
                       .path = paths[(si + n) % 3],
                       .gemm_workers = g,
                       .comm_workers = si % 2};
            if (c.path == AGMM_GEMM_PATH_NATIVE &&
                !agmm_gemm_path_available(c.engine, c.dtype, c.path))
                c.path = AGMM_GEMM_PATH_AUTO;
            if (op == AGMM_OP_GEMM_RS && c.s.nw > 1) c.s.nw = 1;
            run_config(&c, si);
            configs++;
        }
    /* int8 (oneDNN): its native path forced (s8 x s8; auto books the
     * larger of its two variants, as it does of two paths), both
     * operations, 1 and 3 GEMM workers. */
    /* (Where oneDNN's int8 sums are not exact on this CPU, int8 is
     * refused: test_int8.c checks that.) */
    int int8_here = agmm_gemm_path_available(
        AGMM_GEMM_ENGINE_ONEDNN, AGMM_DTYPE_INT8, AGMM_GEMM_PATH_NATIVE);
    for (int si = 0; int8_here && si < (int)(sizeof shapes / sizeof shapes[0]);
         si++)
        for (int n = 0; n < 4; n++) {
            cfg_t c = {.s = shapes[si],
                       .op = (agmm_op_t)(n % 2),
                       .dtype = AGMM_DTYPE_INT8,
                       .engine = AGMM_GEMM_ENGINE_ONEDNN,
                       .path = AGMM_GEMM_PATH_NATIVE,
                       .gemm_workers = 1 + 2 * (n / 2),
                       .comm_workers = si % 2};
            if (c.op == AGMM_OP_GEMM_RS && c.s.nw > 1) c.s.nw = 1;
            run_config(&c, si);
            configs++;
        }
    /* gemm-ar (gemm-rs's buffers, a window with the reduced region too):
     * each shape once, both engines, both int8 variants' native path. */
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++)
        for (int e = 0; e < 2; e++) {
            if (!agmm_gemm_engine_available(engines[e])) continue;
            int int8 = e == 1 && si % 2 && int8_here; /* oneDNN only */
            cfg_t c = {.s = shapes[si],
                       .op = AGMM_OP_GEMM_AR,
                       .dtype = int8 ? AGMM_DTYPE_INT8 : dtypes[si % 3],
                       .engine = engines[e],
                       .path =
                           int8 ? AGMM_GEMM_PATH_NATIVE : AGMM_GEMM_PATH_AUTO,
                       .gemm_workers = 1 + 2 * (si % 2),
                       .comm_workers = si % 2};
            c.s.nw = 1;
            run_config(&c, si);
            configs++;
        }
    /* Quantized weights (the wq engine: its packed ranges, bias copies and
     * the pass scratch): each shape, every operation, int4 and int8. */
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++)
        for (int op = 0; op < 3; op++) {
            cfg_t c = {
                .s = shapes[si],
                .op = (agmm_op_t)op,
                .dtype = dtypes[(si + op) % 3],
                .engine = AGMM_GEMM_ENGINE_AUTO,
                .path = op == 2 ? AGMM_GEMM_PATH_F32 : AGMM_GEMM_PATH_AUTO,
                .gemm_workers = 1 + 2 * (si % 2),
                .comm_workers = si % 2,
                .wdtype = (si + op) % 2 ? AGMM_WDTYPE_INT4 : AGMM_WDTYPE_INT8};
            if (c.op != AGMM_OP_AG_GEMM) c.s.nw = 1;
            run_config(&c, si);
            configs++;
        }
    CHECK(configs >= (int8_here ? 60 : 52), "%d configurations ran", configs);
    CHECK_DONE("test_booking");
}
