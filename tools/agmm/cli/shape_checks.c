/*
 * The checks of the `agmm` command line on the problem's shapes
 * (options.h): the weights (--n) and --m-local-per-round, --m-local
 * against --ranks, M and the byte counts, --k-local against --op, --ranks
 * and --k, and the library's own check of the plan description the
 * options make (desc.h). Each refusal is one line, "agmm: --option: ...".
 */
#include "options.h"

#include <inttypes.h>
#include <limits.h>

#include "common/log.h"
#include "desc.h"

/* --n N[,N...] (several weights) and --m-local-per-round: 0 or 2 after
 * one error line. Sets n, n_count, n_sum. */
int opt_check_weights(agmm_cli_t *cli, FILE *err)
{
    if (cli->n_count < 1) cli->n_count = 1;
    if (cli->n_count > AGMM_MAX_WEIGHTS) {
        fprintf(err, "agmm: --n: at most %d weights (got %d values)\n",
                AGMM_MAX_WEIGHTS, cli->n_count);
        return 2;
    }
    cli->n_sum = 0;
    for (int i = 0; i < cli->n_count; i++) {
        if (cli->n_list[i] < 1 || cli->n_list[i] > INT_MAX) {
            fprintf(
                err,
                "agmm: --n: %seach value an integer from 1 to %d (got %" PRId64
                ")\n",
                cli->n_list[i] > INT_MAX ? "out of range; " : "", INT_MAX,
                cli->n_list[i]);
            return 2;
        }
        cli->n_sum += cli->n_list[i];
    }
    cli->n = cli->n_list[0];
    if (cli->weight_sets > 1 &&
        (cli->n_count > 1 || cli->rows_per_round_count > 0 || cli->trace_json ||
         cli->trace_svg)) {
        fprintf(err, "agmm: --weight-sets: more than 1 only with one weight "
                     "(--n N), fixed rows (no --m-local-per-round) and no "
                     "--trace/--trace-svg\n");
        return 2;
    }
    if (cli->n_count > 1 && cli->op != AGMM_OP_AG_GEMM) {
        fprintf(err,
                "agmm: --n: several weights (a list) only with --op "
                "ag-gemm; %s takes one N\n",
                agmm_op_name(cli->op));
        return 2;
    }
    return 0;
}

int opt_check_rows(agmm_cli_t *cli, FILE *err)
{
    /* --m-local against --ranks */
    if (cli->m_local_count > 1 && cli->m_local_count != cli->ranks) {
        fprintf(err,
                "agmm: --m-local: %d values given but --ranks is %d (give 1 "
                "value or %d)\n",
                cli->m_local_count, cli->ranks, cli->ranks);
        return 2;
    }
    if (cli->m_local_count <= 1) {
        int64_t v = cli->m_local[0];
        for (int r = 0; r < cli->ranks; r++)
            cli->m_local[r] = v;
    }
    for (int r = cli->ranks; r < AGMM_CLI_MAX_RANKS; r++)
        cli->m_local[r] = 0;

    /* M and byte counts */
    int64_t m = 0;
    int overflow = 0;
    for (int r = 0; r < cli->ranks; r++) {
        if (cli->m_local[r] > INT64_MAX - m) {
            overflow = 1;
            break;
        }
        m += cli->m_local[r];
    }
    if (!overflow && m < 1) {
        fprintf(err, "agmm: --m-local: all shards are empty; at least one row "
                     "is needed\n");
        return 2;
    }
    if (!overflow && m > INT_MAX) { /* CBLAS dimensions are int */
        fprintf(err,
                "agmm: --m-local: the shards add up to %" PRId64
                " rows; at most %d (M is a CBLAS int dimension)\n",
                m, INT_MAX);
        return 2;
    }
    if (!overflow) {
        int64_t t;
        if (opt_mul_i64(m, cli->k, &t) || opt_mul_i64(t, 4, &t) ||
            opt_mul_i64(cli->k, cli->n_sum, &t) || opt_mul_i64(t, 4, &t) ||
            opt_mul_i64(m, cli->n_sum, &t) || opt_mul_i64(t, 4, &t))
            overflow = 1;
    }
    if (overflow) {
        fprintf(err,
                "agmm: --m-local/--k/--n: sizes overflow 64-bit byte counts (M "
                "= sum of --m-local, K = %" PRId64 ", N = %" PRId64 ")\n",
                cli->k, cli->n);
        return 2;
    }
    cli->m_total = m;
    /* Round rows above every rank's --m-local would never be used. */
    int64_t mmax = 0;
    for (int r = 0; r < cli->ranks; r++)
        if (cli->m_local[r] > mmax) mmax = cli->m_local[r];
    for (int i = 0; i < cli->rows_per_round_count; i++)
        if (cli->rows_per_round[i] > mmax) {
            fprintf(err,
                    "agmm: --m-local-per-round: value %d is %" PRId64
                    ", more than the largest --m-local %" PRId64
                    " (each 0..--m-local: the plan is made for --m-local "
                    "rows)\n",
                    i, cli->rows_per_round[i], mmax);
            return 2;
        }

    /* --op gemm-rs / gemm-ar and --k-local */
    if (cli->k_local_count > 0 && cli->op == AGMM_OP_AG_GEMM) {
        fprintf(err, "agmm: --k-local: only with --op gemm-rs or gemm-ar (the "
                     "all-gather + GEMM does not split --k)\n");
        return 2;
    }
    if (cli->k_local_count > 0) {
        if (cli->k_local_count != cli->ranks) {
            fprintf(
                err,
                "agmm: --k-local: %d value%s given but --ranks is %d (give one "
                "value per rank, summing to --k)\n",
                cli->k_local_count, cli->k_local_count == 1 ? "" : "s",
                cli->ranks);
            return 2;
        }
        int64_t sum = 0;
        for (int r = 0; r < cli->ranks; r++) {
            if (cli->k_local[r] > cli->k) {
                fprintf(err,
                        "agmm: --k-local: value %d is %" PRId64
                        ", more than --k %" PRId64
                        " (each 0..--k, summing to --k)\n",
                        r, cli->k_local[r], cli->k);
                return 2;
            }
            sum += cli->k_local[r];
        }
        if (sum != cli->k) {
            fprintf(err,
                    "agmm: --k-local: the values add up to %" PRId64
                    " but --k is %" PRId64 " (they must sum to --k)\n",
                    sum, cli->k);
            return 2;
        }
    }
    return 0;
}

int opt_check_plan(const agmm_cli_t *cli, FILE *err)
{
    /* The library's own check of the plan, quietly (it would print its
     * own line), once the cores are known and before any warning: what it
     * still refuses here is the size of the whole booking (over 2^62
     * bytes per rank, engine included). */
    agmm_plan_desc_t d;
    agmm_tool_desc(cli, &d);
    agmm_log_mute(1);
    agmm_status_t st = agmm_plan_desc_check(&d);
    agmm_log_mute(0);
    if (st != AGMM_OK) {
        fprintf(err,
                st == AGMM_ERR_TOO_LARGE
                    ? "agmm: --m-local/--k/--n: the plan would book more than "
                      "2^62 bytes per rank (M = %" PRId64 ", K = %" PRId64
                      ", N = %" PRId64 ")\n"
                    : "agmm: --m-local/--k/--n: the library refuses the plan "
                      "(M = %" PRId64 ", K = %" PRId64 ", N = %" PRId64 ")\n",
                cli->m_total, cli->k, cli->n_sum);
        return 2;
    }
    return 0;
}
