/* agmm_model_predict: one round of the fused and the baseline schedule.
 * First version: a closed form per schedule (the slowest rank's GEMM, its
 * communication, and the overlap of the two); the discrete-event version
 * over the declared puts replaces it. */
#include <string.h>

#include "common/log.h"
#include "model/model.h"

/* Seconds for rank r's shard (or its partials) to reach every peer. */
static double comm_s(const mdl_layout_t *L, int r, double bytes)
{
    const agmm_model_machine_t *m = L->m;
    int P = L->P, putters = L->C > 0 ? L->C : L->G;
    switch (m->transport) {
    case AGMM_MODEL_SHM:
        return mdl_copy_s(L, bytes * (P - 1)) / putters;
    case AGMM_MODEL_LINK:
        return mdl_wire_s(L, bytes) + m->link_latency_us * 1e-6 +
               mdl_copy_s(L, bytes * (P - 1));
    case AGMM_MODEL_MPI: {
        int remote = P - L->R;
        double nic = m->relay && m->hosts > 1 && L->d->op == AGMM_OP_AG_GEMM
                         ? bytes * (m->hosts - 1) * L->R
                         : bytes * remote * L->R;
        return mdl_wire_s(L, nic) + m->link_latency_us * 1e-6 +
               mdl_copy_s(L, bytes * (L->R - 1)) / putters;
    }
    }
    (void)r;
    return 0;
}

static void finish(agmm_model_sched_t *s, double gemm, double comm,
                   double time, double over)
{
    s->gemm_s = gemm;
    s->comm_s = comm;
    s->time_s = time + over;
    s->exposed_s = s->time_s - gemm > 0 ? s->time_s - gemm : 0;
    s->busy_s[AGMM_MODEL_BOUND_GEMM] = gemm;
    s->busy_s[AGMM_MODEL_BOUND_LINK] = comm;
    s->busy_s[AGMM_MODEL_BOUND_OVERHEAD] = over;
    s->bound = s->exposed_s <= 0.05 * s->time_s ? AGMM_MODEL_BOUND_GEMM
                                                 : AGMM_MODEL_BOUND_LINK;
}

agmm_status_t agmm_model_predict(const agmm_model_machine_t *m,
                                 const agmm_plan_desc_t *desc,
                                 agmm_model_result_t *out)
{
    if (!out) return agmm_error(AGMM_ERR_INVALID_ARG, "model: out is NULL");
    memset(out, 0, sizeof *out);
    AGMM_CHECK(agmm_model_check(m, desc));
    mdl_layout_t L;
    AGMM_CHECK(mdl_layout_build(m, desc, &L));
    double over = mdl_round_s(&L), worst_f = -1, worst_b = -1;
    for (int r = 0; r < L.P; r++) {
        const mdl_share_t *s = &L.share[0];
        int rs = desc->op != AGMM_OP_AG_GEMM;
        int64_t k = L.kpart[r];
        double bytes = rs ? L.out_row_bytes * (double)(L.M - L.rows[r])
                          : L.row_bytes * (double)L.rows[r];
        if (rs) bytes /= L.P - 1 > 0 ? L.P - 1 : 1;
        double comm = L.P > 1 ? comm_s(&L, r, bytes) : 0;
        double gemm_b = mdl_gemm_s(&L, s, L.M, k), gemm_f = 0;
        for (int q = 0; q < L.P; q++)
            for (int64_t t = 0; t < L.tiles[q]; t++)
                gemm_f += mdl_gemm_s(&L, s, mdl_tile_rows(&L, q, t), k);
        double last = L.tiles[r] ? mdl_gemm_s(&L, s, mdl_tile_rows(&L, r, 0), k)
                                 : 0;
        double tf = comm + last > gemm_f ? comm + last : gemm_f;
        double tb = comm + gemm_b;
        if (tf > worst_f) {
            worst_f = tf;
            finish(&out->fused, gemm_f, comm, tf, over);
            out->last_arrival_s = comm;
            out->gemm_before_last_s = gemm_f - last;
        }
        if (tb > worst_b) {
            worst_b = tb;
            finish(&out->baseline, gemm_b, comm, tb, over);
        }
    }
    out->ratio = out->fused.time_s / out->baseline.time_s;
    out->events = 0;
    mdl_layout_free(&L);
    return AGMM_OK;
}
