/* The model's layout of a plan (rows, tiles, k parts, worker shares: what
 * ops/common/schedule.c and the plan compute) and the cost of one step (a
 * GEMM call, a copy, a wire) from the machine description (model.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/wq/bf16w.h"
#include "gemm/wq/wq.h"
#include "model/model.h"

double mdl_rate(const agmm_model_machine_t *m, int64_t rows)
{
    const agmm_model_rate_t *r = m->rates;
    int n = m->n_rates;
    if (rows <= r[0].rows) return r[0].gflops;
    if (rows >= r[n - 1].rows) return r[n - 1].gflops;
    int i = 1;
    while (r[i].rows < rows)
        i++;
    double x = log((double)rows), x0 = log((double)r[i - 1].rows),
           x1 = log((double)r[i].rows);
    double f = (x - x0) / (x1 - x0);
    return r[i - 1].gflops + f * (r[i].gflops - r[i - 1].gflops);
}

double mdl_weight_bytes(const agmm_plan_desc_t *d, int64_t k, int64_t cols)
{
    if (k < 1 || cols < 1) return 0;
    double elems = (double)k * (double)cols;
    if (d->weight_dtype != AGMM_WDTYPE_SAME) {
        int bits = d->weight_dtype == AGMM_WDTYPE_INT4 ? 4 : 8;
        size_t b = agmm_wq_packed_bytes(k, cols, bits, d->group_size);
        return b > 0 ? (double)b : elems * bits / 8; /* a bad geometry */
    }
    if (d->gemm_engine == AGMM_GEMM_ENGINE_WQ && d->dtype == AGMM_DTYPE_BF16)
        return (double)agmm_bf16w_packed_bytes(k, cols);
    int f32 =
        d->dtype == AGMM_DTYPE_FP32 ||
        (d->gemm_path == AGMM_GEMM_PATH_F32 && d->dtype != AGMM_DTYPE_INT8);
    return elems * (f32 ? 4.0 : (double)agmm_dtype_size(d->dtype));
}

double mdl_gemm_s(const mdl_layout_t *L, const mdl_share_t *s, int64_t rows,
                  int64_t k)
{
    if (rows <= 0 || !s->busy) return 0;
    double rate = mdl_rate(L->m, rows) * 1e9, t = 0;
    double dram = L->m->dram_gbs * 1e9;
    for (int i = 0; i < s->nseg; i++) {
        double c = L->m->call_us * 1e-6 + 2.0 * (double)rows *
                                              (double)s->seg_cols[i] *
                                              (double)k / rate;
        /* the weight streams from DRAM: at least its bytes over the rate */
        if (dram > 0)
            c = AGMM_MAX(c, mdl_weight_bytes(L->d, k, s->seg_cols[i]) / dram);
        t += c;
    }
    return L->cpu * t;
}

double mdl_copy_s(const mdl_layout_t *L, double bytes)
{
    return L->cpu * bytes / (L->m->copy_gbs * 1e9);
}

double mdl_convert_s(const mdl_layout_t *L, double bytes)
{
    return L->converts ? L->cpu * bytes / (L->m->convert_gbs * 1e9) : 0;
}

double mdl_reduce_s(const mdl_layout_t *L, double bytes)
{
    return L->cpu * bytes / (L->m->reduce_gbs * 1e9);
}

double mdl_wire_s(const mdl_layout_t *L, double bytes)
{
    return L->m->link_gbps > 0 ? bytes * 8.0 / (L->m->link_gbps * 1e9) : 0;
}

double mdl_round_s(const mdl_layout_t *L)
{
    return (L->m->round_us + L->m->peer_us * (L->P - 1)) * 1e-6;
}

double mdl_tile_half_s(const mdl_layout_t *L)
{
    return L->m->tile_us * 0.5e-6;
}

int64_t mdl_tile_rows(const mdl_layout_t *L, int r, int64_t t)
{
    int64_t tm = L->d->tile_m, rows = L->rows[r] - t * tm;
    return rows < 0 ? 0 : rows < tm ? rows : tm;
}

/* Worker g's columns as agmm_worker_share splits the column blocks: gc
 * column groups (at most the blocks), G / gc row groups, workers beyond
 * gc * (G / gc) idle; each weight is its own whole blocks of tile_n
 * (docs/design.md, "Several weights"). */
static void build_share(mdl_layout_t *L, int g, const int64_t *ncols, int nw)
{
    mdl_share_t *s = &L->share[g];
    int64_t tn = L->d->tile_n, blocks = 0;
    for (int i = 0; i < nw; i++)
        blocks += (ncols[i] + tn - 1) / tn;
    int64_t gc = blocks < L->G ? blocks : L->G;
    int gr = (int)(L->G / gc);
    memset(s, 0, sizeof *s);
    if (g >= gr * gc) return;
    int64_t cg = g % gc, j0 = cg * blocks / gc, j1 = (cg + 1) * blocks / gc;
    s->busy = 1;
    s->rg = (int)(g / gc);
    s->gr = gr;
    int64_t b0 = 0; /* first block of weight i */
    for (int i = 0; i < nw; i++) {
        int64_t nb = (ncols[i] + tn - 1) / tn;
        int64_t lo = j0 > b0 ? j0 : b0, hi = j1 < b0 + nb ? j1 : b0 + nb;
        if (lo < hi) {
            int64_t c0 = (lo - b0) * tn, c1 = (hi - b0) * tn;
            if (c1 > ncols[i]) c1 = ncols[i];
            s->seg_cols[s->nseg++] = c1 - c0;
            s->cols += c1 - c0;
        }
        b0 += nb;
    }
}

agmm_status_t mdl_layout_build(const agmm_model_machine_t *m,
                               const agmm_plan_desc_t *d, mdl_layout_t *L)
{
    memset(L, 0, sizeof *L);
    L->m = m;
    L->d = d;
    L->P = d->nranks;
    L->R = m->ranks_per_host;
    L->G = d->gemm_workers;
    L->C = d->comm_workers;
    int P = L->P;
    L->rows = calloc((size_t)P * 4, sizeof(int64_t));
    L->share = calloc((size_t)L->G, sizeof(mdl_share_t));
    if (!L->rows || !L->share) {
        mdl_layout_free(L);
        return agmm_error(AGMM_ERR_NO_MEMORY, "model: out of memory (%d ranks)",
                          P);
    }
    L->tiles = L->rows + P;
    L->row_off = L->rows + 2 * P;
    L->kpart = L->rows + 3 * P;
    L->uniform = 1;
    for (int r = 0; r < P; r++) {
        int64_t k0;
        L->rows[r] = d->m_local[r];
        L->tiles[r] = (L->rows[r] + d->tile_m - 1) / d->tile_m;
        L->row_off[r] = L->M;
        L->M += L->rows[r];
        if (L->tiles[r] > L->tmax) L->tmax = L->tiles[r];
        agmm_status_t st = agmm_plan_desc_k_part(d, r, &k0, &L->kpart[r]);
        if (st != AGMM_OK) {
            mdl_layout_free(L);
            return st;
        }
        if (L->rows[r] != L->rows[0] || L->kpart[r] != L->kpart[0])
            L->uniform = 0;
    }
    int64_t one = d->n;
    const int64_t *ncols = d->n_list ? d->n_list : &one;
    int nw = d->n_list ? d->n_weights : 1;
    for (int i = 0; i < nw; i++)
        L->n_tot += ncols[i];
    int busy = 0;
    for (int g = 0; g < L->G; g++) {
        build_share(L, g, ncols, nw);
        L->ngroups += L->share[g].busy && L->share[g].rg == 0;
        busy += L->share[g].busy;
    }
    /* Shared cores: the host's computing threads over its cores. */
    L->cpu = 1;
    if (m->cores_per_host > 0 && (double)busy * L->R > m->cores_per_host)
        L->cpu = (double)busy * L->R / m->cores_per_host;
    double es = (double)agmm_dtype_size(d->dtype);
    L->row_bytes = es * (double)d->k;
    L->out_row_bytes = 4.0 * (double)L->n_tot;
    L->cheap_calls = d->gemm_engine != AGMM_GEMM_ENGINE_OPENBLAS;
    L->converts = m->convert_gbs > 0 && es == 2;
    return AGMM_OK;
}

void mdl_layout_free(mdl_layout_t *L)
{
    free(L->rows);
    free(L->share);
    L->rows = NULL;
    L->share = NULL;
}
