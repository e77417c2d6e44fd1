/*
 * `agmm model`: one round of the plan the options describe, predicted
 * (agmm_model_predict) for the machine they describe. The machine: its
 * hosts, ranks per host, transport and link from the options; its rates
 * given, or, when no GEMM rate is given, measured on this host first
 * (agmm_model_measure: the plan's engine, dtype and path; no ranks, no
 * shared memory), every rate given on the command line winning over a
 * measured one and a measured one over the model's default. With a GEMM
 * rate given nothing is measured: no GEMM runs, no process is forked, no
 * segment is opened. The weight-streaming floor (dram_gbs): --dram-gbs,
 * else measured with the rates (the DRAM probe's rate when ranks per host
 * x --weight-sets weights outgrow the cache), else none. Output:
 * model_print.c.
 */
#include <string.h>

#include "agmm_model.h"
#include "cli/cli.h"
#include "common/log.h"
#include "model_report.h"
#include "tool.h"

/* A number from the command line when given, else `fallback` (measured or
 * default) with its source. */
static void pick(double *field, model_src_t *src, int given, double value,
                 model_src_t fallback)
{
    if (given) {
        *field = value;
        *src = MODEL_SRC_GIVEN;
    } else {
        *src = fallback;
    }
}

/* The engine AUTO stands for here, and the path when nothing measures it:
 * the one given; fp32 inputs: f32; int8: native; a quantized weight: the wq
 * engine, native; bf16/fp16 with auto: native when the engine reads the
 * dtype natively here, else f32. */
static void resolve_unmeasured(model_report_t *r)
{
    agmm_plan_desc_t *d = &r->desc;
    if (d->weight_dtype != AGMM_WDTYPE_SAME) {
        d->gemm_engine = AGMM_GEMM_ENGINE_WQ;
        r->engine_by = "a quantized weight: the wq kernels";
    }
    if (d->gemm_engine == AGMM_GEMM_ENGINE_AUTO)
        d->gemm_engine = agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN)
                             ? AGMM_GEMM_ENGINE_ONEDNN
                             : AGMM_GEMM_ENGINE_OPENBLAS;
    if (d->dtype == AGMM_DTYPE_FP32) {
        d->gemm_path = AGMM_GEMM_PATH_F32;
        r->path_by = "the only one";
    } else if (d->dtype == AGMM_DTYPE_INT8 ||
               (d->weight_dtype != AGMM_WDTYPE_SAME &&
                d->gemm_path == AGMM_GEMM_PATH_AUTO)) {
        d->gemm_path = AGMM_GEMM_PATH_NATIVE;
        r->path_by = "the only one";
    } else if (d->gemm_path != AGMM_GEMM_PATH_AUTO) {
        r->path_by = "--gemm-path";
    } else {
        int native = agmm_gemm_path_available(d->gemm_engine, d->dtype,
                                              AGMM_GEMM_PATH_NATIVE);
        d->gemm_path = native ? AGMM_GEMM_PATH_NATIVE : AGMM_GEMM_PATH_F32;
        r->path_by = native ? "auto, not measured: the engine's native "
                              "kernel here"
                            : "auto: no native kernel here";
    }
}

int agmm_tool_model(const agmm_cli_t *cli)
{
    static model_report_t r; /* the description's arrays live in cli */
    memset(&r, 0, sizeof r);
    r.cli = cli;
    agmm_tool_desc(cli, &r.desc);
    agmm_model_machine_t *m = &r.m;
    agmm_model_machine_init(m);
    m->transport = (agmm_model_transport_t)cli->model_transport;
    m->hosts = cli->hosts;
    m->ranks_per_host = cli->ranks_per_host;
    m->relay = cli->relay;
    m->link_gbps = cli->link_gbps;
    m->link_latency_us = cli->link_latency_us;

    r.measured = cli->n_gemm_rates == 0;
    model_src_t fallback = MODEL_SRC_DEFAULT;
    if (r.measured) {
        if (agmm_model_measure_sets(m, &r.desc, cli->measure_budget_s,
                                    cli->weight_sets, &r.info) != AGMM_OK)
            return 1; /* the library printed why */
        r.desc.gemm_engine = r.info.engine;
        r.desc.gemm_path = r.info.path;
        int quant = r.desc.weight_dtype != AGMM_WDTYPE_SAME;
        r.engine_by = r.info.engine_by;
        r.path_by =
            r.desc.dtype == AGMM_DTYPE_FP32 || r.desc.dtype == AGMM_DTYPE_INT8
                ? "the only one"
            : cli->gemm_path != AGMM_GEMM_PATH_AUTO ? "--gemm-path"
            : quant                                 ? "the only one"
            : agmm_gemm_path_available(r.info.engine, r.desc.dtype,
                                       AGMM_GEMM_PATH_NATIVE)
                ? "auto: measured here"
                : "auto: no native kernel here";
        fallback = MODEL_SRC_MEASURED;
    } else {
        resolve_unmeasured(&r);
        m->n_rates = cli->n_gemm_rates;
        memcpy(m->rates, cli->gemm_rates,
               sizeof m->rates[0] * (size_t)cli->n_gemm_rates);
    }
    pick(&m->call_us, &r.src[MODEL_CALL], cli->call_us_set, cli->call_us,
         fallback);
    pick(&m->copy_gbs, &r.src[MODEL_COPY], cli->copy_gbs_set, cli->copy_gbs,
         fallback);
    pick(&m->reduce_gbs, &r.src[MODEL_REDUCE], cli->reduce_gbs_set,
         cli->reduce_gbs, fallback);
    int converts = agmm_dtype_size(r.desc.dtype) == 2 &&
                   r.desc.gemm_path == AGMM_GEMM_PATH_F32;
    if (converts) {
        pick(&m->convert_gbs, &r.src[MODEL_CONVERT], cli->convert_gbs_set,
             cli->convert_gbs, fallback);
    } else {
        m->convert_gbs = 0; /* the model converts nothing at 0 */
        r.src[MODEL_CONVERT] = MODEL_SRC_NONE;
    }
    pick(&m->msg_us, &r.src[MODEL_MSG], cli->msg_us_set, cli->msg_us,
         MODEL_SRC_DEFAULT);
    pick(&m->round_us, &r.src[MODEL_ROUND], cli->round_us_set, cli->round_us,
         MODEL_SRC_DEFAULT);
    pick(&m->peer_us, &r.src[MODEL_PEER], cli->peer_us_set, cli->peer_us,
         MODEL_SRC_DEFAULT);
    pick(&m->tile_us, &r.src[MODEL_TILE], cli->tile_us_set, cli->tile_us,
         MODEL_SRC_DEFAULT);
    pick(&m->dram_gbs, &r.src[MODEL_DRAM], cli->dram_gbs_set, cli->dram_gbs,
         fallback);

    /* What the option checks let through and the model still refuses is
     * bad input too: one line, exit 2. */
    agmm_log_mute(1);
    agmm_status_t st = agmm_model_check(m, &r.desc);
    agmm_log_mute(0);
    if (st != AGMM_OK) {
        fprintf(stderr,
                "agmm: --hosts/--transport/rates: the model refuses "
                "this machine (%s)\n",
                agmm_thread_error());
        return 2;
    }
    if (agmm_model_predict(m, &r.desc, &r.res) != AGMM_OK) return 1;
    if (cli->json)
        model_print_json(&r, stdout);
    else
        model_print_text(&r, stdout);
    return 0;
}
