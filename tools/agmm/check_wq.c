/* `agmm run`'s check of a quantized-weight round: see check_wq.h. The
 * reference is computed here in double, apart from the library's engine:
 * every rank's A regenerated from the seeds, the weight's plain layout
 * (this rank's own for ag-gemm; gemm-rs / gemm-ar: each rank's k part made
 * and quantized again as that rank made it) dequantized value by value
 * with agmm_wq_ref_value. */
#include "check_wq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check/wq_ref.h"
#include "epilogue_check.h"
#include "inputs.h"

/* The dequantized weight W [K, n] (double) and, per element, the bound's
 * |s| (|q - z| + 2|z| + 16 + O), from the rank parts (O = 256 for int4:
 * check_wq.h). */
typedef struct wq_ref {
    int64_t K, n;
    double *w, *mag;
} wq_ref_t;

/* Rows [k0, k0 + kp) of the reference weight from one part's plain layout. */
static void add_part(const agmm_cli_t *cli, wq_ref_t *r, int64_t k0, int64_t kp,
                     const void *q, const float *s, const uint8_t *z)
{
    agmm_wq_desc_t d = {.k = kp,
                        .n = r->n,
                        .bits = agmm_tool_wq_bits(cli),
                        .group = cli->group_size,
                        .symmetric = !cli->zero_point,
                        .q = q,
                        .scales = s,
                        .zeros = cli->zero_point ? z : NULL};
    int64_t G = cli->group_size > 0 ? cli->group_size : kp;
    /* O: int4's offset; with --a-quant int8 also int8 symmetric's (the
     * A8 kernels multiply q + 128 and take 128 x the sum of a_q off) */
    double off =
        d.bits == 4 || (cli->a_quant == AGMM_AQUANT_INT8 && !cli->zero_point)
            ? 2.0 * AGMM_WQ_U_OFFSET_BOUND
            : 0;
    for (int64_t kk = 0; kk < kp; kk++)
        for (int64_t j = 0; j < r->n; j++) {
            int64_t g = (kk / G) * r->n + j;
            double v = agmm_wq_ref_value(&d, kk, j);
            double zz = cli->zero_point ? (double)z[g] : 0;
            r->w[(k0 + kk) * r->n + j] = v;
            r->mag[(k0 + kk) * r->n + j] =
                fabs(v) + fabs((double)s[g]) * (2 * zz + 16 + off);
        }
}

/* Weight i's reference weight: ag-gemm this rank's own; gemm-rs, gemm-ar
 * every rank's part, made again. 0 or 1. */
static int ref_weight(const agmm_tool_rank_t *t, int i, int64_t n, wq_ref_t *r)
{
    const agmm_cli_t *cli = t->cli;
    r->K = cli->k;
    r->n = n;
    r->w = calloc((size_t)(r->K * n) + 1, sizeof(double));
    r->mag = calloc((size_t)(r->K * n) + 1, sizeof(double));
    if (!r->w || !r->mag) return 1;
    if (!agmm_tool_split_k(cli)) {
        add_part(cli, r, 0, cli->k, t->ws[i], t->w_scales[i], t->w_zeros[i]);
        return 0;
    }
    int bits = agmm_tool_wq_bits(cli), rc = 0;
    for (int p = 0, k0 = 0; p < cli->ranks && rc == 0; p++) {
        int64_t kp = agmm_tool_k_part(cli, p);
        int64_t ns = agmm_inputs_wq_groups(kp, n, cli->group_size);
        void *q = malloc(agmm_inputs_wq_bytes(kp, n, bits) + 1);
        float *s = malloc((size_t)ns * sizeof(float) + 1);
        uint8_t *z = malloc((size_t)ns + 1);
        if (!q || !s || !z ||
            agmm_inputs_fill_wq(
                cli->seed, AGMM_STREAM_W, agmm_tool_w_id(cli, p), kp, n, bits,
                cli->group_size, cli->zero_point, q, s, z) != AGMM_OK)
            rc = 1;
        else
            add_part(cli, r, k0, kp, q, s, z);
        k0 += (int)kp;
        free(q);
        free(s);
        free(z);
    }
    return rc;
}

/* The round's A as fp32 [M, K] (exact: every input dtype widens exactly)
 * and its rows: ag-gemm every rank's rows of the round in rank order;
 * gemm-rs, gemm-ar the first M rows of every rank's k part side by side. */
static float *round_a(const agmm_tool_rank_t *t, int round, int64_t *M)
{
    const agmm_cli_t *cli = t->cli;
    int split = agmm_tool_split_k(cli);
    int64_t row0, rows;
    *M = 0;
    if (split)
        agmm_tool_round_rs_rows(cli, round, t->rank, M, &row0, &rows);
    else
        for (int p = 0; p < cli->ranks; p++)
            *M += agmm_tool_round_rows(cli, round, p);
    int64_t K = cli->k;
    float *a = malloc(sizeof(float) * (size_t)(*M * K) + 1);
    for (int p = 0, r0 = 0, k0 = 0; a && p < cli->ranks; p++) {
        int64_t el = agmm_tool_a_elems(cli, p);
        float *f = malloc(sizeof(float) * (size_t)el + 1);
        void *x = malloc(4 * (size_t)el + 1);
        int ok = f && x &&
                 agmm_inputs_fill(cli->seed + (uint64_t)round, AGMM_STREAM_A, p,
                                  cli->dtype, x, el) == AGMM_OK &&
                 agmm_convert_to_fp32(cli->dtype, x, f, (size_t)el) == AGMM_OK;
        if (ok && split) { /* [m_total, kp]: the first M rows */
            int64_t kp = agmm_tool_k_part(cli, p);
            for (int64_t i = 0; i < *M; i++)
                memcpy(a + i * K + k0, f + i * kp, sizeof(float) * (size_t)kp);
            k0 += (int)kp;
        } else if (ok) { /* [m_local[p], K]: the round's first rows */
            int64_t rp = agmm_tool_round_rows(cli, round, p);
            memcpy(a + r0 * K, f, sizeof(float) * (size_t)(rp * K));
            r0 += (int)rp;
        }
        free(f);
        free(x);
        if (!ok) {
            free(a);
            a = NULL;
        }
    }
    return a;
}

/* The round's A [M, K] in double as the plan's GEMM multiplies it: a
 * exactly, or with --a-quant int8 quantized per row as the library does
 * (check/wq_ref.h), over the whole row (ag-gemm) or each rank's k part
 * (gemm-rs, gemm-ar: each rank quantizes its own part). */
static double *round_a_as_used(const agmm_tool_rank_t *t, const float *a,
                               int64_t M)
{
    const agmm_cli_t *cli = t->cli;
    int64_t K = cli->k;
    double *ad = malloc(sizeof(double) * (size_t)(M * K) + 1);
    if (!ad) return NULL;
    if (cli->a_quant != AGMM_AQUANT_INT8) {
        for (int64_t e = 0; e < M * K; e++)
            ad[e] = a[e];
        return ad;
    }
    if (!agmm_tool_split_k(cli)) {
        agmm_wq_ref_quantize_a(M, K, a, K, ad, K);
        return ad;
    }
    for (int p = 0, k0 = 0; p < cli->ranks; p++) {
        int64_t kp = agmm_tool_k_part(cli, p);
        agmm_wq_ref_quantize_a(M, kp, a + k0, K, ad + k0, K);
        k0 += (int)kp;
    }
    return ad;
}

/* The bf16 rounding of the weight's values where the plan's GEMM
 * multiplies bf16 panels of them (check_wq.h), else 0. A rank without a
 * k part (gemm-rs, gemm-ar: no "wq:" impl) sums the others' partials: it
 * allows the rounding wherever A is bf16. */
static double panel_rounding(const agmm_tool_rank_t *t)
{
    agmm_gemm_info_t g;
    if (!t->plan || agmm_plan_gemm_info(t->plan, &g) != AGMM_OK) return 0;
    int bf16 =
        strstr(g.impl, "bf16 panels") != NULL ||
        (strncmp(g.impl, "wq:", 3) != 0 && t->cli->dtype == AGMM_DTYPE_BF16);
    return bf16 ? 0x1p-8 + 0x1p-23 : 0;
}

int agmm_tool_check_wq(const agmm_tool_rank_t *t, int round,
                       double *max_abs_diff, int64_t *mismatches,
                       int64_t *first_bad, int *bad_weight, double *worst)
{
    const agmm_cli_t *cli = t->cli;
    *max_abs_diff = 0;
    *mismatches = 0;
    *first_bad = -1;
    *bad_weight = 0;
    *worst = 0;
    int64_t M, row0 = 0, rows;
    float *af = round_a(t, round, &M);
    double *a = af ? round_a_as_used(t, af, M) : NULL;
    free(af);
    rows = M;
    if (cli->op == AGMM_OP_GEMM_RS)
        agmm_tool_round_rs_rows(cli, round, t->rank, &M, &row0, &rows);
    int nw = cli->n_count > 1 ? cli->n_count : 1, rc = a ? 0 : 1;
    int epi = agmm_tool_has_epilogue(cli);
    int64_t K = cli->k, G = cli->group_size > 0 ? cli->group_size : K;
    double nn = 2.0 * (double)(G > K ? G : K) + 16 + cli->ranks;
    double gamma = nn * 0x1p-24 / (1 - nn * 0x1p-24);
    double wround = panel_rounding(t);
    for (int i = 0; i < nw && rc == 0; i++) {
        int64_t n = nw > 1 ? cli->n_list[i] : cli->n;
        size_t cells = (size_t)(rows * n) + 1;
        wq_ref_t r = {0, 0, NULL, NULL};
        float *ref = malloc(cells * sizeof(float));
        float *raw = epi ? malloc(cells * sizeof(float)) : NULL;
        float *pre = epi ? malloc(cells * sizeof(float)) : NULL;
        double *before = malloc(cells * sizeof(double));
        rc = !ref || !before || (epi && (!raw || !pre)) ||
             ref_weight(t, i, n, &r);
        for (int64_t e = 0; rc == 0 && e < rows * n; e++) {
            const double *ai = a + (row0 + e / n) * K;
            double sum = 0, S = 0, W = 0;
            for (int64_t kk = 0; kk < K; kk++) {
                sum += ai[kk] * r.w[kk * n + e % n];
                S += fabs(ai[kk]) * r.mag[kk * n + e % n];
                W += fabs(ai[kk] * r.w[kk * n + e % n]);
            }
            ref[e] = (float)sum;
            before[e] = gamma * S + wround * W + 0x1p-24 * fabs(sum) + 1e-30;
        }
        if (rc == 0 && epi) /* gated: ref packed into [rows, n / 2] */
            rc = agmm_tool_ref_epilogue(t, i, rows, n, ref, raw, pre);
        int64_t nc = agmm_tool_c_cols(cli, n);
        const float *c = rc == 0 ? agmm_tool_out_f32(t, i, rows * nc) : NULL;
        for (int64_t e = 0; rc == 0 && e < rows * nc; e++) {
            double d = fabs((double)c[e] - (double)ref[e]);
            double b =
                epi ? agmm_tool_epi_bound_each(cli, before, pre, ref, e, nc)
                    : before[e];
            if (!(d <= b)) { /* NaN fails */
                if (*mismatches == 0) {
                    *first_bad = e;
                    *bad_weight = i;
                }
                ++*mismatches;
            }
            if (d > *max_abs_diff || d != d) *max_abs_diff = d;
            if (!(d / b <= *worst)) *worst = d / b;
        }
        free(r.w);
        free(r.mag);
        free(ref);
        free(raw);
        free(pre);
        free(before);
    }
    if (rc != 0)
        fprintf(stderr, "agmm: rank %d: could not compute the reference\n",
                t->rank);
    free(a);
    return rc;
}
