/* `agmm run`'s check of one round (round_check.h): the reference of the
 * round's inputs, regenerated from the seeds as the ranks made them, and
 * every weight's C of this rank compared with it; gemm-rs / gemm-ar
 * against agmm_reference_rs over every rank's A_r and W_r; with the
 * check, ag-gemm's gathered A against the shards. */
#include "round_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check_wq.h"
#include "epilogue_check.h"
#include "inputs.h"

/* FNV-1a of the bytes of C ([rows, n] of the output dtype). */
uint64_t agmm_tool_c_hash(const void *c, int64_t elems, size_t esize)
{
    const unsigned char *b = (const unsigned char *)c;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < (size_t)elems * esize; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* max diff, mismatches and the first bad index of c against ref ([total /
 * nc, nc]). With an epilogue (epilogue_check.h), raw is the reference
 * product (allclose's bound is taken of it) and pre the value before the
 * activation, else both NULL. */
static void compare(const agmm_cli_t *cli, const float *c, const float *ref,
                    const float *raw, const float *pre, int64_t total,
                    int64_t nc, round_result_t *res)
{
    res->max_abs_diff = 0;
    res->mismatches = 0;
    res->first_bad = -1;
    for (int64_t i = 0; i < total; i++) {
        double d = fabs((double)c[i] - (double)ref[i]);
        double bound =
            pre ? agmm_tool_epi_bound_at(cli, RTOL, ATOL, raw, pre, ref, i, nc)
                : ATOL + RTOL * fabs((double)ref[i]);
        if (!(d <= bound)) { /* NaN fails */
            if (res->first_bad < 0) res->first_bad = i;
            res->mismatches++;
        }
        if (d > res->max_abs_diff || d != d) res->max_abs_diff = d;
    }
}

/* gemm-rs: this rank's rows of C (gemm-ar: every row) against
 * agmm_reference_rs over every rank's A_r and W_r, regenerated from the
 * seeds as the ranks made them (this round's rows: the first M of each
 * A_r). first_bad is an index into those rows. */
static int check_round_rs(agmm_tool_rank_t *t, int round, round_result_t *res)
{
    const agmm_cli_t *cli = t->cli;
    int P = cli->ranks;
    size_t es = agmm_dtype_size(cli->dtype);
    void **a = calloc((size_t)P, sizeof *a), **w = calloc((size_t)P, sizeof *w);
    int64_t *kl = calloc((size_t)P, sizeof *kl);
    int64_t M, row0, rows;
    agmm_tool_round_rs_rows(cli, round, t->rank, &M, &row0, &rows);
    float *ref = malloc((size_t)rows * (size_t)cli->n * sizeof(float) + 1);
    int epi = agmm_tool_has_epilogue(cli);
    size_t rn = (size_t)rows * (size_t)cli->n + 1;
    float *pre = epi ? malloc(rn * sizeof(float)) : NULL;
    float *raw = epi ? malloc(rn * sizeof(float)) : NULL;
    int rc = a && w && kl && ref && (!epi || (pre && raw)) ? 0 : 1;
    for (int p = 0; rc == 0 && p < P; p++) {
        kl[p] = agmm_tool_k_part(cli, p);
        a[p] = malloc((size_t)agmm_tool_a_elems(cli, p) * es + 1);
        w[p] = malloc((size_t)kl[p] * (size_t)cli->n * es + 1);
        if (!a[p] || !w[p] ||
            agmm_inputs_fill(cli->seed + (uint64_t)round, AGMM_STREAM_A, p,
                             cli->dtype, a[p],
                             agmm_tool_a_elems(cli, p)) != AGMM_OK ||
            agmm_inputs_fill(cli->seed, AGMM_STREAM_W, agmm_tool_w_id(cli, p),
                             cli->dtype, w[p], kl[p] * cli->n) != AGMM_OK)
            rc = 1;
    }
    if (rc == 0 &&
        agmm_reference_rs(P, (const void *const *)a, (const void *const *)w, kl,
                          M, cli->n, cli->dtype, row0, rows, ref) != AGMM_OK)
        rc = 1;
    if (rc == 0 && epi)
        rc = agmm_tool_ref_epilogue(t, 0, rows, cli->n, ref, raw, pre);
    if (rc == 0)
        compare(cli, agmm_tool_out_f32(t, 0, rows * cli->n), ref, raw, pre,
                rows * cli->n, cli->n, res);
    else
        fprintf(stderr, "agmm: rank %d: could not compute the reference\n",
                t->rank);
    for (int p = 0; p < P; p++) {
        if (a) free(a[p]);
        if (w) free(w[p]);
    }
    free(a);
    free(w);
    free(kl);
    free(ref);
    free(pre);
    free(raw);
    return rc;
}

/* Compare every weight's C with the reference of this round (this round's
 * rows: the first m_rows[p] rows of each shard); fills max diff (over the
 * weights) and mismatches (first_bad: of the first weight that has one,
 * whose index goes to *bad_weight). Returns 0, or 1 if the reference could
 * not be computed. */
int agmm_tool_check_round(agmm_tool_rank_t *t, int round, round_result_t *res,
                          int *bad_weight)
{
    const agmm_cli_t *cli = t->cli;
    *bad_weight = 0;
    if (agmm_tool_wq_bits(cli))
        return agmm_tool_check_wq(t, round, &res->max_abs_diff,
                                  &res->mismatches, &res->first_bad, bad_weight,
                                  &res->q.worst);
    if (cli->dtype == AGMM_DTYPE_INT8)
        return agmm_tool_check_int8(t, round, &res->max_abs_diff,
                                    &res->mismatches, &res->first_bad,
                                    bad_weight, &res->q);
    if (agmm_tool_split_k(cli)) return check_round_rs(t, round, res);
    size_t es = agmm_dtype_size(cli->dtype);
    const void **shards = calloc((size_t)cli->ranks, sizeof *shards);
    int64_t *rows = calloc((size_t)cli->ranks, sizeof *rows), M = 0;
    for (int p = 0; rows && p < cli->ranks; p++) {
        rows[p] = agmm_tool_round_rows(cli, round, p);
        M += rows[p];
    }
    int nw = cli->n_count > 1 ? cli->n_count : 1;
    size_t most = (size_t)cli->m_total * (size_t)cli->n_sum + 1;
    float *ref = malloc(most * sizeof(float));
    int epi = agmm_tool_has_epilogue(cli);
    float *pre = epi ? malloc(most * sizeof(float)) : NULL;
    float *raw = epi ? malloc(most * sizeof(float)) : NULL;
    int rc = shards && ref && rows && (!epi || (pre && raw)) ? 0 : 1;
    for (int p = 0; rc == 0 && p < cli->ranks; p++) {
        void *s = malloc((size_t)cli->m_local[p] * (size_t)cli->k * es + 1);
        shards[p] = s;
        if (!s || agmm_inputs_fill(cli->seed + (uint64_t)round, AGMM_STREAM_A,
                                   p, cli->dtype, s,
                                   cli->m_local[p] * cli->k) != AGMM_OK)
            rc = 1;
    }
    res->max_abs_diff = 0;
    res->mismatches = 0;
    res->first_bad = -1;
    for (int i = 0; rc == 0 && i < nw && M > 0; i++) {
        int64_t n = nw > 1 ? cli->n_list[i] : cli->n;
        round_result_t one;
        if (agmm_reference(cli->ranks, shards, rows, cli->k, n, cli->dtype,
                           t->ws[i], ref) != AGMM_OK) {
            rc = 1;
            break;
        }
        if (epi && agmm_tool_ref_epilogue(t, i, M, n, ref, raw, pre)) {
            rc = 1;
            break;
        }
        int64_t nc = agmm_tool_c_cols(cli, n);
        compare(cli, agmm_tool_out_f32(t, i, M * nc), ref, raw, pre, M * nc, nc,
                &one);
        if (one.max_abs_diff > res->max_abs_diff ||
            one.max_abs_diff != one.max_abs_diff)
            res->max_abs_diff = one.max_abs_diff;
        if (one.mismatches && !res->mismatches) {
            res->first_bad = one.first_bad;
            *bad_weight = i;
        }
        res->mismatches += one.mismatches;
    }
    /* The gathered A handed back: byte for byte this round's shards. */
    size_t row = (size_t)cli->k * es, off = 0;
    for (int p = 0; rc == 0 && t->gathered && p < cli->ranks; p++) {
        if (memcmp((const char *)t->gathered + off, shards[p],
                   (size_t)rows[p] * row)) {
            res->mismatches++;
            if (res->first_bad < 0) res->first_bad = 0;
            fprintf(stderr,
                    "agmm: rank %d: the gathered A differs in rank %d's rows\n",
                    t->rank, p);
        }
        off += (size_t)rows[p] * row;
    }
    if (rc != 0) {
        fprintf(stderr, "agmm: rank %d: could not compute the reference\n",
                t->rank);
    }
    for (int p = 0; shards && p < cli->ranks; p++)
        free((void *)shards[p]);
    free(shards);
    free(rows);
    free(ref);
    free(pre);
    free(raw);
    return rc;
}
