/* What the performance model's tests (test_model.c, test_model_hosts.c)
 * start from: a comparison to 1e-9, a machine of one flat rate, a plan of
 * fp32 128-row tiles over every column, a GEMM call's time. */
#ifndef AGMM_TESTS_MODEL_FIXTURE_H
#define AGMM_TESTS_MODEL_FIXTURE_H

#include <math.h>
#include <stdint.h>

#include "agmm_model.h"
#include "check.h"

static inline int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15;
}

#define CLOSE(a, b, what)                                                      \
    CHECK(close_to((a), (b)), "%s: %.12g, want %.12g", what, (double)(a),      \
          (double)(b))

/* One rate (every call the same GFLOP/s), no overheads. */
static inline void flat_machine(agmm_model_machine_t *m, double gflops)
{
    agmm_model_machine_init(m);
    m->n_rates = 1;
    m->rates[0] = (agmm_model_rate_t){1, gflops};
    m->call_us = 3.0;
    m->round_us = 10.0;
    m->peer_us = 1.0;
    m->msg_us = 0;
    m->tile_us = 0; /* fused_tile_cost() sets its own */
}

static inline void plan(agmm_plan_desc_t *d, int nranks, const int64_t *rows,
                        int64_t k, int64_t n)
{
    agmm_plan_desc_init(d);
    d->nranks = nranks;
    d->m_local = rows;
    d->k = k;
    d->n = n;
    d->tile_m = 128;
    d->tile_n = n;
    d->dtype = AGMM_DTYPE_FP32;
    d->comm_workers = 0;
    d->gemm_workers = 1;
}

/* call_us + 2 m n k / rate */
static inline double gemm_s(double call_us, double m, double n, double k,
                            double gf)
{
    return call_us * 1e-6 + 2 * m * n * k / (gf * 1e9);
}

#endif
