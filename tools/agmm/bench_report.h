/* `agmm bench`'s statistics and report (bench_report.c): the modes it
 * times (their table is bench.c's), each mode's statistics over the
 * timed rounds, the ratios between modes (of the medians, and paired:
 * the median of each round's own ratio), and the text table or the one
 * --json object with the rates, fractions of the peak and of DRAM. */
#ifndef AGMM_TOOL_BENCH_REPORT_H
#define AGMM_TOOL_BENCH_REPORT_H

#include "bench_peak.h"
#include "tool.h"

/* The modes bench times, in the order of its table and its output. */
typedef enum {
    M_FUSED,
    M_BASELINE,
    M_AUTO,
    M_GEMM_ONLY,
    M_MONOLITHIC,
    M_COMM_ONLY,
    /* --n with several weights: one plan per weight (bench_cmp.c) */
    M_SEPARATE,
    M_EXACT, /* --m-local-per-round: a plan for each round's rows */
    NMODES
} mode_t_;

/* Mode m's name ("fused", "comm-only"; bench.c's table). */
const char *agmm_bench_mode_name(int m);

typedef struct stats {
    double min, median, mean, max, stdev; /* microseconds */
} stats_t;

/* Ratios between modes, 0 where a mode was not timed. */
typedef struct ratios {
    double fused_over_baseline, gemm_over_monolithic, fused_over_bound;
    double auto_over_best; /* auto / min(fused, baseline) */
    double fused_over_separate, fused_over_exact; /* bench_cmp.c */
} ratios_t;

/* The statistics of n times (microseconds; sorts us in place). */
stats_t agmm_bench_summarize(double *us, int n);
/* The ratios of one time per mode (v[m], microseconds). */
ratios_t agmm_bench_ratios_of(const double *v, const int *on);
/* The median over rounds of each round's ratios (us[m][round]). */
ratios_t agmm_bench_paired_ratios(double *const *us, const int *on, int rounds);
/* Rank 0: the one --json object (samples: us[m][round] in round order). */
void agmm_bench_print_json(const agmm_tool_rank_t *t, agmm_world_t *world,
                           const stats_t *st, const int *on, ratios_t r,
                           ratios_t paired, const agmm_schedule_info_t *ai,
                           double flop, const agmm_bench_peak_t *pk,
                           double *const *samples);
/* Rank 0, text: the weights' lines, the table of the modes, the ratios,
 * auto's pick and the overlap hint (comm_ms: a comm-only round, or 0). */
void agmm_bench_print_text(const agmm_tool_rank_t *t, const stats_t *st,
                           const int *on, ratios_t r, ratios_t pr,
                           const agmm_schedule_info_t *ai, double flop,
                           const agmm_bench_peak_t *pk, double comm_ms);

#endif
