/* `agmm bench`'s statistics and report (bench_report.h): each mode's
 * statistics, the ratios between modes, the rates (per rank, per GEMM core
 * over the peak, the weight bytes read per second over one core's DRAM
 * rate) and their text table or --json object. */
#include "bench_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "report.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

stats_t agmm_bench_summarize(double *us, int n)
{
    stats_t s = {0, 0, 0, 0, 0};
    if (n == 0) return s;
    qsort(us, (size_t)n, sizeof *us, cmp_double);
    s.min = us[0];
    s.max = us[n - 1];
    s.median = n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
    for (int i = 0; i < n; i++)
        s.mean += us[i] / n;
    for (int i = 0; i < n; i++)
        s.stdev += (us[i] - s.mean) * (us[i] - s.mean);
    s.stdev = n > 1 ? sqrt(s.stdev / (n - 1)) : 0;
    return s;
}

/* The time a rate is computed over: the median round, or with rows that
 * change every round (--m-local-per-round) the mean round, since `flop` is
 * then the mean round's flops (total flops / total time; the median round
 * is one of the sizes, not the mean one). */
static double rate_us(const agmm_cli_t *cli, const stats_t *s)
{
    return cli->rows_per_round_count > 0 ? s->mean : s->median;
}

/* Mode m's GEMM rate per GEMM core over a peak (GFLOP/s, int8 GOP/s, per
 * core: the path's, or int8's VNNI one): `flop` (one rank's,
 * agmm_tool_flop_per_rank) per median round, divided by the rank's GEMM
 * threads; 0 for comm-only (no GEMM) or an unknown peak. */
static double fraction_of_peak(int m, double flop, double median_us,
                               int gemm_cores, double peak)
{
    if (m == M_COMM_ONLY || !(peak > 0) || !(median_us > 0) || gemm_cores < 1)
        return 0;
    double gflops_per_core = flop / median_us * 1e-3 / gemm_cores;
    return gflops_per_core / peak;
}

/* The weight bytes one rank holds and reads (at least once) per round:
 * its K (split-k ops: K / ranks) x the sum of the weights' N, in the
 * dtype; quantized (--weight-dtype), the plain layout's bytes: 1 or 1/2
 * a value, and per group of G rows of each column an fp32 scale (and a
 * uint8 zero point with --zero-point; G 0: one group of the rank's K).
 * What a decode round cannot read faster than the DRAM allows. */
static double weight_bytes(const agmm_cli_t *cli)
{
    double kn = agmm_tool_flop_per_rank(cli) / (2.0 * (double)cli->m_total);
    if (cli->weight_dtype == AGMM_WDTYPE_SAME)
        return kn * (double)agmm_dtype_size(cli->dtype);
    double k = (double)cli->k;
    if (agmm_tool_split_k(cli)) k /= (double)cli->ranks;
    double g = cli->group_size > 0 ? (double)cli->group_size : k;
    double value = cli->weight_dtype == AGMM_WDTYPE_INT4 ? 0.5 : 1.0;
    double per_group = 4.0 + (cli->zero_point ? 1.0 : 0.0);
    return kn * value + kn / k * ceil(k / g) * per_group;
}

/* The ranks on this host (they share its last-level cache). */
static int ranks_here(const agmm_cli_t *cli)
{
    return cli->ranks_here > 0 ? cli->ranks_here
           : cli->ranks > 0    ? cli->ranks
                               : 1;
}

/* 1 when every weight set of the ranks on this host fits the LLC together:
 * the rounds then read their weights from the cache, not DRAM. */
static int weights_fit_llc(const agmm_cli_t *cli, double llc_mib)
{
    double all = weight_bytes(cli) * cli->weight_sets * ranks_here(cli);
    return llc_mib > 0 && all <= llc_mib * (1 << 20);
}

/* The sets that stream from DRAM: together twice the LLC; 0 when that
 * takes more than the option allows. */
static int sets_for_dram(const agmm_cli_t *cli, double llc_mib)
{
    double one = weight_bytes(cli) * ranks_here(cli);
    double l = one > 0 ? ceil(2.0 * llc_mib * (1 << 20) / one) : 1;
    return l < 2 ? 2 : l > AGMM_CLI_MAX_WEIGHT_SETS ? 0 : (int)l;
}

/* Mode m's weight read rate (GB/s: weight_bytes per round), 0 for
 * comm-only (it reads no weight). */
static double weight_gbps(const agmm_cli_t *cli, int m, double us)
{
    if (m == M_COMM_ONLY || !(us > 0) || cli->m_total <= 0) return 0;
    return weight_bytes(cli) / us * 1e-3;
}

/* The same over one core's DRAM read rate (0 where unknown). */
static double fraction_of_dram(const agmm_cli_t *cli, int m, double us,
                               double dram_gbps)
{
    return dram_gbps > 0 ? weight_gbps(cli, m, us) / dram_gbps : 0;
}

#define NRATIOS 6

/* The ratios of one time per mode (v[m], microseconds). */
ratios_t agmm_bench_ratios_of(const double *v, const int *on)
{
    ratios_t r = {0, 0, 0, 0, 0, 0};
    if (on[M_SEPARATE] && v[M_SEPARATE] > 0)
        r.fused_over_separate = v[M_FUSED] / v[M_SEPARATE];
    if (on[M_EXACT] && v[M_EXACT] > 0)
        r.fused_over_exact = v[M_FUSED] / v[M_EXACT];
    if (on[M_FUSED] && on[M_BASELINE])
        r.fused_over_baseline = v[M_FUSED] / v[M_BASELINE];
    if (on[M_GEMM_ONLY])
        r.gemm_over_monolithic = v[M_GEMM_ONLY] / v[M_MONOLITHIC];
    if (on[M_FUSED] && on[M_GEMM_ONLY] && on[M_COMM_ONLY])
        r.fused_over_bound =
            v[M_FUSED] /
            (v[M_GEMM_ONLY] > v[M_COMM_ONLY] ? v[M_GEMM_ONLY] : v[M_COMM_ONLY]);
    if (on[M_AUTO] && on[M_FUSED] && on[M_BASELINE])
        r.auto_over_best =
            v[M_AUTO] /
            (v[M_FUSED] < v[M_BASELINE] ? v[M_FUSED] : v[M_BASELINE]);
    return r;
}

/* The median over rounds of each round's ratios (modes of one round run
 * back to back): on a machine whose load changes over seconds this pairs
 * each round with its neighbours, where the ratio of medians does not. */
ratios_t agmm_bench_paired_ratios(double *const *us, const int *on, int rounds)
{
    double *col[NRATIOS];
    int n[NRATIOS] = {0};
    ratios_t r = {0, 0, 0, 0, 0, 0};
    int ok = 1;
    for (int k = 0; k < NRATIOS; k++)
        ok &= (col[k] = calloc((size_t)rounds + 1, sizeof(double))) != NULL;
    if (ok) {
        for (int i = 0; i < rounds; i++) {
            double v[NMODES] = {0};
            for (int m = 0; m < NMODES; m++)
                v[m] = on[m] ? us[m][i] : 0;
            ratios_t one = agmm_bench_ratios_of(v, on);
            double each[NRATIOS] = {
                one.fused_over_baseline, one.gemm_over_monolithic,
                one.fused_over_bound,    one.auto_over_best,
                one.fused_over_separate, one.fused_over_exact};
            /* Rounds without a ratio (an exact round of no rows) left out. */
            for (int k = 0; k < NRATIOS; k++)
                if (each[k] > 0) col[k][n[k]++] = each[k];
        }
        double *med[NRATIOS] = {&r.fused_over_baseline, &r.gemm_over_monolithic,
                                &r.fused_over_bound,    &r.auto_over_best,
                                &r.fused_over_separate, &r.fused_over_exact};
        for (int k = 0; k < NRATIOS; k++)
            *med[k] = agmm_bench_summarize(col[k], n[k]).median;
    }
    for (int k = 0; k < NRATIOS; k++)
        free(col[k]);
    return r;
}

static void json_ratio(const char *key, double v)
{
    if (v > 0)
        printf(",\"%s\":%.6f", key, v);
    else
        printf(",\"%s\":null", key);
}

void agmm_bench_print_json(const agmm_tool_rank_t *t, agmm_world_t *world,
                           const stats_t *st, const int *on, ratios_t r,
                           ratios_t paired, const agmm_schedule_info_t *ai,
                           double flop, const agmm_bench_peak_t *pk,
                           double *const *samples)
{
    const agmm_cli_t *cli = t->cli;
    printf("{\"command\":\"bench\",\"ok\":true,");
    agmm_tool_json_header(cli, agmm_world_transport_name(world));
    agmm_tool_json_gemm(t->plan);
    printf(",\"rounds\":%d", cli->rounds);
    agmm_bench_peak_json(pk);
    printf(",\"weight_bytes_per_rank\":%.0f,\"weight_sets\":%d,"
           "\"weights_fit_llc\":%s",
           weight_bytes(cli), cli->weight_sets,
           weights_fit_llc(cli, pk->llc_mib) ? "true" : "false");
    printf(",\"modes\":{");
    int first = 1;
    for (int m = 0; m < NMODES; m++) {
        if (!on[m]) continue;
        printf("%s\"%s\":{\"min_us\":%.3f,\"median_us\":%.3f,"
               "\"mean_us\":%.3f,\"max_us\":%.3f,\"stdev_us\":%.3f,"
               "\"tflops\":%.4f",
               first ? "" : ",", agmm_bench_mode_name(m), st[m].min,
               st[m].median, st[m].mean, st[m].max, st[m].stdev,
               flop / rate_us(cli, &st[m]) * 1e-6);
        json_ratio("fraction_of_peak",
                   fraction_of_peak(m, flop, rate_us(cli, &st[m]),
                                    cli->gemm_cores, pk->gflops));
        json_ratio("fraction_of_vnni_peak",
                   fraction_of_peak(m, flop, rate_us(cli, &st[m]),
                                    cli->gemm_cores, pk->vnni_gops));
        json_ratio("weight_gbps", weight_gbps(cli, m, rate_us(cli, &st[m])));
        json_ratio(
            "fraction_of_dram",
            fraction_of_dram(cli, m, rate_us(cli, &st[m]), pk->dram_gbps));
        printf(",\"samples_us\":[");
        for (int i = 0; i < cli->rounds; i++)
            printf("%s%.3f", i ? "," : "", samples[m][i]);
        printf("]}");
        first = 0;
    }
    printf("}");
    json_ratio("ratio_fused_over_baseline", r.fused_over_baseline);
    json_ratio("ratio_gemm_over_monolithic", r.gemm_over_monolithic);
    json_ratio("ratio_fused_over_bound", r.fused_over_bound);
    json_ratio("ratio_auto_over_best", r.auto_over_best);
    if (on[M_SEPARATE])
        json_ratio("ratio_fused_over_separate", r.fused_over_separate);
    if (on[M_EXACT]) json_ratio("ratio_fused_over_exact", r.fused_over_exact);
    printf(",\"paired\":{\"rounds\":%d", cli->rounds);
    if (on[M_SEPARATE])
        json_ratio("fused_over_separate", paired.fused_over_separate);
    if (on[M_EXACT]) json_ratio("fused_over_exact", paired.fused_over_exact);
    json_ratio("fused_over_baseline", paired.fused_over_baseline);
    json_ratio("gemm_over_monolithic", paired.gemm_over_monolithic);
    json_ratio("fused_over_bound", paired.fused_over_bound);
    json_ratio("auto_over_best", paired.auto_over_best);
    printf("}");
    if (on[M_AUTO])
        printf(",\"auto\":{\"pick\":\"%s\",\"decided\":%s,\"trials\":%d,"
               "\"fused_us\":%.1f,\"baseline_us\":%.1f,\"reason\":\"%s\"}",
               agmm_schedule_name(ai->decided ? ai->pick : ai->last),
               ai->decided ? "true" : "false", ai->trials, ai->fused_us,
               ai->baseline_us, ai->reason);
    printf("%s}\n", t->trace_json ? t->trace_json : "");
    agmm_tool_report()->printed = 1;
}

/* One ratio line, if the ratio was measured. */
static void text_ratio(const char *what, double v, double paired)
{
    if (v > 0) printf("%s (median): %.3f, paired %.3f\n", what, v, paired);
}

/* Bytes the all-gather brings to the rank that receives the most: the
 * other ranks' shards, K columns each. gemm-rs: the partial rows of its
 * part of C from every other rank, N fp32 columns each; gemm-ar: those,
 * and every other rank's reduced rows, N fp32 columns each. */
static double gathered_bytes(const agmm_cli_t *cli)
{
    double most = 0;
    for (int r = 0; r < cli->ranks && agmm_tool_split_k(cli); r++) {
        double b = (double)(cli->ranks - 1) * (double)cli->m_local[r] *
                   (double)cli->n * 4.0;
        if (cli->op == AGMM_OP_GEMM_AR)
            b +=
                (double)(cli->m_total - cli->m_local[r]) * (double)cli->n * 4.0;
        if (b > most) most = b;
    }
    for (int r = 0; r < cli->ranks && !agmm_tool_split_k(cli); r++) {
        double b = (double)(cli->m_total - cli->m_local[r]) * (double)cli->k *
                   (double)agmm_dtype_size(cli->dtype);
        if (b > most) most = b;
    }
    return most;
}

/* Text: ms, and per rank GFLOP/s (2*M*K*N of one rank over the slowest
 * rank's time) or, for comm-only, GB/s (the bytes gathered per second). */
void agmm_bench_print_text(const agmm_tool_rank_t *t, const stats_t *st,
                           const int *on, ratios_t r, ratios_t pr,
                           const agmm_schedule_info_t *ai, double flop,
                           const agmm_bench_peak_t *pk, double comm_ms)
{
    const agmm_cli_t *cli = t->cli;
    printf("weights: %.2f MiB per rank, read once or more per round; %d "
           "set%s, one per timed call in turn\n",
           weight_bytes(cli) / (1 << 20), cli->weight_sets,
           cli->weight_sets == 1 ? "" : "s");
    if (weights_fit_llc(cli, pk->llc_mib)) {
        char hint[64] = "no --weight-sets streams this size from DRAM";
        int l = sets_for_dram(cli, pk->llc_mib);
        if (l > 0)
            snprintf(hint, sizeof hint, "--weight-sets %d streams from DRAM",
                     l);
        printf("weights: %d set%s x %d rank%s = %.1f MiB fit the %.0f MiB "
               "last-level cache%s: rounds read the cache, not DRAM (%s)\n",
               cli->weight_sets, cli->weight_sets == 1 ? "" : "s",
               ranks_here(cli), ranks_here(cli) == 1 ? "" : "s",
               weight_bytes(cli) * cli->weight_sets * ranks_here(cli) /
                   (1 << 20),
               pk->llc_mib, pk->llc_assumed ? " (assumed)" : "", hint);
    }
    printf("%-10s %10s %10s %10s %10s %10s %16s %8s %11s %8s\n", "mode",
           "min_ms", "median_ms", "mean_ms", "max_ms", "stdev_ms",
           "rate per rank", "of_peak", "weight GB/s", "of_dram");
    for (int m = 0; m < NMODES; m++) {
        if (!on[m]) continue;
        char frac[16] = "-"; /* comm-only runs no GEMM */
        double f = fraction_of_peak(m, flop, rate_us(cli, &st[m]),
                                    cli->gemm_cores, pk->gflops);
        if (f > 0) snprintf(frac, sizeof frac, "%.3f", f);
        char wgb[16] = "-", fdram[16] = "-";
        double w = weight_gbps(cli, m, rate_us(cli, &st[m]));
        double fd =
            fraction_of_dram(cli, m, rate_us(cli, &st[m]), pk->dram_gbps);
        if (w > 0) snprintf(wgb, sizeof wgb, "%.2f", w);
        if (fd > 0) snprintf(fdram, sizeof fdram, "%.3f", fd);
        char rate[32];
        if (m == M_COMM_ONLY)
            snprintf(rate, sizeof rate, "%.2f GB/s",
                     gathered_bytes(cli) *
                         (flop / agmm_tool_flop_per_rank(cli)) /
                         rate_us(cli, &st[m]) *
                         1e-3); /* flop's share of the most rows */
        else
            snprintf(rate, sizeof rate, "%.1f %s",
                     flop / rate_us(cli, &st[m]) * 1e-3,
                     cli->dtype == AGMM_DTYPE_INT8 ? "GOP/s" : "GFLOP/s");
        printf("%-10s %10.3f %10.3f %10.3f %10.3f %10.3f %16s %8s %11s %8s\n",
               agmm_bench_mode_name(m), st[m].min * 1e-3, st[m].median * 1e-3,
               st[m].mean * 1e-3, st[m].max * 1e-3, st[m].stdev * 1e-3, rate,
               frac, wgb, fdram);
    }
    text_ratio("fused / baseline", r.fused_over_baseline,
               pr.fused_over_baseline);
    text_ratio("gemm-only / monolithic", r.gemm_over_monolithic,
               pr.gemm_over_monolithic);
    text_ratio("fused / max(comm-only, gemm-only)", r.fused_over_bound,
               pr.fused_over_bound);
    text_ratio("auto / min(fused, baseline)", r.auto_over_best,
               pr.auto_over_best);
    text_ratio("fused (one call, all weights) / separate (one plan per weight)",
               r.fused_over_separate, pr.fused_over_separate);
    text_ratio("fused (rows change every round) / exact (a plan per row count)",
               r.fused_over_exact, pr.fused_over_exact);
    if (r.fused_over_baseline > 0 || r.gemm_over_monolithic > 0 ||
        r.fused_over_bound > 0 || r.auto_over_best > 0 ||
        r.fused_over_separate > 0 || r.fused_over_exact > 0)
        printf("(median): ratio of the medians; paired: median of each round's "
               "own ratio (the modes of a round run back to back)\n");
    if (on[M_AUTO])
        printf("auto %s %s: %s\n",
               ai->decided ? "picked" : "is still measuring, last ran",
               agmm_schedule_name(ai->decided ? ai->pick : ai->last),
               ai->reason);
    /* Nothing to hide: the gather is under 2% of a fused round. */
    if (on[M_FUSED] && comm_ms > 0 &&
        comm_ms < 0.02 * st[M_FUSED].median * 1e-3)
        printf("overlap: the gather (comm-only) takes %.1f%% of a fused round: "
               "nothing to overlap here; to see overlap try --link-gbps 1 --n "
               "256\n",
               100.0 * comm_ms / (st[M_FUSED].median * 1e-3));
}
