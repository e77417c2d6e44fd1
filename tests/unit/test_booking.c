/* The memory estimate is the allocation: over a grid of operations,
 * shapes (uneven and empty shards, several weights, a given k split),
 * dtypes, GEMM engines and worker counts, every rank of a real plan holds
 * exactly the bytes its booking says (agmm_plan_bytes_held against the
 * booking of a plan that has only its geometry), and the most over the
 * ranks equals agmm_plan_bytes_per_rank() of the description: equal, not
 * "at least". A buffer allocated outside the booking, or an engine whose
 * estimate differs from what it allocates, fails here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/gemm.h"
#include "ops/common/book.h"
#include "ops/common/plan_internal.h"

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
    int gemm_workers;
    int comm_workers;
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
    d->gemm_workers = c->gemm_workers;
    d->comm_workers = c->comm_workers;
    d->op = c->op;
    if (c->op == AGMM_OP_AG_GEMM && c->s.nw > 1) {
        for (int i = 0; i < c->s.nw; i++)
            n_list[i] = c->s.n + 17 * i;
        d->n_weights = c->s.nw;
        d->n_list = n_list;
    }
    if (c->op == AGMM_OP_GEMM_RS && c->s.kl[0] >= 0) d->k_local = c->s.kl;
}

/* What the booking of rank r's plan adds up to. */
static uint64_t booked(const agmm_plan_desc_t *d, int r)
{
    agmm_plan_t sk;
    memset(&sk, 0, sizeof sk);
    uint64_t total = 0;
    agmm_book_t b;
    if (agmm_plan_geometry(&sk, d, r) == AGMM_OK &&
        agmm_plan_book(&sk, &b) == AGMM_OK)
        total = agmm_book_total(&b);
    agmm_free(sk.layout);
    return total;
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
    uint64_t held = agmm_plan_bytes_held(p), want = booked(&d, r);
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

int main(void)
{
    agmm_blas_init();
    static const agmm_gemm_engine_kind_t engines[] = {AGMM_GEMM_ENGINE_OPENBLAS,
                                                      AGMM_GEMM_ENGINE_ONEDNN};
    static const agmm_dtype_t dtypes[] = {AGMM_DTYPE_FP16, AGMM_DTYPE_BF16,
                                          AGMM_DTYPE_FP32};
    int configs = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int op = 0; op < 2; op++)
            for (int e = 0; e < 2; e++)
                for (int dt = 0; dt < 3; dt++)
                    for (int g = 1; g <= 3; g += 2) {
                        if (!agmm_gemm_engine_available(engines[e])) continue;
                        cfg_t c = {shapes[si], (agmm_op_t)op,
                                   dtypes[dt], engines[e],
                                   g,          (int)(si % 2)};
                        if (op == AGMM_OP_GEMM_RS && c.s.nw > 1) c.s.nw = 1;
                        agmm_plan_desc_t d;
                        int64_t n_list[8];
                        make_desc(&c, &d, n_list);
                        uint64_t est = agmm_plan_bytes_per_rank(&d);
                        CHECK(est > 0, "shape %zu op %d: estimate 0", si, op);
                        agmm_launch_opts_t o;
                        memset(&o, 0, sizeof o);
                        o.nranks = c.s.P;
                        o.timeout_s = 60;
                        int code = -1;
                        agmm_status_t st =
                            agmm_launch(&o, rank_main, &c, &code);
                        CHECK(st == AGMM_OK && code == 0,
                              "shape %zu, %s, %s, %s, %d GEMM workers: exit %d "
                              "(12: a rank's bytes differ from its booking, "
                              "13: the estimate differs from the most held)",
                              si, agmm_op_name(c.op), agmm_dtype_name(c.dtype),
                              agmm_gemm_engine_name(c.engine), g, code);
                        configs++;
                    }
    CHECK(configs >= 48, "%d configurations ran", configs);
    CHECK_DONE("test_booking");
}
