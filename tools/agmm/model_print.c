/*
 * `agmm model`'s output (model_report.h): a short header (the machine,
 * the problem, the GEMM engine and path, each rate with where it came
 * from, the weight-streaming floor), then the two schedules, their ratio and
 * the last tile's arrival; or, with --json, one object (docs/cli.md, "agmm
 * model", lists its members).
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "model_report.h"

const char *model_src_name(model_src_t s)
{
    switch (s) {
    case MODEL_SRC_DEFAULT:
        return "default";
    case MODEL_SRC_GIVEN:
        return "given";
    case MODEL_SRC_MEASURED:
        return "measured";
    case MODEL_SRC_NONE:
        return "none";
    }
    return "?";
}

static const char *path_word(const agmm_plan_desc_t *d)
{
    return d->gemm_path == AGMM_GEMM_PATH_NATIVE ? "native" : "via fp32";
}

/* ------------------------------------------------------------ text */

/* "2048 per rank" or "100,0,37" (the first 8, then "..."). */
static void print_shards(FILE *out, const agmm_cli_t *cli)
{
    int same = 1;
    for (int r = 1; r < cli->ranks; r++)
        same &= cli->m_local[r] == cli->m_local[0];
    if (same) {
        fprintf(out, "%" PRId64 " per rank", cli->m_local[0]);
        return;
    }
    for (int r = 0; r < cli->ranks && r < 8; r++)
        fprintf(out, "%s%" PRId64, r ? "," : "", cli->m_local[r]);
    if (cli->ranks > 8) fputs(",...", out);
}

static void print_machine(FILE *out, const model_report_t *r)
{
    const agmm_cli_t *cli = r->cli;
    const agmm_model_machine_t *m = &r->m;
    fprintf(out, "agmm model: %s on %d rank%s: %d host%s x %d rank%s, %s",
            agmm_op_name(cli->op), cli->ranks, cli->ranks == 1 ? "" : "s",
            m->hosts, m->hosts == 1 ? "" : "s", m->ranks_per_host,
            m->ranks_per_host == 1 ? "" : "s",
            agmm_model_transport_name(m->transport));
    if (m->transport == AGMM_MODEL_MPI && m->hosts > 1)
        fprintf(out, ", relay %s", m->relay ? "on" : "off");
    if (m->transport == AGMM_MODEL_LINK)
        fprintf(out, ", emulated wires of %g Gbit/s + %g us", m->link_gbps,
                m->link_latency_us);
    else if (m->transport == AGMM_MODEL_MPI && m->hosts > 1)
        fprintf(out, ", links of %g Gbit/s + %g us", m->link_gbps,
                m->link_latency_us);
    fputc('\n', out);
    fprintf(out, "problem: M = %" PRId64 " (", cli->m_total);
    print_shards(out, cli);
    fprintf(out, "), K = %" PRId64 ", N = %" PRId64, cli->k, cli->n_sum);
    if (cli->n_count > 1) fprintf(out, " in %d weights", cli->n_count);
    fprintf(out,
            ", tiles %" PRId64 " x %" PRId64 ", %s -> %s; per rank %d comm + "
            "%d GEMM workers\n",
            cli->tile_m, cli->tile_n, agmm_dtype_name(cli->dtype),
            agmm_dtype_name(cli->out_dtype), r->desc.comm_workers,
            r->desc.gemm_workers);
    if (r->desc.dtype == AGMM_DTYPE_FP32)
        fprintf(out, "gemm: %s, fp32 (%s)",
                agmm_gemm_engine_name(r->desc.gemm_engine), r->path_by);
    else
        fprintf(out, "gemm: %s, %s %s (%s)",
                agmm_gemm_engine_name(r->desc.gemm_engine),
                agmm_dtype_name(r->desc.dtype), path_word(&r->desc),
                r->path_by);
    if (r->measured && r->info.impl[0]) fprintf(out, ", %s", r->info.impl);
    if (r->desc.weight_dtype != AGMM_WDTYPE_SAME)
        fprintf(out, "; weight %s, group %lld%s%s",
                agmm_wdtype_name(r->desc.weight_dtype),
                (long long)r->desc.group_size,
                r->desc.weight_zero_point ? ", zero points" : "",
                r->desc.a_quant == AGMM_AQUANT_INT8 ? ", A int8" : "");
    if (r->engine_by) fprintf(out, " [engine: %s]", r->engine_by);
    fputc('\n', out);
}

/* "dram floor: 29.8 GB/s (measured): weight 90.2 MB per rank x 2 ranks
 * > cache 32 MB: streams" (agmm_model_machine_t.dram_gbs). */
static void print_floor(FILE *out, const model_report_t *r)
{
    const agmm_model_measure_info_t *i = &r->info;
    model_src_t src = r->src[MODEL_DRAM];
    if (r->m.dram_gbs > 0)
        fprintf(out, "dram floor: %.3g GB/s (%s)", r->m.dram_gbs,
                model_src_name(src));
    else
        fprintf(out, "dram floor: none (%s)", model_src_name(src));
    if (!r->measured || src == MODEL_SRC_GIVEN) {
        fputs(r->m.dram_gbs > 0 ? ": every GEMM call at least its weight "
                                  "bytes over it\n"
                                : "\n",
              out);
        return;
    }
    fprintf(out, ": weight %.3g MB per rank x %d rank%s",
            i->weight_bytes * 1e-6, r->m.ranks_per_host,
            r->m.ranks_per_host == 1 ? "" : "s");
    if (i->weight_sets > 1) fprintf(out, " x %d sets", i->weight_sets);
    fprintf(out, " %s cache %.3g MB (%s)",
            i->streams ? ">" : "<=", (double)i->cache_bytes * 1e-6,
            i->llc_bytes > 0 ? "the last level's"
                             : "assumed: sysfs lists none");
    fputs(i->streams ? ": streams from DRAM\n" : ": stays in the cache\n", out);
}

/* "copy 9.8 GB/s (measured)" */
static void print_rate(FILE *out, const char *name, double v, const char *unit,
                       model_src_t src, const char *sep)
{
    if (src == MODEL_SRC_NONE)
        fprintf(out, "%s%s none (the path converts nothing)", sep, name);
    else if (v == 0) /* convert_gbs 0: the model leaves it out */
        fprintf(out, "%s%s not modelled (0, %s)", sep, name,
                model_src_name(src));
    else
        fprintf(out, "%s%s %.3g %s (%s)", sep, name, v, unit,
                model_src_name(src));
}

static void print_rates(FILE *out, const model_report_t *r)
{
    const agmm_model_machine_t *m = &r->m;
    if (r->measured) {
        fprintf(out,
                "rates: measured on this host in %.1f s (GEMM over %" PRId64
                " columns x K %" PRId64,
                r->info.seconds, r->info.cols, r->info.k);
        if (r->info.min_cols < r->info.cols)
            fprintf(out, ", large calls over %" PRId64, r->info.min_cols);
        if (r->info.skipped)
            fprintf(out,
                    "; %d row count%s not timed: interpolated, or clamped "
                    "above",
                    r->info.skipped, r->info.skipped == 1 ? "" : "s");
        fputs("): GEMM GFLOP/s per worker by rows", out);
    } else if (m->n_rates == 1) {
        fprintf(out,
                "rates: given, nothing measured here: GEMM %g GFLOP/s per "
                "worker at every row count",
                m->rates[0].gflops);
    } else {
        fputs("rates: given, nothing measured here: GEMM GFLOP/s per worker by "
              "rows",
              out);
    }
    if (r->measured || m->n_rates > 1)
        for (int i = 0; i < m->n_rates; i++)
            fprintf(out, " %" PRId64 ":%.3g", m->rates[i].rows,
                    m->rates[i].gflops);
    fputc('\n', out);
    print_rate(out, "call", m->call_us, "us", r->src[MODEL_CALL], "       ");
    print_rate(out, "copy", m->copy_gbs, "GB/s", r->src[MODEL_COPY], ", ");
    print_rate(out, "reduce", m->reduce_gbs, "GB/s", r->src[MODEL_REDUCE],
               ", ");
    print_rate(out, "convert", m->convert_gbs, "GB/s", r->src[MODEL_CONVERT],
               ", ");
    fputc('\n', out);
    print_rate(out, "msg", m->msg_us, "us", r->src[MODEL_MSG], "       ");
    print_rate(out, "round", m->round_us, "us", r->src[MODEL_ROUND], ", ");
    print_rate(out, "peer", m->peer_us, "us", r->src[MODEL_PEER], ", ");
    print_rate(out, "tile", m->tile_us, "us", r->src[MODEL_TILE], ", ");
    fputc('\n', out);
    print_floor(out, r);
}

static void print_sched(FILE *out, const char *name,
                        const agmm_model_sched_t *s)
{
    fprintf(out,
            "%-9s %10.3f ms  bound: %-8s (GEMM %.3f ms, communication alone "
            "%.3f ms, GEMM waiting %.3f ms)\n",
            name, s->time_s * 1e3, agmm_model_bound_name(s->bound),
            s->gemm_s * 1e3, s->comm_s * 1e3, s->exposed_s * 1e3);
}

void model_print_text(const model_report_t *r, FILE *out)
{
    const agmm_model_result_t *x = &r->res;
    print_machine(out, r);
    print_rates(out, r);
    print_sched(out, "fused", &x->fused);
    print_sched(out, "baseline", &x->baseline);
    if (isfinite(x->ratio) && x->ratio > 0)
        fprintf(out, "fused / baseline: %.3f (%s)\n", x->ratio,
                x->ratio < 0.995   ? "fused faster"
                : x->ratio > 1.005 ? "fused slower"
                                   : "even, within 0.5%");
    else
        fputs("fused / baseline: - (an empty round)\n", out);
    if (r->cli->ranks == 1) {
        fputs("last remote tile (fused): none (one rank)\n", out);
        return;
    }
    fprintf(out,
            "last remote tile (fused): arrives at %.3f ms, GEMM of the tiles "
            "before it %.3f ms: %s\n",
            x->last_arrival_s * 1e3, x->gemm_before_last_s * 1e3,
            x->last_arrival_s <= x->gemm_before_last_s
                ? "the overlap hides the communication"
                : "the GEMM waits for it");
}

/* ------------------------------------------------------------ json */

/* A finite number, else null (JSON has no inf or nan). */
static void jnum(FILE *out, double v)
{
    if (isfinite(v))
        fprintf(out, "%.6g", v);
    else
        fputs("null", out);
}

static void jms(FILE *out, const char *key, double s, const char *sep)
{
    fprintf(out, "%s\"%s\":", sep, key);
    jnum(out, s * 1e3);
}

static void json_sched(FILE *out, const char *key, const agmm_model_sched_t *s)
{
    fprintf(out, ",\"%s\":{", key);
    jms(out, "time_ms", s->time_s, "");
    fprintf(out, ",\"bound\":\"%s\"", agmm_model_bound_name(s->bound));
    jms(out, "gemm_ms", s->gemm_s, ",");
    jms(out, "comm_ms", s->comm_s, ",");
    jms(out, "exposed_ms", s->exposed_s, ",");
    fputs(",\"busy_ms\":{", out);
    for (int b = 0; b < AGMM_MODEL_BOUND_COUNT; b++)
        jms(out, agmm_model_bound_name((agmm_model_bound_t)b), s->busy_s[b],
            b ? "," : "");
    fputs("}}", out);
}

static void json_list(FILE *out, const char *key, const int64_t *v, int n)
{
    fprintf(out, ",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        fprintf(out, "%s%" PRId64, i ? "," : "", v[i]);
    fputc(']', out);
}

static void json_machine(FILE *out, const model_report_t *r)
{
    const agmm_model_machine_t *m = &r->m;
    fprintf(out,
            "\"machine\":{\"transport\":\"%s\",\"hosts\":%d,"
            "\"ranks_per_host\":%d,\"relay\":%s",
            agmm_model_transport_name(m->transport), m->hosts,
            m->ranks_per_host, m->relay ? "true" : "false");
    const struct {
        const char *key;
        double v;
    } f[] = {
        {"link_gbps", m->link_gbps},   {"link_latency_us", m->link_latency_us},
        {"call_us", m->call_us},       {"copy_gbs", m->copy_gbs},
        {"reduce_gbs", m->reduce_gbs}, {"convert_gbs", m->convert_gbs},
        {"msg_us", m->msg_us},         {"round_us", m->round_us},
        {"peer_us", m->peer_us},       {"tile_us", m->tile_us},
        {"dram_gbs", m->dram_gbs}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fprintf(out, ",\"%s\":", f[i].key);
        jnum(out, f[i].v);
    }
    fputc('}', out);
}

static void json_problem(FILE *out, const model_report_t *r)
{
    const agmm_cli_t *cli = r->cli;
    const agmm_plan_desc_t *d = &r->desc;
    fprintf(out, ",\"problem\":{\"op\":\"%s\",\"ranks\":%d",
            agmm_op_name(cli->op), cli->ranks);
    json_list(out, "m_local", cli->m_local, cli->ranks);
    fprintf(out, ",\"m_total\":%" PRId64 ",\"k\":%" PRId64 ",\"n\":%" PRId64,
            cli->m_total, cli->k, cli->n_sum);
    json_list(out, "n_list", cli->n_list, cli->n_count);
    if (d->k_local) json_list(out, "k_local", d->k_local, cli->ranks);
    fprintf(
        out,
        ",\"tile_m\":%" PRId64 ",\"tile_n\":%" PRId64
        ",\"dtype\":\"%s\",\"out_dtype\":\"%s\",\"gemm_engine\":\"%s\","
        "\"gemm_path\":\"%s\",\"comm_workers\":%d,\"gemm_workers\":%d,"
        "\"weight_dtype\":\"%s\",\"group_size\":%lld,\"zero_point\":%s,"
        "\"a_quant\":\"%s\"}",
        cli->tile_m, cli->tile_n, agmm_dtype_name(cli->dtype),
        agmm_dtype_name(cli->out_dtype), agmm_gemm_engine_name(d->gemm_engine),
        agmm_gemm_path_name(d->gemm_path), d->comm_workers, d->gemm_workers,
        agmm_wdtype_name(d->weight_dtype), (long long)d->group_size,
        d->weight_zero_point ? "true" : "false", agmm_aquant_name(d->a_quant));
}

static void json_rates(FILE *out, const model_report_t *r)
{
    const agmm_model_machine_t *m = &r->m;
    fprintf(out, ",\"rates_measured\":%s,\"measure_s\":",
            r->measured ? "true" : "false");
    if (r->measured)
        jnum(out, r->info.seconds);
    else
        fputs("null", out);
    fputs(",\"rates\":[", out);
    for (int i = 0; i < m->n_rates; i++) {
        fprintf(out, "%s[%" PRId64 ",", i ? "," : "", m->rates[i].rows);
        jnum(out, m->rates[i].gflops);
        fputc(']', out);
    }
    static const char *const keys[MODEL_NSRC] = {
        [MODEL_CALL] = "call_us",      [MODEL_COPY] = "copy_gbs",
        [MODEL_REDUCE] = "reduce_gbs", [MODEL_CONVERT] = "convert_gbs",
        [MODEL_MSG] = "msg_us",        [MODEL_ROUND] = "round_us",
        [MODEL_PEER] = "peer_us",      [MODEL_TILE] = "tile_us",
        [MODEL_DRAM] = "dram_gbs"};
    fprintf(out, "],\"sources\":{\"gemm\":\"%s\"",
            r->measured ? "measured" : "given");
    for (int i = 0; i < MODEL_NSRC; i++)
        fprintf(out, ",\"%s\":\"%s\"", keys[i], model_src_name(r->src[i]));
    fputc('}', out);
    if (r->measured) {
        fprintf(out,
                ",\"measure\":{\"k\":%" PRId64 ",\"cols\":%" PRId64
                ",\"min_cols\":%" PRId64 ",\"skipped\":%d,\"impl\":\"%s\"}",
                r->info.k, r->info.cols, r->info.min_cols, r->info.skipped,
                r->info.impl);
        fputs(",\"dram_floor\":{\"dram_gbs\":", out);
        jnum(out, r->m.dram_gbs);
        fputs(",\"weight_bytes_per_rank\":", out);
        jnum(out, r->info.weight_bytes);
        fprintf(out,
                ",\"llc_bytes\":%" PRId64 ",\"cache_bytes\":%" PRId64
                ",\"weight_sets\":%d,\"streams\":%s}",
                r->info.llc_bytes, r->info.cache_bytes, r->info.weight_sets,
                r->info.streams ? "true" : "false");
    } else {
        fputs(",\"dram_floor\":null", out);
    }
}

void model_print_json(const model_report_t *r, FILE *out)
{
    const agmm_model_result_t *x = &r->res;
    fputc('{', out);
    json_machine(out, r);
    json_problem(out, r);
    json_sched(out, "fused", &x->fused);
    json_sched(out, "baseline", &x->baseline);
    fputs(",\"ratio\":", out);
    jnum(out, x->ratio);
    jms(out, "last_arrival_ms", x->last_arrival_s, ",");
    jms(out, "gemm_before_last_ms", x->gemm_before_last_s, ",");
    fprintf(out, ",\"events\":%" PRId64, x->events);
    json_rates(out, r);
    fputs("}\n", out);
}
