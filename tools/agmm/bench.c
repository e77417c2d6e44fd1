/* `agmm bench`: time the modes (--mode) in the same invocation, on the same
 * ranks, cores and BLAS: the fused schedule, the non-overlapped baseline,
 * auto, and the parts that bound the fused one (gemm-only with the
 * monolithic GEMM beside it, comm-only). Rounds of the modes alternate, so
 * machine noise hits all alike. A round's time is the slowest rank's, from
 * a common barrier to the end of its run.
 *
 * At the start, rank 0 measures its core's physical peak for the GEMM
 * path the plan runs, and the other candidate path's (bench_peak.c), while
 * the other ranks wait in a barrier; each mode's fraction_of_peak is its
 * GEMM rate per GEMM core over the peak of the path that ran (int8 adds
 * fraction_of_vnni_peak, over VPDPBUSD zmm's). Rank 0 also measures its
 * core's DRAM read rate (src/gemm/dram.h): each mode's weight GB/s (the
 * weight bytes a rank holds per round) and fraction_of_dram. With
 * --weight-sets L every timed call runs the next of L plans, each with its
 * own weight (bench_sets.c), so the weights stream from DRAM. The
 * statistics, ratios and the printed report are bench_report.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "bench_cmp.h"
#include "bench_peak.h"
#include "bench_report.h"
#include "bench_sets.h"
#include "progress.h"
#include "report.h"
#include "tool.h"

/* The modes in the order of mode_t_ (bench_report.h). */
static const struct {
    const char *name;
    unsigned flag; /* the --mode that times it */
    int part;      /* 1: agmm_plan_run_part(what), 0: agmm_plan_run(what) */
    int what;
} modes[NMODES] = {
    {"fused", AGMM_BENCH_FUSED, 0, AGMM_SCHEDULE_FUSED},
    {"baseline", AGMM_BENCH_BASELINE, 0, AGMM_SCHEDULE_BASELINE},
    {"auto", AGMM_BENCH_AUTO, 0, AGMM_SCHEDULE_AUTO},
    {"gemm-only", AGMM_BENCH_GEMM_ONLY, 1, AGMM_PART_GEMM_ONLY},
    {"monolithic", AGMM_BENCH_GEMM_ONLY, 1, AGMM_PART_MONOLITHIC},
    {"comm-only", AGMM_BENCH_COMM_ONLY, 1, AGMM_PART_COMM_ONLY},
    {"separate", AGMM_BENCH_FUSED, 2, 0},
    {"exact", AGMM_BENCH_FUSED, 2, 1},
};

const char *agmm_bench_mode_name(int m)
{
    return modes[m].name;
}

static agmm_bench_cmp_t g_cmp;   /* this rank's comparison plans */
static agmm_bench_sets_t g_sets; /* --weight-sets: a plan per set */

/* One timed round of mode m in bench round `round` (its rows): the slowest
 * rank's seconds, 0 for an exact round without rows, or < 0. */
static double timed_round(agmm_tool_rank_t *t, int m, int round)
{
    int P = agmm_world_size(t->world);
    double *all = malloc(sizeof(double) * (size_t)P);
    if (!all) return -1;
    double slowest = -1;
    if (modes[m].part != 2) agmm_bench_sets_next(t, &g_sets);
    agmm_run_args_t args;
    agmm_tool_round_args(t, (agmm_schedule_t)modes[m].what, round, &args);
    if (agmm_world_barrier(t->world, 0) == AGMM_OK) {
        int ran = 1;
        double t0 = agmm_tool_now();
        agmm_status_t st =
            modes[m].part == 2
                ? agmm_bench_cmp_run(t, &g_cmp, modes[m].what, round, &ran)
            : modes[m].part ? agmm_plan_run_part_args(
                                  t->plan, (agmm_part_t)modes[m].what, &args)
                            : agmm_plan_run_args(t->plan, &args);
        if (st == AGMM_OK) {
            double mine = ran ? agmm_tool_now() - t0 : 0;
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

int agmm_tool_bench(agmm_world_t *world, const agmm_cli_t *cli)
{
    agmm_tool_rank_t t;
    int rc = agmm_tool_setup(world, cli, &t);
    if (rc == 0) rc = agmm_tool_fill_shard(&t, 0);
    double *us[NMODES] = {0};
    int on[NMODES];
    if (rc == 0) rc = agmm_bench_cmp_setup(&t, &g_cmp);
    if (rc == 0) rc = agmm_bench_sets_setup(&t, &g_sets);
    for (int m = 0; m < NMODES; m++) {
        on[m] = (cli->bench_modes & modes[m].flag) != 0;
        if (modes[m].part == 2)
            on[m] = on[m] && agmm_bench_cmp_has(&g_cmp, modes[m].what);
        if (on[m] && rc == 0) {
            us[m] = calloc((size_t)cli->rounds, sizeof(double));
            if (!us[m]) rc = 1;
        }
    }
    if (rc != 0) {
        for (int m = 0; m < NMODES; m++)
            free(us[m]);
        agmm_bench_sets_teardown(&t, &g_sets);
        agmm_bench_cmp_teardown(&g_cmp);
        agmm_tool_teardown(&t);
        return rc;
    }
    agmm_bench_peak_t pk;
    rc = agmm_bench_peak_measure(&t, &pk);
    if (rc == 0 && t.rank == 0 && !cli->json) {
        agmm_tool_describe(cli, world, t.plan, stdout);
        agmm_bench_peak_text(&pk, cli->dtype);
        printf("rounds: %d timed + %d warmup per mode, modes alternate\n",
               cli->rounds, cli->warmup);
        fflush(stdout);
    }
    agmm_progress_t pg;
    int done = 0; /* timed rounds finished in every mode */
    agmm_progress_begin(&pg, t.rank, cli->warmup + cli->rounds,
                        "bench round (warmup first)");
    for (int i = 0; i < cli->warmup + cli->rounds && rc == 0; i++) {
        if (agmm_tool_stop) { /* SIGINT/SIGTERM: the launcher ends the run */
            rc = 1;
            break;
        }
        agmm_progress_step(&pg, i);
        /* --trace records the timed rounds of both modes (the library
         * caps the memory and counts what it drops). */
        if (i == cli->warmup) {
            int64_t traced = (int64_t)cli->rounds * NMODES;
            rc = agmm_tool_trace_begin(&t, traced < (1 << 20) ? (int)traced
                                                              : 1 << 20);
        }
        for (int m = 0; m < NMODES && rc == 0; m++) {
            if (!on[m]) continue;
            double s = timed_round(&t, m, i - cli->warmup);
            if (s < 0)
                rc = 1;
            else if (i >= cli->warmup)
                us[m][i - cli->warmup] = s * 1e6;
        }
        if (rc == 0 && i >= cli->warmup) done = i - cli->warmup + 1;
    }
    agmm_progress_clear(&pg);
    if (rc == 0) rc = agmm_tool_trace_end(&t);
    /* Without comm-only among the modes, 3 untimed-in-the-table comm-only
     * rounds say whether there is anything to overlap (their best, ms). */
    double comm_ms = 0;
    for (int i = 0; i < 3 && rc == 0 && !on[M_COMM_ONLY] && on[M_FUSED]; i++) {
        double sec = timed_round(&t, M_COMM_ONLY, i);
        if (sec < 0)
            rc = 1;
        else if (comm_ms == 0 || sec * 1e3 < comm_ms)
            comm_ms = sec * 1e3;
    }
    t.plan = g_sets.plan[0]; /* auto's decision: the first set's plan */
    agmm_schedule_info_t ai;
    if (rc == 0 && agmm_plan_schedule_info(t.plan, &ai) != AGMM_OK) rc = 1;
    /* Stopped by SIGINT/SIGTERM (the launcher aborted the world): the text
     * statistics of the rounds done (--json prints the failure object). */
    int partial = rc != 0 && t.rank == 0 && agmm_tool_stopped() && !cli->json &&
                  done > 0 && agmm_plan_schedule_info(t.plan, &ai) == AGMM_OK;
    int n = rc == 0 ? cli->rounds : done;
    if (partial)
        printf("interrupted: statistics of the %d timed round%s done (of %d)\n",
               done, done == 1 ? "" : "s", cli->rounds);
    if ((rc == 0 || partial) && t.rank == 0) {
        /* Rows per round: the mean flops of the n timed rounds (rates are
         * then over the mean round, rate_us). */
        double flop = agmm_tool_flop_per_rank(cli), mfrac = 0;
        for (int i = 0; i < n && cli->rows_per_round_count > 0; i++)
            for (int r = 0; r < cli->ranks; r++)
                mfrac += (double)agmm_tool_round_rows(cli, i, r) /
                         ((double)cli->m_total * n);
        if (cli->rows_per_round_count > 0) flop *= mfrac;
        ratios_t pr = agmm_bench_paired_ratios(us, on, n); /* before sorting */
        stats_t st[NMODES] = {{0, 0, 0, 0, 0}};
        double med[NMODES] = {0};
        double *sorted[NMODES] = {0}; /* us[] stays in round order */
        for (int m = 0; m < NMODES; m++)
            if (on[m]) {
                sorted[m] = malloc(sizeof(double) * (size_t)n);
                if (sorted[m])
                    memcpy(sorted[m], us[m], sizeof(double) * (size_t)n);
                st[m] = agmm_bench_summarize(sorted[m] ? sorted[m] : us[m], n);
                med[m] = st[m].median;
            }
        for (int m = 0; m < NMODES; m++)
            free(sorted[m]);
        ratios_t r = agmm_bench_ratios_of(med, on);
        if (cli->json)
            agmm_bench_print_json(&t, world, st, on, r, pr, &ai, flop, &pk, us);
        else
            agmm_bench_print_text(
                &t, st, on, r, pr, &ai, flop, &pk,
                on[M_COMM_ONLY] ? st[M_COMM_ONLY].median * 1e-3 : comm_ms);
        if (rc == 0) agmm_tool_trace_print(&t, 0);
        if (cli->verbose && on[M_AUTO])
            fprintf(stderr, "agmm: schedule auto: %s %s (%s)\n",
                    ai.decided ? "picked" : "ran",
                    agmm_schedule_name(ai.decided ? ai.pick : ai.last),
                    ai.reason);
        fflush(stdout);
    }
    for (int m = 0; m < NMODES; m++)
        free(us[m]);
    if (rc == 0) {
        agmm_bench_sets_teardown(&t, &g_sets);
        agmm_bench_cmp_teardown(&g_cmp);
        agmm_tool_teardown(&t);
    }
    return rc;
}
