/* `agmm run`'s check of an int8 round (check_int8.h). The inputs are
 * regenerated from the seeds and quantized as the ranks did (inputs.c);
 * the references are the exact int8 oracles (agmm_ext.h), whose scales
 * are one per row of A and one per column of W, so a per-tensor scale is
 * repeated over its rows or columns here. */
#include "check_int8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "epilogue_check.h"
#include "inputs.h"

/* q [rows, cols] of stream (seed, kind, id) quantized as the tool does:
 * A (along_cols 0) per row or per tensor, W (along_cols 1) per column or
 * per tensor; *sc the scales, one per row (A) or per column (W). */
static int make_int8(uint64_t seed, int kind, int64_t id, int64_t rows,
                     int64_t cols, int tensor, int along_cols, int8_t **q,
                     float **sc)
{
    int64_t ne = along_cols ? cols : rows;
    *q = malloc((size_t)rows * (size_t)cols + 1);
    *sc = malloc(((size_t)ne + 1) * sizeof(float));
    if (!*q || !*sc) return 1;
    agmm_quant_axis_t axis = tensor       ? AGMM_QUANT_TENSOR
                             : along_cols ? AGMM_QUANT_COLS
                                          : AGMM_QUANT_ROWS;
    if (agmm_inputs_fill_int8(seed, kind, id, rows, cols, axis, *q, *sc) !=
        AGMM_OK)
        return 1;
    for (int64_t i = 1; tensor && i < ne; i++)
        (*sc)[i] = (*sc)[0];
    return 0;
}

/* A fp32 input before quantization: the same stream in fp32. */
static float *make_f32(uint64_t seed, int kind, int64_t id, int64_t n)
{
    float *f = malloc((size_t)n * sizeof(float) + 1);
    if (f &&
        agmm_inputs_fill(seed, kind, id, AGMM_DTYPE_FP32, f, n) != AGMM_OK) {
        free(f);
        return NULL;
    }
    return f;
}

typedef struct counts {
    double max_abs_diff;
    int64_t mismatches, first_bad;
} counts_t;

/* c against ref: element e passes when |c - ref| <= rel * m + abs_, m =
 * mag[e] (NULL: |ref[e]|), or, with an epilogue (raw: the reference
 * product, pre: the value before the activation, else both NULL), the
 * epilogue's bound of that (epilogue_check.h; m then |raw[e]| without
 * mag). NaN fails. */
static void compare(const agmm_cli_t *cli, const float *c, const float *ref,
                    const float *raw, const float *pre, const float *mag,
                    double rel, double abs_, int64_t total, int64_t nc,
                    counts_t *n, agmm_int8_check_t *q)
{
    for (int64_t i = 0; i < total; i++) {
        double d = fabs((double)c[i] - (double)ref[i]);
        double m = mag   ? (double)mag[i]
                   : raw ? fabs((double)raw[i])
                         : fabs((double)ref[i]);
        double bound = rel * m + abs_;
        if (pre && raw && !mag)
            bound =
                agmm_tool_epi_bound_at(cli, rel, abs_, raw, pre, ref, i, nc);
        else if (pre)
            bound = agmm_tool_epi_bound(cli, bound, pre[i], ref[i]);
        if (!(d <= bound)) {
            if (n->first_bad < 0) n->first_bad = i;
            n->mismatches++;
        }
        double ratio = bound > 0 ? d / bound : d > 0 ? INFINITY : 0;
        if (!(ratio <= q->worst)) q->worst = ratio; /* NaN wins */
        if (!(d <= n->max_abs_diff)) n->max_abs_diff = d;
    }
}

/* The quantization error of c against c32 (information only). */
static void quant_error(const float *c, const float *c32, int64_t total,
                        agmm_int8_check_t *q)
{
    for (int64_t i = 0; i < total; i++) {
        double d = (double)c[i] - (double)c32[i], r = (double)c32[i];
        if (fabs(d) > q->q_max_diff) q->q_max_diff = fabs(d);
        if (fabs(r) > q->q_max_ref) q->q_max_ref = fabs(r);
        q->q_sq_diff += d * d;
        q->q_sq_ref += r * r;
    }
}

/* gemm-rs: this rank's rows of C = sum_p A_p @ W_p (gemm-ar: every row). */
static int check_rs(const agmm_tool_rank_t *t, int round, counts_t *cnt,
                    agmm_int8_check_t *q)
{
    const agmm_cli_t *cli = t->cli;
    int P = cli->ranks;
    /* Inputs of every rank's [m_total, K_r]; this round's rows are the
     * first Mc of them. */
    int64_t M = cli->m_total, n = cli->n, Mc, row0, rows;
    agmm_tool_round_rs_rows(cli, round, t->rank, &Mc, &row0, &rows);
    int8_t **a = calloc((size_t)P, sizeof *a),
           **w = calloc((size_t)P, sizeof *w);
    float **as = calloc((size_t)P, sizeof *as),
          **ws = calloc((size_t)P, sizeof *ws);
    float **a32 = calloc((size_t)P, sizeof *a32),
          **w32 = calloc((size_t)P, sizeof *w32);
    int64_t *kl = calloc((size_t)P, sizeof *kl);
    size_t cn = (size_t)rows * (size_t)n + 1;
    float *ref = malloc(cn * sizeof(float)), *mag = calloc(cn, sizeof(float));
    float *part = malloc(cn * sizeof(float)), *c32 = malloc(cn * sizeof(float));
    int epi = agmm_tool_has_epilogue(cli);
    float *pre = epi ? malloc(cn * sizeof(float)) : NULL;
    int rc = a && w && as && ws && a32 && w32 && kl && ref && mag && part &&
                     c32 && (!epi || pre)
                 ? 0
                 : 1;
    uint64_t seed_a = cli->seed + (uint64_t)round;
    for (int p = 0; rc == 0 && p < P; p++) {
        kl[p] = agmm_tool_k_part(cli, p);
        int64_t wid = agmm_tool_w_id(cli, p);
        if (make_int8(seed_a, AGMM_STREAM_A, p, M, kl[p],
                      cli->a_scale == AGMM_SCALE_TENSOR, 0, &a[p], &as[p]) ||
            make_int8(cli->seed, AGMM_STREAM_W, wid, kl[p], n,
                      cli->w_scale == AGMM_SCALE_TENSOR, 1, &w[p], &ws[p]) ||
            !(a32[p] = make_f32(seed_a, AGMM_STREAM_A, p, M * kl[p])) ||
            !(w32[p] = make_f32(cli->seed, AGMM_STREAM_W, wid, kl[p] * n)))
            rc = 1;
    }
    /* The exact sum, and sum_p |partial_p| (each rank's own oracle). */
    if (rc == 0 && agmm_reference_rs_int8(
                       P, (const int8_t *const *)a, (const float *const *)as,
                       (const int8_t *const *)w, (const float *const *)ws, kl,
                       Mc, n, row0, rows, ref) != AGMM_OK)
        rc = 1;
    for (int p = 0; rc == 0 && p < P; p++) {
        if (agmm_reference_rs_int8(
                1, (const int8_t *const *)&a[p], (const float *const *)&as[p],
                (const int8_t *const *)&w[p], (const float *const *)&ws[p],
                &kl[p], Mc, n, row0, rows, part) != AGMM_OK) {
            rc = 1;
            break;
        }
        for (int64_t i = 0; i < rows * n; i++)
            mag[i] += fabsf(part[i]);
    }
    if (rc == 0 && agmm_reference_rs(
                       P, (const void *const *)a32, (const void *const *)w32,
                       kl, Mc, n, AGMM_DTYPE_FP32, row0, rows, c32) != AGMM_OK)
        rc = 1;
    if (rc == 0 && epi &&
        (agmm_tool_ref_epilogue(t, 0, rows, n, ref, NULL, pre) ||
         agmm_tool_ref_epilogue(t, 0, rows, n, c32, NULL, NULL)))
        rc = 1;
    if (rc == 0) {
        const float *c = agmm_tool_out_f32(t, 0, rows * n);
        compare(cli, c, ref, NULL, pre, mag, (double)(P + 3) * 0x1p-24, 0,
                rows * n, n, cnt, q);
        quant_error(c, c32, rows * n, q);
    }
    for (int p = 0; p < P; p++) {
        if (a) free(a[p]);
        if (w) free(w[p]);
        if (as) free(as[p]);
        if (ws) free(ws[p]);
        if (a32) free(a32[p]);
        if (w32) free(w32[p]);
    }
    free(a), free(w), free(as), free(ws), free(a32), free(w32), free(kl);
    free(ref), free(mag), free(part), free(c32), free(pre);
    return rc;
}

/* The gathered rows and their scales handed back: byte for byte this
 * round's rows of every shard and their scales (a per-tensor one
 * repeated). */
static void check_gathered(const agmm_tool_rank_t *t, int8_t *const *sh,
                           float *const *sc, const int64_t *rows, counts_t *cnt)
{
    const agmm_cli_t *cli = t->cli;
    size_t off = 0;
    for (int p = 0; p < cli->ranks; p++) {
        size_t nr = (size_t)rows[p];
        int bad_rows =
            memcmp((const int8_t *)t->gathered + off * (size_t)cli->k, sh[p],
                   nr * (size_t)cli->k) != 0;
        int bad_sc = t->gathered_scale && memcmp(t->gathered_scale + off, sc[p],
                                                 nr * sizeof(float)) != 0;
        if (bad_rows || bad_sc) {
            cnt->mismatches++;
            if (cnt->first_bad < 0) cnt->first_bad = 0;
            fprintf(stderr,
                    "agmm: rank %d: the gathered A differs in rank %d's %s\n",
                    t->rank, p, bad_rows ? "rows" : "row scales");
        }
        off += nr;
    }
}

int agmm_tool_check_int8(const agmm_tool_rank_t *t, int round,
                         double *max_abs_diff, int64_t *mismatches,
                         int64_t *first_bad, int *bad_weight,
                         agmm_int8_check_t *q)
{
    const agmm_cli_t *cli = t->cli;
    counts_t cnt = {0, 0, -1};
    memset(q, 0, sizeof *q);
    *bad_weight = 0;
    int rc = 0;
    if (agmm_tool_split_k(cli)) {
        rc = check_rs(t, round, &cnt, q);
    } else {
        int P = cli->ranks, nw = cli->n_count > 1 ? cli->n_count : 1;
        int8_t **sh = calloc((size_t)P, sizeof *sh);
        float **sc = calloc((size_t)P, sizeof *sc);
        float **f32 = calloc((size_t)P, sizeof *f32);
        int64_t *rows = calloc((size_t)P, sizeof *rows), M = 0;
        size_t cmax = (size_t)cli->m_total * (size_t)cli->n_sum + 1;
        float *ref = malloc(cmax * sizeof(float));
        float *c32 = malloc(cmax * sizeof(float)), *wsc = NULL, *w32 = NULL;
        int epi = agmm_tool_has_epilogue(cli);
        float *pre = epi ? malloc(cmax * sizeof(float)) : NULL;
        float *raw = epi ? malloc(cmax * sizeof(float)) : NULL;
        uint64_t seed_a = cli->seed + (uint64_t)round;
        rc = sh && sc && f32 && rows && ref && c32 && (!epi || (pre && raw))
                 ? 0
                 : 1;
        for (int p = 0; rc == 0 && p < P; p++) {
            rows[p] = agmm_tool_round_rows(cli, round, p);
            M += rows[p];
            if (make_int8(seed_a, AGMM_STREAM_A, p, cli->m_local[p], cli->k,
                          cli->a_scale == AGMM_SCALE_TENSOR, 0, &sh[p],
                          &sc[p]) ||
                !(f32[p] = make_f32(seed_a, AGMM_STREAM_A, p,
                                    cli->m_local[p] * cli->k)))
                rc = 1;
        }
        for (int i = 0; rc == 0 && i < nw && M > 0; i++) {
            int64_t n = nw > 1 ? cli->n_list[i] : cli->n;
            free(wsc);
            free(w32);
            wsc = malloc((size_t)n * sizeof(float) + 1);
            w32 = make_f32(cli->seed, AGMM_STREAM_W,
                           agmm_tool_w_id_i(cli, t->rank, i), cli->k * n);
            if (!wsc || !w32) {
                rc = 1;
                break;
            }
            for (int64_t j = 0; j < n; j++) /* per column, as the oracle */
                wsc[j] =
                    t->w_scales[i][cli->w_scale == AGMM_SCALE_TENSOR ? 0 : j];
            if (agmm_reference_int8(P, (const int8_t *const *)sh,
                                    (const float *const *)sc, rows, cli->k, n,
                                    t->ws[i], wsc, ref) != AGMM_OK ||
                agmm_reference(P, (const void *const *)f32, rows, cli->k, n,
                               AGMM_DTYPE_FP32, w32, c32) != AGMM_OK) {
                rc = 1;
                break;
            }
            if (epi && (agmm_tool_ref_epilogue(t, i, M, n, ref, raw, pre) ||
                        agmm_tool_ref_epilogue(t, i, M, n, c32, NULL, NULL))) {
                rc = 1;
                break;
            }
            int64_t nc = agmm_tool_c_cols(cli, n);
            const float *c = agmm_tool_out_f32(t, i, M * nc);
            int64_t before = cnt.mismatches;
            counts_t one = {cnt.max_abs_diff, 0, -1};
            compare(cli, c, ref, raw, pre, NULL, AGMM_INT8_AG_ULPS * 0x1p-24,
                    AGMM_INT8_AG_ABS, M * nc, nc, &one, q);
            cnt.max_abs_diff = one.max_abs_diff;
            if (one.mismatches && !before) {
                cnt.first_bad = one.first_bad;
                *bad_weight = i;
            }
            cnt.mismatches += one.mismatches;
            quant_error(c, c32, M * nc, q);
        }
        if (rc == 0 && t->gathered) check_gathered(t, sh, sc, rows, &cnt);
        for (int p = 0; p < P; p++) {
            if (sh) free(sh[p]);
            if (sc) free(sc[p]);
            if (f32) free(f32[p]);
        }
        free(sh), free(sc), free(f32), free(rows), free(ref), free(c32);
        free(wsc), free(w32), free(pre), free(raw);
    }
    if (rc != 0)
        fprintf(stderr, "agmm: rank %d: could not compute the reference\n",
                t->rank);
    *max_abs_diff = cnt.max_abs_diff;
    *mismatches = cnt.mismatches;
    *first_bad = cnt.first_bad;
    return rc;
}
