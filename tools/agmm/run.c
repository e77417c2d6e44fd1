/* `agmm run`: run the operation (--schedule, default auto) for --rounds rounds
 * with new inputs every round and check every rank's output of every round
 * (round_check.c) against the reference (allclose rtol 1e-2, atol 1e-2;
 * int8: against the exact int8 oracles within a few fp32 roundings,
 * check_int8.c; a quantized weight: against the exactly dequantized one,
 * check_wq.c); gemm-ar: also that every rank's C (the round's rows:
 * --m-local-per-round) is the same bytes (a hash compared over the
 * ranks). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check_int8.h"
#include "check_wq.h" /* AGMM_WQ_BOUND_TEXT */
#include "progress.h"
#include "report.h"
#include "round_check.h"
#include "tool.h"

/* int8: the bound in words ("4*2^-24*|ref|+1e-30"; with an epilogue, of
 * the value before it, and epilogue_check.h adds its allowance), into
 * buf[INT8_BOUND_LEN]. */
enum { INT8_BOUND_LEN = 96 };
static const char *int8_bound(const agmm_cli_t *cli, char *buf)
{
    const char *epi = agmm_tool_has_epilogue(cli)
                          ? " before the epilogue, + its allowance"
                          : "";
    if (agmm_tool_split_k(cli))
        snprintf(buf, INT8_BOUND_LEN, "%d*2^-24*sum_r|partial_r|%s",
                 cli->ranks + 3, epi);
    else
        snprintf(buf, INT8_BOUND_LEN, "%d*2^-24*|ref|+%g%s", AGMM_INT8_AG_ULPS,
                 AGMM_INT8_AG_ABS, epi);
    return buf;
}

/* int8's quantization error: max |c - c32| / max |c32|, and the relative
 * Frobenius norm ||c - c32|| / ||c32|| (0 where C32 is all zero). */
static double quant_max_rel(const agmm_int8_check_t *q)
{
    return q->q_max_ref > 0 ? q->q_max_diff / q->q_max_ref : 0;
}
static double quant_rel_fro(const agmm_int8_check_t *q)
{
    return q->q_sq_ref > 0 ? sqrt(q->q_sq_diff / q->q_sq_ref) : 0;
}

static void json_int8(FILE *rj, const agmm_cli_t *cli,
                      const agmm_int8_check_t *q)
{
    char b[INT8_BOUND_LEN];
    fprintf(rj,
            ",\"bound\":\"|c-ref|<=%s\",\"worst_diff_over_bound\":%.6g,"
            "\"quant_max_rel\":%.6g,\"quant_rel_fro\":%.6g",
            int8_bound(cli, b), q->worst, quant_max_rel(q), quant_rel_fro(q));
}

static void text_int8(const agmm_cli_t *cli, double maxdiff,
                      const agmm_int8_check_t *q, int same_c, int pass)
{
    char b[INT8_BOUND_LEN];
    printf("; check: max |diff| %.3g over %d %s against the exact int8 "
           "reference, |c - ref| <= %s (worst |diff|/bound %.3g)%s %s; "
           "quantization error vs the fp32 inputs (not checked): max "
           "|diff|/max|C| %.3g, rel. Frobenius %.3g\n",
           maxdiff, cli->ranks, cli->ranks == 1 ? "rank" : "ranks",
           int8_bound(cli, b), q->worst,
           same_c ? ", C the same bytes on every rank" : "",
           pass ? "PASS" : "FAIL", quant_max_rel(q), quant_rel_fro(q));
}

int agmm_tool_run(agmm_world_t *world, const agmm_cli_t *cli)
{
    agmm_tool_rank_t t;
    int rc = agmm_tool_setup(world, cli, &t);
    if (rc == 0) rc = agmm_tool_trace_begin(&t, cli->rounds);
    if (rc != 0) {
        agmm_tool_teardown(&t);
        return rc;
    }
    int P = cli->ranks, failed = 0;
    round_result_t *all = calloc((size_t)P, sizeof *all);
    if (!all) {
        agmm_tool_teardown(&t);
        return 1;
    }
    if (t.rank == 0 && !cli->json)
        agmm_tool_describe(cli, world, t.plan, stdout);
    /* --json: rank 0 collects the rounds and prints one complete object at
     * the end (a run that fails before prints the failure object instead). */
    char *rounds_json = NULL;
    size_t rounds_json_len = 0;
    FILE *rj = t.rank == 0 && cli->json
                   ? open_memstream(&rounds_json, &rounds_json_len)
                   : NULL;
    if (t.rank == 0 && cli->json && !rj) rc = 1;
    int first_bad = -1; /* the first rank whose check failed */
    double flop = agmm_tool_flop_per_rank(cli);

    /* Warmup rounds run first, with their own inputs, unreported. */
    agmm_run_args_t args;
    for (int i = 0; i < cli->warmup && rc == 0; i++) {
        if ((rc = agmm_tool_fill_shard(&t, -1 - i)) != 0) break;
        agmm_tool_round_args(&t, AGMM_SCHEDULE_FUSED, -1 - i, &args);
        if (agmm_plan_run_args(t.plan, &args) != AGMM_OK) rc = 1;
    }
    agmm_progress_t pg;
    agmm_progress_begin(&pg, t.rank, cli->rounds, "round");
    for (int round = 0; round < cli->rounds && rc == 0; round++) {
        round_result_t res = {.first_bad = -1};
        if (agmm_tool_stop) { /* SIGINT/SIGTERM: the launcher ends the run */
            rc = 1;
            break;
        }
        agmm_progress_step(&pg, round);
        if ((rc = agmm_tool_fill_shard(&t, round)) != 0) break;
        if (agmm_world_barrier(world, 0) != AGMM_OK) {
            rc = 1;
            break;
        }
        agmm_tool_round_args(&t, cli->schedule, round, &args);
        double t0 = agmm_tool_now();
        if (agmm_plan_run_args(t.plan, &args) != AGMM_OK) {
            rc = 1;
            break;
        }
        res.seconds = agmm_tool_now() - t0;
        int64_t m_round = agmm_plan_rows(t.plan);
        /* What ran: the schedule asked for, or what auto chose. */
        agmm_schedule_t ran = cli->schedule;
        agmm_schedule_info_t ai;
        if (cli->schedule == AGMM_SCHEDULE_AUTO) {
            if (agmm_plan_schedule_info(t.plan, &ai) != AGMM_OK) {
                rc = 1;
                break;
            }
            ran = ai.last;
            if (t.rank == 0 && cli->verbose)
                fprintf(stderr, "agmm: round %d: schedule auto ran %s: %s\n",
                        round + 1, agmm_schedule_name(ran), ai.reason);
        }
        int bad_weight = 0;
        if (cli->check &&
            agmm_tool_check_round(&t, round, &res, &bad_weight) != 0) {
            res.mismatches = -1; /* could not check: counts as failed */
        }
        res.bad_weight = bad_weight;
        int same_c = cli->check && cli->op == AGMM_OP_GEMM_AR;
        if (same_c)
            res.c_hash =
                agmm_tool_c_hash(t.c, m_round * cli->n, /* the round's rows */
                                 agmm_dtype_size(cli->out_dtype));
        if (agmm_world_allgather(world, &res, all, sizeof res) != AGMM_OK) {
            rc = 1;
            break;
        }
        int differs = -1; /* gemm-ar: the first rank whose C is not rank 0's */
        for (int p = 1; same_c && p < P && differs < 0; p++)
            if (all[p].c_hash != all[0].c_hash) differs = p;
        failed |= differs >= 0;
        if (t.rank != 0) {
            for (int p = 0; p < P; p++)
                failed |= all[p].mismatches != 0;
            continue;
        }
        double slowest = 0, maxdiff = 0;
        int bad_rank = -1;
        agmm_int8_check_t q = {0, 0, 0, 0, 0}; /* int8: over the ranks */
        for (int p = 0; p < P; p++) {
            if (!(all[p].q.worst <= q.worst)) q.worst = all[p].q.worst;
            if (all[p].q.q_max_diff > q.q_max_diff)
                q.q_max_diff = all[p].q.q_max_diff;
            if (all[p].q.q_max_ref > q.q_max_ref)
                q.q_max_ref = all[p].q.q_max_ref;
            q.q_sq_diff += all[p].q.q_sq_diff;
            q.q_sq_ref += all[p].q.q_sq_ref;
            if (all[p].seconds > slowest) slowest = all[p].seconds;
            if (all[p].max_abs_diff > maxdiff ||
                all[p].max_abs_diff != all[p].max_abs_diff)
                maxdiff = all[p].max_abs_diff;
            if (all[p].mismatches != 0 && bad_rank < 0) bad_rank = p;
        }
        if (bad_rank < 0) bad_rank = differs;
        failed |= bad_rank >= 0;
        if (first_bad < 0) first_bad = bad_rank;
        agmm_progress_clear(&pg);
        if (cli->json) {
            fprintf(rj,
                    "%s{\"round\":%d,\"schedule\":\"%s\",\"time_us\":%.1f,"
                    "\"gflops\":%.2f",
                    round ? "," : "", round + 1, agmm_schedule_name(ran),
                    slowest * 1e6, flop / slowest * 1e-9);
            if (cli->rows_per_round_count > 0)
                fprintf(rj, ",\"m\":%lld", (long long)m_round);
            if (cli->check)
                fprintf(rj, ",\"max_abs_diff\":%.6g,\"pass\":%s", maxdiff,
                        bad_rank < 0 ? "true" : "false");
            if (cli->check && cli->dtype == AGMM_DTYPE_INT8)
                json_int8(rj, cli, &q);
            if (cli->check && agmm_tool_wq_bits(cli))
                fprintf(rj,
                        ",\"bound\":\"|c-ref|<=%s\",\"worst_diff_over_bound\":"
                        "%.6g",
                        AGMM_WQ_BOUND_TEXT, q.worst);
            fprintf(rj, "}");
            continue;
        }
        printf("round %d: %s%s, %.3f ms (slowest rank), %.1f %s per rank",
               round + 1, agmm_schedule_name(ran),
               cli->schedule == AGMM_SCHEDULE_AUTO ? " (auto)" : "",
               slowest * 1e3,
               flop * (double)m_round / (double)cli->m_total / slowest * 1e-9,
               cli->dtype == AGMM_DTYPE_INT8 ? "GOP/s" : "GFLOP/s");
        if (cli->rows_per_round_count > 0)
            printf(", M=%lld", (long long)m_round);
        if (cli->verbose) {
            printf(" [");
            for (int p = 0; p < P; p++)
                printf("%srank %d %.3f ms", p ? ", " : "", p,
                       all[p].seconds * 1e3);
            printf("]");
        }
        if (!cli->check) {
            printf(", not checked (--no-check)\n");
            continue;
        }
        if (cli->dtype == AGMM_DTYPE_INT8)
            text_int8(cli, maxdiff, &q, same_c && differs < 0, bad_rank < 0);
        else if (agmm_tool_wq_bits(cli))
            printf("; check: max |diff| %.3g over %d %s against the "
                   "dequantized %s weight, |c - ref| <= %s%s (worst "
                   "|diff|/bound %.3g)%s %s\n",
                   maxdiff, P, P == 1 ? "rank" : "ranks",
                   agmm_wdtype_name(cli->weight_dtype), AGMM_WQ_BOUND_TEXT,
                   agmm_tool_has_epilogue(cli)
                       ? " before the epilogue, + its allowance"
                       : "",
                   q.worst,
                   same_c && differs < 0 ? ", C the same bytes on every rank"
                                         : "",
                   bad_rank < 0 ? "PASS" : "FAIL");
        else
            printf("; check: max |diff| %.3g over %d %s, allclose(rtol=%g, "
                   "atol=%g)%s%s %s\n",
                   maxdiff, P, P == 1 ? "rank" : "ranks", RTOL, ATOL,
                   agmm_tool_has_epilogue(cli)
                       ? " before the epilogue, + its allowance"
                       : "",
                   same_c && differs < 0 ? ", C the same bytes on every rank"
                                         : "",
                   bad_rank < 0 ? "PASS" : "FAIL");
        if (differs >= 0)
            printf("  rank %d: C is not the same bytes as rank 0's\n", differs);
        for (int p = 0; p < P; p++) {
            if (all[p].mismatches == 0) continue;
            if (all[p].mismatches < 0) {
                printf("  rank %d: the reference could not be computed\n", p);
                continue;
            }
            int64_t i = all[p].first_bad, row0 = 0, mrs = 0, rows_p = 0;
            if (cli->op == AGMM_OP_GEMM_RS) /* rank p's rows of the round */
                agmm_tool_round_rs_rows(cli, round, p, &mrs, &row0, &rows_p);
            int64_t n = agmm_tool_c_cols(cli, cli->n); /* several weights:
                                                        * the first that
                                                        * differs */
            if (cli->n_count > 1) {
                n = agmm_tool_c_cols(cli, cli->n_list[all[p].bad_weight]);
                printf("  rank %d, weight %d:", p, all[p].bad_weight);
            } else {
                printf("  rank %d:", p);
            }
            printf(" %lld of %lld outputs differ; first at row %lld, column "
                   "%lld\n",
                   (long long)all[p].mismatches,
                   (long long)((cli->op == AGMM_OP_GEMM_RS ? rows_p : m_round) *
                               agmm_tool_c_cols(cli, cli->op == AGMM_OP_GEMM_RS
                                                         ? cli->n
                                                         : cli->n_sum)),
                   (long long)(row0 + i / n), (long long)(i % n));
        }
    }
    agmm_progress_clear(&pg);
    /* The trace is written whatever the check found (it may explain it). */
    if (rc == 0) rc = agmm_tool_trace_end(&t);
    if (rc == 0) agmm_tool_trace_print(&t, 1);
    if (rj) fclose(rj);
    if (t.rank == 0 && cli->json && rc == 0) {
        agmm_schedule_info_t ai;
        printf("{\"command\":\"run\",\"ok\":%s,", failed ? "false" : "true");
        if (failed)
            printf("\"error\":\"check failed\",\"failed_rank\":%d,", first_bad);
        agmm_tool_json_header(cli, agmm_world_transport_name(world));
        agmm_tool_json_gemm(t.plan);
        printf(",\"rounds\":[%s]", rounds_json ? rounds_json : "");
        printf(",\"schedule\":{\"requested\":\"%s\"",
               agmm_schedule_name(cli->schedule));
        if (cli->schedule == AGMM_SCHEDULE_AUTO &&
            agmm_plan_schedule_info(t.plan, &ai) == AGMM_OK)
            printf(",\"last\":\"%s\",\"decided\":%s,\"pick\":%s%s%s,"
                   "\"reason\":\"%s\"",
                   agmm_schedule_name(ai.last), ai.decided ? "true" : "false",
                   ai.decided ? "\"" : "",
                   ai.decided ? agmm_schedule_name(ai.pick) : "null",
                   ai.decided ? "\"" : "", ai.reason);
        printf("},\"checked\":%s,\"pass\":%s%s}\n",
               cli->check ? "true" : "false", failed ? "false" : "true",
               t.trace_json ? t.trace_json : "");
        agmm_tool_report()->printed = 1;
    }
    free(rounds_json);
    fflush(stdout);
    free(all);
    if (rc == 0 && failed) rc = 1;
    /* After a failure the world is aborted: skip the collective destroy's
     * barrier wait by exiting; the launcher frees everything. */
    if (rc == 0) agmm_tool_teardown(&t);
    return rc;
}
