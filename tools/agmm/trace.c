/* --trace / --trace-svg for `agmm run` and `agmm bench`: start recording
 * after the plan is made, and at the end gather the events, write the
 * files (rank 0) and print the per-round summary (docs/tracing.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "tool.h"

int agmm_tool_trace_begin(agmm_tool_rank_t *t, int rounds)
{
    if (!t->cli->trace_json && !t->cli->trace_svg) return 0;
    return agmm_trace_create(t->plan, rounds, &t->trace) == AGMM_OK ? 0 : 1;
}

static double share(const agmm_trace_summary_t *s)
{
    return s->comm_busy_us > 0 ? s->comm_hidden_us / s->comm_busy_us : -1;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The "trace" member of the command's JSON object. */
static char *json_member(const agmm_tool_rank_t *t, int P)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    uint64_t events, dropped;
    agmm_trace_counts(t->trace, &events, &dropped);
    fprintf(f, ",\"trace\":{\"json\":");
    if (t->cli->trace_json)
        json_str(f, t->cli->trace_json);
    else
        fprintf(f, "null");
    fprintf(f, ",\"svg\":");
    if (t->cli->trace_svg)
        json_str(f, t->cli->trace_svg);
    else
        fprintf(f, "null");
    fprintf(f, ",\"events\":%llu,\"dropped\":%llu,\"summary\":[",
            (unsigned long long)events, (unsigned long long)dropped);
    int rounds = agmm_trace_rounds(t->trace);
    for (int i = 0; i < rounds; i++)
        for (int r = 0; r < P; r++) {
            agmm_trace_summary_t s;
            if (agmm_trace_summary(t->trace, i, r, &s) != AGMM_OK) continue;
            fprintf(f,
                    "%s{\"round\":%d,\"schedule\":\"%s\",\"rank\":%d,"
                    "\"round_us\":%.1f,\"gemm_wait_us\":%.1f,"
                    "\"gemm_busy_us\":%.1f,\"comm_busy_us\":%.1f,"
                    "\"comm_hidden_us\":%.1f,\"hidden_share\":",
                    i || r ? "," : "", s.round,
                    s.schedule == AGMM_SCHEDULE_FUSED ? "fused" : "baseline", r,
                    s.round_us, s.gemm_wait_us, s.gemm_busy_us, s.comm_busy_us,
                    s.comm_hidden_us);
            if (share(&s) < 0)
                fprintf(f, "null}");
            else
                fprintf(f, "%.4f}", share(&s));
        }
    fprintf(f, "]}");
    fclose(f);
    return buf;
}

static void row(const char *what, int rank, const agmm_trace_summary_t *s)
{
    printf("%-14s %4d %10.3f %13.3f %13.3f %13.3f", what, rank,
           s->round_us * 1e-3, s->gemm_wait_us * 1e-3, s->gemm_busy_us * 1e-3,
           s->comm_busy_us * 1e-3);
    if (share(s) < 0)
        printf(" %7s\n", "n/a");
    else
        printf(" %6.1f%%\n", 100 * share(s));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* bench: per schedule and rank, the median of each quantity over the
 * traced (timed) rounds. */
static void print_medians(const agmm_trace_t *tr, int P)
{
    int rounds = agmm_trace_rounds(tr);
    double *v = malloc(sizeof(double) * 5 * (size_t)(rounds > 0 ? rounds : 1));
    if (!v) return;
    for (int sched = 0; sched < 2; sched++)
        for (int r = 0; r < P; r++) {
            int n = 0;
            for (int i = 0; i < rounds; i++) {
                agmm_trace_summary_t s;
                if (agmm_trace_summary(tr, i, r, &s) != AGMM_OK ||
                    (int)s.schedule != sched)
                    continue;
                v[n] = s.round_us;
                v[rounds + n] = s.gemm_wait_us;
                v[2 * rounds + n] = s.gemm_busy_us;
                v[3 * rounds + n] = s.comm_busy_us;
                v[4 * rounds + n] = s.comm_hidden_us;
                n++;
            }
            if (n == 0) continue;
            agmm_trace_summary_t m = {0};
            m.round_us = median(v, n);
            m.gemm_wait_us = median(v + rounds, n);
            m.gemm_busy_us = median(v + 2 * rounds, n);
            m.comm_busy_us = median(v + 3 * rounds, n);
            m.comm_hidden_us = median(v + 4 * rounds, n);
            row(sched == AGMM_SCHEDULE_FUSED ? "fused" : "baseline", r, &m);
        }
    free(v);
}

int agmm_tool_trace_end(agmm_tool_rank_t *t)
{
    if (!t->trace) return 0;
    const agmm_cli_t *cli = t->cli;
    if (agmm_trace_gather(t->trace) != AGMM_OK ||
        agmm_trace_write(t->trace, cli->trace_json, cli->trace_svg) != AGMM_OK)
        return 1;
    if (t->rank != 0 || !cli->json) return 0;
    t->trace_json = json_member(t, cli->ranks);
    return t->trace_json ? 0 : 1;
}

void agmm_tool_trace_print(const agmm_tool_rank_t *t, int per_round)
{
    const agmm_cli_t *cli = t->cli;
    if (!t->trace || t->rank != 0 || cli->json) return;
    int P = cli->ranks;
    uint64_t events, dropped;
    agmm_trace_counts(t->trace, &events, &dropped);
    printf("trace: %llu events", (unsigned long long)events);
    if (dropped)
        printf(", %llu DROPPED (buffers full: trace fewer rounds)",
               (unsigned long long)dropped);
    printf(" -> %s%s%s\n", cli->trace_json ? cli->trace_json : "",
           cli->trace_json && cli->trace_svg ? ", " : "",
           cli->trace_svg ? cli->trace_svg : "");
    if (per_round)
        printf("trace summary per round and rank (ms; hidden = share of comm "
               "busy time overlapped by GEMM work):\n");
    else
        printf("trace summary, median over the timed rounds of each mode (ms; "
               "hidden = share of comm busy time overlapped by GEMM work):\n");
    printf("%-14s %4s %10s %13s %13s %13s %7s\n", per_round ? "round" : "mode",
           "rank", "round", "gemm_wait", "gemm_busy", "comm_busy", "hidden");
    if (!per_round) {
        print_medians(t->trace, P);
    } else {
        for (int i = 0; i < agmm_trace_rounds(t->trace); i++)
            for (int r = 0; r < P; r++) {
                agmm_trace_summary_t s;
                if (agmm_trace_summary(t->trace, i, r, &s) != AGMM_OK) continue;
                char what[32];
                snprintf(what, sizeof what, "%d %s", s.round,
                         s.schedule == AGMM_SCHEDULE_FUSED ? "fused"
                                                           : "baseline");
                row(what, r, &s);
            }
    }
    fflush(stdout);
}
