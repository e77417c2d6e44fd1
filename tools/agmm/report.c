/* What --json prints besides the per-command results: the header members
 * run and bench share, and the failure object. With --json the tool prints
 * exactly one complete object: rank 0 prints it when the command finishes
 * (with "ok"), and when it cannot (a rank failed or was killed, the run was
 * interrupted) the process that is left prints
 *   {"command":..,"ok":false,"error":"..","failed_rank":R|null, header}.
 * The forked ranks report the first failure into a shared mapping made
 * before the fork (agmm_tool_report). */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agmm_ext.h" /* agmm_blas_* */
#include "common/param.h"
#include "placement.h"
#include "tool.h" /* agmm_tool_k_part */

static agmm_tool_report_t local_report = {-1, 0, 0, ""};
static agmm_tool_report_t *report = &local_report;

void agmm_tool_report_share(void)
{
    void *p = mmap(NULL, sizeof *report, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return; /* the parent's own report still works */
    report = p;
    *report = local_report;
}

agmm_tool_report_t *agmm_tool_report(void)
{
    return report;
}

/* The rank an abort message blames ("... rank 1 was killed by signal 9"). */
static int blamed_rank(const char *msg, int fallback)
{
    const char *p = msg;
    int r;
    while ((p = strstr(p, "rank ")) != NULL) {
        char word[16];
        if (sscanf(p, "rank %d %15s", &r, word) == 2 &&
            (!strcmp(word, "was") || !strcmp(word, "exited") ||
             !strcmp(word, "aborted")))
            return r;
        p += 5;
    }
    return fallback;
}

void agmm_tool_report_failure(int rank, const char *why)
{
    if (!why || !*why) why = agmm_last_error();
    if (!why || !*why) why = "failed";
    int blamed = blamed_rank(why, rank);
    if (!__sync_bool_compare_and_swap(&report->claimed, 0, 1)) return;
    report->failed_rank = blamed;
    snprintf(report->error, sizeof report->error, "%s", why);
}

void agmm_tool_report_interrupted(int sig)
{
    /* Overrides what the ranks saw: they failed because of the signal. */
    report->claimed = 1;
    report->failed_rank = -1;
    snprintf(report->error, sizeof report->error,
             "interrupted by signal %d (%s)", sig, strsignal(sig));
}

void agmm_tool_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

void agmm_tool_json_header(const agmm_cli_t *cli, const char *transport)
{
    const char *coretype = agmm_param_str(AGMM_PARAM_EXT_OPENBLAS_CORETYPE);
    const char *l2 = agmm_param_str(AGMM_PARAM_EXT_OPENBLAS_L2_SIZE);
    printf("\"ranks\":%d,\"transport\":\"%s\",\"link\":", cli->ranks,
           transport);
    if (cli->link_gbps > 0)
        printf("{\"kind\":\"emulated link\",\"gbps\":%g,\"latency_us\":%g}",
               cli->link_gbps, cli->link_latency_us);
    else
        printf("null");
    printf(",\"m\":%lld,\"k\":%lld,\"n\":%lld,\"m_local\":[",
           (long long)cli->m_total, (long long)cli->k, (long long)cli->n);
    for (int r = 0; r < cli->ranks; r++)
        printf("%s%lld", r ? "," : "", (long long)cli->m_local[r]);
    printf("],\"op\":\"%s\"", agmm_op_name(cli->op));
    if (cli->n_count > 1) { /* several weights: "n" is the first's */
        printf(",\"n_list\":[");
        for (int i = 0; i < cli->n_count; i++)
            printf("%s%lld", i ? "," : "", (long long)cli->n_list[i]);
        printf("]");
    }
    if (cli->rows_per_round_count > 0) {
        printf(",\"m_local_per_round\":[");
        for (int i = 0; i < cli->rows_per_round_count; i++)
            printf("%s%lld", i ? "," : "", (long long)cli->rows_per_round[i]);
        printf("]");
    }
    if (cli->op != AGMM_OP_AG_GEMM) { /* the split in effect */
        printf(",\"k_local\":[");
        for (int r = 0; r < cli->ranks; r++)
            printf("%s%lld", r ? "," : "", (long long)agmm_tool_k_part(cli, r));
        printf("]");
    }
    if (agmm_tool_wq_bits(cli)) /* a quantized weight */
        printf(",\"weight_dtype\":\"%s\",\"group_size\":%d,\"zero_point\":%s,"
               "\"a_quant\":\"%s\"",
               agmm_wdtype_name(cli->weight_dtype), cli->group_size,
               cli->zero_point ? "true" : "false",
               agmm_aquant_name(cli->a_quant));
    printf(",\"bias\":%s,\"activation\":\"%s\",\"out_dtype\":\"%s\"",
           cli->bias ? "true" : "false", agmm_activation_name(cli->activation),
           agmm_dtype_name(cli->out_dtype));
    printf(",\"gemm_engine\":\"%s\",\"dtype\":\"%s\",\"weights\":\"%s\",\"tile_"
           "m\":%lld,\"tile_n\":%lld,"
           "\"comm_cores\":%d,\"gemm_cores\":%d,\"usable_cores_per_rank\":%d,"
           "\"warmup\":%d,\"blas\":{\"name\":\"%s\",\"kernel\":\"%s\","
           "\"threads_per_call\":%d,\"OPENBLAS_CORETYPE\":\"%s\","
           "\"OPENBLAS_L2_SIZE\":\"%s\",\"advice\":",
           agmm_gemm_engine_name(cli->gemm_engine), agmm_dtype_name(cli->dtype),
           cli->weights == AGMM_WEIGHTS_SHARED ? "shared" : "per-rank",
           (long long)cli->tile_m, (long long)cli->tile_n, cli->comm_cores,
           cli->gemm_cores, cli->usable_cores, cli->warmup, agmm_blas_name(),
           agmm_blas_kernel(), agmm_blas_threads(), coretype ? coretype : "",
           l2 ? l2 : "");
    const char *advice = agmm_blas_advice(); /* an old kernel here, or NULL */
    if (advice)
        agmm_tool_json_string(advice);
    else
        printf("null");
    printf("}");
    agmm_tool_json_placement(cli);
    if (cli->dtype == AGMM_DTYPE_INT8) /* the scale layouts, as given */
        printf(",\"a_scale\":\"%s\",\"w_scale\":\"%s\"",
               cli->a_scale == AGMM_SCALE_TENSOR ? "tensor" : "row",
               cli->w_scale == AGMM_SCALE_TENSOR ? "tensor" : "col");
}

void agmm_tool_json_failure(const agmm_cli_t *cli, const char *transport)
{
    if (!cli->json || report->printed) return;
    const char *err = report->claimed ? report->error : "failed";
    printf("{\"command\":\"%s\",\"ok\":false,\"error\":",
           cli->cmd == AGMM_CMD_RUN ? "run" : "bench");
    agmm_tool_json_string(err);
    if (report->claimed && report->failed_rank >= 0)
        printf(",\"failed_rank\":%d,", report->failed_rank);
    else
        printf(",\"failed_rank\":null,");
    agmm_tool_json_header(cli, transport);
    if (cli->cmd == AGMM_CMD_BENCH) printf(",\"rounds\":%d", cli->rounds);
    printf("}\n");
    fflush(stdout);
    report->printed = 1;
}
