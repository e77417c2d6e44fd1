/* `agmm bench`: time the fused schedule and the non-overlapped baseline in
 * the same invocation, on the same ranks, cores and BLAS. Rounds of the two
 * modes alternate, so machine noise hits both alike. A round's time is the
 * slowest rank's, from a common barrier to the end of its run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "tool.h"

typedef struct stats {
    double min, median, mean, max, stdev; /* microseconds */
} stats_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static stats_t summarize(double *us, int n)
{
    stats_t s = {0, 0, 0, 0, 0};
    if (n == 0) return s;
    qsort(us, (size_t)n, sizeof *us, cmp_double);
    s.min = us[0];
    s.max = us[n - 1];
    s.median = n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
    for (int i = 0; i < n; i++) s.mean += us[i] / n;
    for (int i = 0; i < n; i++) s.stdev += (us[i] - s.mean) * (us[i] - s.mean);
    s.stdev = n > 1 ? sqrt(s.stdev / (n - 1)) : 0;
    return s;
}

/* One timed round of `schedule`: the slowest rank's seconds, or < 0. */
static double timed_round(agmm_tool_rank_t *t, agmm_schedule_t schedule)
{
    int P = agmm_world_size(t->world);
    double *all = malloc(sizeof(double) * (size_t)P);
    if (!all) return -1;
    double slowest = -1;
    if (agmm_world_barrier(t->world, 0) == AGMM_OK) {
        double t0 = agmm_tool_now();
        if (agmm_plan_run(t->plan, schedule, t->a, t->c) == AGMM_OK) {
            double mine = agmm_tool_now() - t0;
            if (agmm_world_allgather(t->world, &mine, all, sizeof mine) ==
                AGMM_OK) {
                slowest = 0;
                for (int p = 0; p < P; p++)
                    if (all[p] > slowest) slowest = all[p];
            }
        }
    }
    free(all);
    return slowest;
}

static const struct {
    const char *name;
    agmm_schedule_t schedule;
} modes[] = {{"fused", AGMM_SCHEDULE_FUSED},
             {"baseline", AGMM_SCHEDULE_BASELINE}};
#define NMODES ((int)(sizeof modes / sizeof modes[0]))

int agmm_tool_bench(agmm_world_t *world, const agmm_cli_t *cli)
{
    agmm_tool_rank_t t;
    int rc = agmm_tool_setup(world, cli, &t);
    if (rc == 0) rc = agmm_tool_fill_shard(&t, 0);
    double *us[NMODES] = {0};
    for (int m = 0; m < NMODES && rc == 0; m++) {
        us[m] = calloc((size_t)cli->rounds, sizeof(double));
        if (!us[m]) rc = 1;
    }
    if (rc != 0) {
        for (int m = 0; m < NMODES; m++) free(us[m]);
        agmm_tool_teardown(&t);
        return rc;
    }
    if (t.rank == 0 && !cli->json) {
        agmm_tool_describe(cli, world, stdout);
        printf("rounds: %d timed + %d warmup per mode, modes alternate\n",
               cli->rounds, cli->warmup);
        fflush(stdout);
    }
    for (int i = 0; i < cli->warmup + cli->rounds && rc == 0; i++) {
        /* --trace records the timed rounds of both modes (the library
         * caps the memory and counts what it drops). */
        if (i == cli->warmup) {
            int64_t traced = (int64_t)cli->rounds * NMODES;
            rc = agmm_tool_trace_begin(&t, traced < (1 << 20) ? (int)traced
                                                              : 1 << 20);
        }
        for (int m = 0; m < NMODES && rc == 0; m++) {
            double s = timed_round(&t, modes[m].schedule);
            if (s < 0) rc = 1;
            else if (i >= cli->warmup) us[m][i - cli->warmup] = s * 1e6;
        }
    }
    if (rc == 0) rc = agmm_tool_trace_end(&t);
    if (rc == 0 && t.rank == 0) {
        double flop = 2.0 * (double)cli->m_total * (double)cli->k * (double)cli->n;
        stats_t st[NMODES];
        for (int m = 0; m < NMODES; m++) st[m] = summarize(us[m], cli->rounds);
        double ratio = st[0].median / st[1].median;
        if (cli->json) {
            printf("{\"command\":\"bench\",\"ranks\":%d,\"transport\":\"%s\","
                   "\"m\":%lld,\"k\":%lld,\"n\":%lld,\"dtype\":\"%s\","
                   "\"weights\":\"%s\",\"tile_m\":%lld,\"tile_n\":%lld,"
                   "\"comm_cores\":%d,\"gemm_cores\":%d,\"rounds\":%d,"
                   "\"warmup\":%d,\"blas\":{\"name\":\"%s\",\"kernel\":\"%s\"},"
                   "\"modes\":{",
                   cli->ranks, agmm_world_transport_name(world),
                   (long long)cli->m_total, (long long)cli->k,
                   (long long)cli->n, agmm_dtype_name(cli->dtype),
                   cli->weights == AGMM_WEIGHTS_SHARED ? "shared" : "per-rank",
                   (long long)cli->tile_m, (long long)cli->tile_n,
                   cli->comm_cores, cli->gemm_cores, cli->rounds, cli->warmup,
                   agmm_blas_name(), agmm_blas_kernel());
            for (int m = 0; m < NMODES; m++)
                printf("%s\"%s\":{\"min_us\":%.3f,\"median_us\":%.3f,"
                       "\"mean_us\":%.3f,\"max_us\":%.3f,\"stdev_us\":%.3f,"
                       "\"tflops\":%.4f}",
                       m ? "," : "", modes[m].name, st[m].min, st[m].median,
                       st[m].mean, st[m].max, st[m].stdev,
                       flop / st[m].median * 1e-6);
            printf("},\"ratio_fused_over_baseline\":%.6f%s}\n", ratio,
                   t.trace_json ? t.trace_json : "");
        } else {
            printf("%-9s %12s %12s %12s %12s %12s %9s\n", "mode", "min_us",
                   "median_us", "mean_us", "max_us", "stdev_us", "TFLOP/s");
            for (int m = 0; m < NMODES; m++)
                printf("%-9s %12.1f %12.1f %12.1f %12.1f %12.1f %9.4f\n",
                       modes[m].name, st[m].min, st[m].median, st[m].mean,
                       st[m].max, st[m].stdev,
                       flop / st[m].median * 1e-6);
            printf("fused / baseline (median): %.3f\n", ratio);
            agmm_tool_trace_print(&t, 0);
        }
        fflush(stdout);
    }
    for (int m = 0; m < NMODES; m++) free(us[m]);
    if (rc == 0) agmm_tool_teardown(&t);
    return rc;
}
