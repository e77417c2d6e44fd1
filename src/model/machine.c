/* The machine description of the model (agmm_model.h): its defaults, its
 * check against a plan's description, and the names of its enums. */
#include <math.h>
#include <string.h>

#include "agmm_model.h"
#include "common/log.h"

/* The defaults are those of docs/model.md ("The machine"); keep both in
 * step. The GEMM rates are a modest AVX2 core's fp32 rates by rows per
 * call (small calls stream the weight, large ones reach the kernel's
 * peak); agmm_model_measure replaces them with this host's. */
static const agmm_model_rate_t default_rates[] = {
    {1, 2.0}, {8, 12.0}, {32, 35.0}, {128, 60.0}, {512, 70.0}, {2048, 72.0},
};

void agmm_model_machine_init(agmm_model_machine_t *m)
{
    if (!m) return;
    memset(m, 0, sizeof *m);
    m->transport = AGMM_MODEL_SHM;
    m->hosts = 1;
    m->ranks_per_host = 1;
    m->n_rates = (int)(sizeof default_rates / sizeof default_rates[0]);
    memcpy(m->rates, default_rates, sizeof default_rates);
    m->call_us = 5.0;
    m->copy_gbs = 5.0;
    m->reduce_gbs = 4.0;
    m->convert_gbs = 0.0;
    m->link_gbps = 0.0;
    m->link_latency_us = 0.0;
    m->msg_us = 2.0;
    m->round_us = 20.0;
    m->peer_us = 1.3;
    m->relay = 0;
    m->cores_per_host = 0;
    m->tile_us = 3.2;
    m->dram_gbs = 0.0;
}

static int finite_at_least(double v, double lo)
{
    return isfinite(v) && v >= lo;
}

static int finite_positive(double v)
{
    return isfinite(v) && v > 0;
}

agmm_status_t agmm_model_check(const agmm_model_machine_t *m,
                               const agmm_plan_desc_t *desc)
{
    if (!m || !desc)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: machine or plan description is NULL");
    AGMM_CHECK(agmm_plan_desc_check(desc));
    if (m->transport < AGMM_MODEL_SHM || m->transport > AGMM_MODEL_MPI)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: transport %d (allowed shm, link, mpi)",
                          (int)m->transport);
    if (m->hosts < 1 || m->ranks_per_host < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: hosts %d, ranks_per_host %d (allowed >= 1)",
                          m->hosts, m->ranks_per_host);
    if (m->transport != AGMM_MODEL_MPI && m->hosts != 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: hosts %d with transport %s (allowed 1: "
                          "several hosts need mpi)",
                          m->hosts, agmm_model_transport_name(m->transport));
    if ((int64_t)m->hosts * m->ranks_per_host != desc->nranks)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: hosts x ranks_per_host = %d x %d = %lld but "
                          "the plan has nranks %d",
                          m->hosts, m->ranks_per_host,
                          (long long)m->hosts * m->ranks_per_host,
                          desc->nranks);
    if (m->n_rates < 1 || m->n_rates > AGMM_MODEL_MAX_RATES)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: n_rates %d (allowed 1..%d)", m->n_rates,
                          (int)AGMM_MODEL_MAX_RATES);
    for (int i = 0; i < m->n_rates; i++) {
        if (m->rates[i].rows < 1 || !finite_positive(m->rates[i].gflops))
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "model: rates[%d] = %lld rows at %g GFLOP/s "
                              "(allowed rows >= 1, gflops > 0)",
                              i, (long long)m->rates[i].rows,
                              m->rates[i].gflops);
        if (i > 0 && m->rates[i].rows <= m->rates[i - 1].rows)
            return agmm_error(
                AGMM_ERR_INVALID_ARG,
                "model: rates[%d].rows = %lld after %lld (allowed "
                "strictly increasing rows)",
                i, (long long)m->rates[i].rows,
                (long long)m->rates[i - 1].rows);
    }
    struct {
        const char *name;
        double v;
        int positive;
    } f[] = {
        {"call_us", m->call_us, 0},
        {"copy_gbs", m->copy_gbs, 1},
        {"reduce_gbs", m->reduce_gbs, 1},
        {"convert_gbs", m->convert_gbs, 0},
        {"link_latency_us", m->link_latency_us, 0},
        {"msg_us", m->msg_us, 0},
        {"round_us", m->round_us, 0},
        {"peer_us", m->peer_us, 0},
        {"tile_us", m->tile_us, 0},
        {"dram_gbs", m->dram_gbs, 0},
        {"link_gbps", m->link_gbps, 0},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        int ok = f[i].positive ? finite_positive(f[i].v)
                               : finite_at_least(f[i].v, 0);
        if (!ok)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "model: %s = %g (allowed %s)", f[i].name, f[i].v,
                              f[i].positive ? "> 0" : ">= 0");
    }
    int link = m->transport == AGMM_MODEL_LINK ||
               (m->transport == AGMM_MODEL_MPI && m->hosts > 1);
    if (link && !finite_positive(m->link_gbps))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: link_gbps = %g with transport %s on %d "
                          "host(s) (allowed > 0: the link is used)",
                          m->link_gbps, agmm_model_transport_name(m->transport),
                          m->hosts);
    if (m->cores_per_host < 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: cores_per_host = %d (allowed >= 0; 0: a "
                          "core per thread)",
                          m->cores_per_host);
    if (m->relay != 0 && m->relay != 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "model: relay = %d (allowed 0 or 1)", m->relay);
    return AGMM_OK;
}

const char *agmm_model_bound_name(agmm_model_bound_t b)
{
    static const char *names[AGMM_MODEL_BOUND_COUNT] = {
        "gemm", "link", "relay", "copy", "reduce", "overhead"};
    if ((int)b < 0 || b >= AGMM_MODEL_BOUND_COUNT) return "invalid";
    return names[b];
}

const char *agmm_model_transport_name(agmm_model_transport_t t)
{
    switch (t) {
    case AGMM_MODEL_SHM:
        return "shm";
    case AGMM_MODEL_LINK:
        return "link";
    case AGMM_MODEL_MPI:
        return "mpi";
    }
    return "invalid";
}
