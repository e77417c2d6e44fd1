/* The configuration the commands print (tool.h): the header lines of a
 * run or bench (shape, cores, BLAS, the GEMM engine and how its path was
 * chosen), the "gemm" JSON member, and the emulated link's tag. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h" /* agmm_blas_*: the BLAS in reports */
#include "common/param.h"
#include "placement.h"
#include "tool.h"

/* "bf16 native" or "bf16 via fp32": the path in words (fp32: "fp32"),
 * into words[32]. */
static const char *path_words(agmm_dtype_t dt, agmm_gemm_path_t path,
                              char *words)
{
    if (dt == AGMM_DTYPE_FP32) return "fp32";
    snprintf(words, 32, "%s %s", agmm_dtype_name(dt),
             path == AGMM_GEMM_PATH_NATIVE ? "native" : "via fp32");
    return words;
}

/* How the path was chosen: "gemm path: bf16 via fp32 chosen (measured in
 * 21 ms): 196 GF/s vs bf16 native 107 GF/s (brg:avx512_core_bf16)"; int8:
 * its two variants, "int8 native s8s8 chosen (...) vs int8 native u8s8". */
static void print_path_choice(FILE *out, agmm_dtype_t dt,
                              const agmm_gemm_info_t *g)
{
    char a[32], b[32];
    if (g->int8_variant && g->candidates == 2) {
        int won = !strcmp(g->int8_variant, "u8s8");
        const struct agmm_gemm_candidate *w = &g->candidate[won],
                                         *l = &g->candidate[!won];
        fprintf(out,
                "gemm path: int8 native %s chosen (%s, in %.0f ms of the "
                "plan's %.0f ms creation): %.0f GOP/s, %.3f ms a round (%s) "
                "vs %s %.0f GOP/s, %.3f ms (%s)\n",
                g->int8_variant, g->chosen_by, g->choose_ms,
                agmm_tool_create_ms, w->gflops, w->round_us * 1e-3, w->impl,
                won ? "s8s8" : "u8s8", l->gflops, l->round_us * 1e-3, l->impl);
        return;
    }
    if (g->candidates < 2) {
        fprintf(out, "gemm path: %s%s%s (%s)\n", path_words(dt, g->path, a),
                g->int8_variant ? " " : "",
                g->int8_variant ? g->int8_variant : "",
                !strcmp(g->chosen_by, "forced") ? "--gemm-path"
                                                : "the only one here");
        return;
    }
    int won = g->candidate[1].path == g->path;
    const struct agmm_gemm_candidate *w = &g->candidate[won],
                                     *l = &g->candidate[!won];
    fprintf(out, "gemm path: %s chosen (%s", path_words(dt, w->path, a),
            g->chosen_by);
    if (g->choose_ms > 0)
        fprintf(out, " in %.0f ms of the plan's %.0f ms creation", g->choose_ms,
                agmm_tool_create_ms);
    fprintf(
        out,
        "): %.0f GF/s, %.3f ms a round (%s) vs %s %.0f GF/s, %.3f ms (%s)\n",
        w->gflops, w->round_us * 1e-3, w->impl, path_words(dt, l->path, b),
        l->gflops, l->round_us * 1e-3, l->impl);
}

void agmm_tool_describe(const agmm_cli_t *cli, agmm_world_t *world,
                        const agmm_plan_t *plan, FILE *out)
{
    char shards[96] = "";
    int same = 1;
    for (int r = 1; r < cli->ranks; r++)
        same &= cli->m_local[r] == cli->m_local[0];
    if (same) {
        snprintf(shards, sizeof shards, "%lld per rank",
                 (long long)cli->m_local[0]);
    } else {
        size_t len = 0;
        for (int r = 0; r < cli->ranks && len + 24 < sizeof shards; r++)
            len += (size_t)snprintf(shards + len, sizeof shards - len, "%s%lld",
                                    r ? "," : "", (long long)cli->m_local[r]);
        if (cli->ranks > 0 && len + 24 >= sizeof shards)
            snprintf(shards + len, sizeof shards - len, ",...");
    }
    const char *tag = agmm_tool_link_tag(cli);
    /* Several weights: " (3 weights: 256,256,256)"; rows per round too. */
    char weights[200] = "";
    size_t wl = 0;
    if (cli->n_count > 1) {
        wl = (size_t)snprintf(weights, sizeof weights,
                              " (%d weights: ", cli->n_count);
        for (int i = 0; i < cli->n_count && wl + 24 < sizeof weights; i++)
            wl += (size_t)snprintf(weights + wl, sizeof weights - wl, "%s%lld",
                                   i ? "," : "", (long long)cli->n_list[i]);
        wl += (size_t)snprintf(weights + wl, sizeof weights - wl, ")");
    }
    if (cli->rows_per_round_count > 0 && wl + 40 < sizeof weights) {
        wl += (size_t)snprintf(weights + wl, sizeof weights - wl,
                               ", rows per round ");
        for (int i = 0;
             i < cli->rows_per_round_count && wl + 24 < sizeof weights; i++)
            wl += (size_t)snprintf(weights + wl, sizeof weights - wl, "%s%lld",
                                   i ? "," : "",
                                   (long long)cli->rows_per_round[i]);
    }
    char op[96] = "";
    if (cli->op != AGMM_OP_AG_GEMM) {
        size_t len = (size_t)snprintf(op, sizeof op, " %s (K split ",
                                      agmm_op_name(cli->op));
        for (int r = 0; r < cli->ranks && len + 24 < sizeof op; r++)
            len += (size_t)snprintf(op + len, sizeof op - len, "%s%lld",
                                    r ? "," : "",
                                    (long long)agmm_tool_k_part(cli, r));
        if (len + 24 >= sizeof op)
            len += (size_t)snprintf(op + len, sizeof op - len, ",...");
        snprintf(op + len, sizeof op - len, ")");
    }
    char dt[80]; /* int8: "int8 (A scales per row, W per column)" */
    snprintf(dt, sizeof dt, "%s", agmm_dtype_name(cli->dtype));
    if (agmm_tool_wq_bits(cli) && cli->group_size > 0)
        snprintf(dt, sizeof dt, "%s (W %s, groups of %d%s)",
                 agmm_dtype_name(cli->dtype),
                 agmm_wdtype_name(cli->weight_dtype), cli->group_size,
                 cli->zero_point ? ", zero points" : "");
    else if (agmm_tool_wq_bits(cli))
        snprintf(dt, sizeof dt, "%s (W %s, one group per k%s)",
                 agmm_dtype_name(cli->dtype),
                 agmm_wdtype_name(cli->weight_dtype),
                 cli->zero_point ? ", zero points" : "");
    if (cli->dtype == AGMM_DTYPE_INT8)
        snprintf(dt, sizeof dt, "int8 (A scales per %s, W per %s)",
                 cli->a_scale == AGMM_SCALE_TENSOR ? "shard" : "row",
                 cli->w_scale == AGMM_SCALE_TENSOR ? "weight" : "column");
    char epi[64]; /* "bf16 out (+ bias, gelu-tanh)" */
    int both = cli->bias && cli->activation != AGMM_ACT_NONE;
    snprintf(
        epi, sizeof epi, "%s out%s%s%s%s%s", agmm_dtype_name(cli->out_dtype),
        cli->bias || cli->activation != AGMM_ACT_NONE ? " (" : "",
        cli->bias ? "+ bias" : "", both ? ", " : "",
        cli->activation != AGMM_ACT_NONE ? agmm_activation_name(cli->activation)
                                         : "",
        cli->bias || cli->activation != AGMM_ACT_NONE ? ")" : "");
    fprintf(out,
            "agmm %s%s: %d %s (%s), M=%lld (%s) K=%lld N=%lld%s, %s in, %s, "
            "%s weight, tiles %lldx%lld, %d comm + %d GEMM threads per "
            "rank%s\n",
            cli->cmd == AGMM_CMD_RUN ? "run" : "bench", op, cli->ranks,
            cli->ranks == 1 ? "rank" : "ranks",
            agmm_world_transport_name(world), (long long)cli->m_total, shards,
            (long long)cli->k, (long long)cli->n_sum, weights, dt, epi,
            cli->op != AGMM_OP_AG_GEMM            ? "per-rank"
            : cli->weights == AGMM_WEIGHTS_SHARED ? "shared"
                                                  : "per-rank",
            (long long)cli->tile_m, (long long)cli->tile_n, cli->comm_cores,
            cli->gemm_cores, tag);
    int sharing = cli->cores_own ? 1 : cli->ranks_here;
    fprintf(out, "cores: each rank may use %d %s (its CPU affinity)",
            cli->usable_cores, cli->usable_cores == 1 ? "core" : "cores");
    if (sharing > 1)
        fprintf(out, ", shared by the %d ranks on this host", sharing);
    fprintf(out, "\n");
    agmm_tool_describe_placement(cli, out);
    const char *coretype = agmm_param_str(AGMM_PARAM_EXT_OPENBLAS_CORETYPE);
    const char *l2 = agmm_param_str(AGMM_PARAM_EXT_OPENBLAS_L2_SIZE);
    const char *advice = agmm_blas_advice(); /* NULL: the kernel suits */
    int bt = agmm_blas_threads();
    fprintf(out,
            "blas: %s, kernel %s, %d %s per GEMM call (OPENBLAS_CORETYPE=%s, "
            "OPENBLAS_L2_SIZE=%s)%s%s\n",
            agmm_blas_name(), agmm_blas_kernel(), bt,
            bt == 1 ? "thread" : "threads", coretype ? coretype : "unset",
            l2 ? l2 : "unset", advice ? "; advice: " : "",
            advice ? advice : "");
    agmm_gemm_info_t g;
    char words[32];
    if (agmm_plan_gemm_info(plan, &g) == AGMM_OK) {
        /* agmm's pass runs the epilogue where it says pass or mixed, and
         * on the OpenBLAS engine's calls; int8's int32 sums always go
         * through it (scales, compensation: gemm/onednn/s8.c), epilogue
         * or not. There its loops are named. */
        int epi = strcmp(g.epilogue, "none") != 0;
        int own = !strcmp(g.epilogue, "pass") || !strcmp(g.epilogue, "mixed") ||
                  (epi && g.engine == AGMM_GEMM_ENGINE_OPENBLAS) ||
                  g.int8_variant;
        fprintf(
            out, "gemm: %s %s, %s, impl %s, %d %s per call%s%s%s%s%s%s\n",
            g.name, g.version, path_words(cli->dtype, g.path, words), g.impl,
            g.threads_per_call, g.threads_per_call == 1 ? "thread" : "threads",
            epi ? ", epilogue " : "", epi ? g.epilogue : "",
            g.int8_variant ? ", int32 sums finished in agmm's pass" : "",
            own ? " (" : "", own ? g.epilogue_isa : "", own ? " loops)" : "");
        print_path_choice(out, cli->dtype, &g);
    }
}

void agmm_tool_json_gemm(const agmm_plan_t *plan)
{
    agmm_gemm_info_t g;
    if (agmm_plan_gemm_info(plan, &g) != AGMM_OK) return;
    printf(",\"gemm\":{\"engine\":\"%s\",\"version\":\"%s\",\"impl\":\"%s\","
           "\"threads_per_call\":%d,\"path\":\"%s\",\"chosen_by\":\"%s\","
           "\"choose_ms\":%.3f,\"plan_create_ms\":%.3f,\"epilogue\":\"%s\","
           "\"epilogue_isa\":\"%s\",",
           g.name, g.version, g.impl, g.threads_per_call,
           agmm_gemm_path_name(g.path), g.chosen_by, g.choose_ms,
           agmm_tool_create_ms, g.epilogue, g.epilogue_isa);
    if (g.int8_variant)
        printf("\"int8_variant\":\"%s\",", g.int8_variant);
    else
        printf("\"int8_variant\":null,");
    printf("\"candidates\":[");
    for (int i = 0; i < g.candidates; i++) /* int8: s8s8, then u8s8 */
        printf("%s{\"path\":\"%s\",%s%s%s\"round_us\":%.3f,"
               "\"gflops\":%.3f,\"impl\":\"%s\"}",
               i ? "," : "", agmm_gemm_path_name(g.candidate[i].path),
               g.int8_variant ? "\"variant\":\"" : "",
               g.int8_variant ? (i ? "u8s8" : "s8s8") : "",
               g.int8_variant ? "\"," : "", g.candidate[i].round_us,
               g.candidate[i].gflops, g.candidate[i].impl);
    printf("]}");
}

const char *agmm_tool_link_tag(const agmm_cli_t *cli)
{
    static char tag[96];
    if (!(cli->link_gbps > 0)) return "";
    snprintf(tag, sizeof tag, " [emulated link: %g Gbit/s, %g us]",
             cli->link_gbps, cli->link_latency_us);
    return tag;
}
