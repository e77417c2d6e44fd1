/* The plan description and per-rank shapes the options ask for (desc.h):
 * the description itself, each rank's part of k, of A and of C, the rows
 * of a round, the int8 scales' counts, the input stream ids and whether
 * there is an epilogue. */
#include "desc.h"

#include "agmm_ext.h" /* agmm_activation_gate */

void agmm_tool_desc(const agmm_cli_t *cli, agmm_plan_desc_t *d)
{
    agmm_plan_desc_init(d);
    d->nranks = cli->ranks;
    d->m_local = cli->m_local;
    d->k = cli->k;
    d->n = cli->n;
    if (cli->n_count > 1) {
        d->n_weights = cli->n_count;
        d->n_list = cli->n_list;
    }
    d->tile_m = cli->tile_m;
    d->tile_n = cli->tile_n;
    d->dtype = cli->dtype;
    d->gemm_engine = cli->gemm_engine;
    d->gemm_path = cli->gemm_path;
    d->weights = cli->weights;
    d->comm_workers = cli->comm_cores;
    d->gemm_workers = cli->gemm_cores;
    d->timeout_s = cli->timeout_s;
    d->op = cli->op;
    d->a_scale = cli->a_scale;
    d->w_scale = cli->w_scale;
    d->bias = cli->bias;
    d->activation = cli->activation;
    d->out_dtype = cli->out_dtype;
    d->weight_dtype = cli->weight_dtype;
    d->group_size = agmm_tool_wq_bits(cli) ? cli->group_size : 0;
    d->weight_zero_point = agmm_tool_wq_bits(cli) ? cli->zero_point : 0;
    d->a_quant = cli->a_quant;
    d->k_local =
        agmm_tool_split_k(cli) && cli->k_local_count > 0 ? cli->k_local : NULL;
}

int64_t agmm_tool_k_part(const agmm_cli_t *cli, int r)
{
    agmm_plan_desc_t d;
    int64_t k0, kp;
    agmm_tool_desc(cli, &d);
    return agmm_plan_desc_k_part(&d, r, &k0, &kp) == AGMM_OK ? kp : -1;
}

/* One rank's GEMM flops per round, the mean over ranks: 2*M*K*N for
 * all-gather + GEMM (every rank multiplies the whole gathered A); for GEMM +
 * reduce-scatter (or all-reduce) the ranks share K, so 2*M*(K/P)*N. */
double agmm_tool_flop_per_rank(const agmm_cli_t *cli)
{
    double k = (double)cli->k;
    if (agmm_tool_split_k(cli)) k /= (double)cli->ranks;
    return 2.0 * (double)cli->m_total * k *
           (double)(cli->n_sum > 0 ? cli->n_sum : cli->n);
}

int64_t agmm_tool_round_rows(const agmm_cli_t *cli, int round, int r)
{
    int n = cli->rows_per_round_count;
    if (n == 0) return cli->m_local[r];
    int i = round >= 0 ? round % n
                       : (n - 1 - (-1 - round) % n); /* warmup: from the end */
    int64_t v = cli->rows_per_round[i];
    return v < cli->m_local[r] ? v : cli->m_local[r];
}

void agmm_tool_round_rs_rows(const agmm_cli_t *cli, int round, int r,
                             int64_t *M, int64_t *row0, int64_t *rows)
{
    *M = *row0 = 0;
    for (int p = 0; p < cli->ranks; p++) {
        int64_t m = agmm_tool_round_rows(cli, round, p);
        if (p < r) *row0 += m;
        if (p == r) *rows = m;
        *M += m;
    }
    if (cli->op == AGMM_OP_GEMM_AR) { /* every rank has every row */
        *row0 = 0;
        *rows = *M;
    }
}

int64_t agmm_tool_w_id_i(const agmm_cli_t *cli, int r, int i)
{
    /* Weight 0 keeps the single-weight stream; the others get their own. */
    return agmm_tool_w_id(cli, r) + (int64_t)i * (1 << 20);
}

int64_t agmm_tool_a_elems(const agmm_cli_t *cli, int r)
{
    return agmm_tool_split_k(cli) ? cli->m_total * agmm_tool_k_part(cli, r)
                                  : cli->m_local[r] * cli->k;
}

int64_t agmm_tool_a_rows(const agmm_cli_t *cli, int r)
{
    return agmm_tool_split_k(cli) ? cli->m_total : cli->m_local[r];
}

int64_t agmm_tool_a_scales(const agmm_cli_t *cli, int r)
{
    if (cli->dtype != AGMM_DTYPE_INT8) return 0;
    return cli->a_scale == AGMM_SCALE_TENSOR ? 1 : agmm_tool_a_rows(cli, r);
}

int64_t agmm_tool_w_scales(const agmm_cli_t *cli, int i)
{
    if (cli->dtype != AGMM_DTYPE_INT8) return 0;
    return cli->w_scale == AGMM_SCALE_TENSOR ? 1
           : cli->n_count > 1                ? cli->n_list[i]
                                             : cli->n;
}

int64_t agmm_tool_c_rows(const agmm_cli_t *cli, int r)
{
    return cli->op == AGMM_OP_GEMM_RS ? cli->m_local[r] : cli->m_total;
}

int64_t agmm_tool_c_cols(const agmm_cli_t *cli, int64_t n)
{
    return agmm_activation_gate(cli->activation) != AGMM_ACT_NONE ? n / 2 : n;
}

int64_t agmm_tool_w_id(const agmm_cli_t *cli, int r)
{
    /* gemm-rs, gemm-ar: every rank has its own W_r */
    return cli->weights == AGMM_WEIGHTS_SHARED && !agmm_tool_split_k(cli)
               ? 0
               : r + 1;
}

int agmm_tool_has_epilogue(const agmm_cli_t *cli)
{
    return cli->bias || cli->activation != AGMM_ACT_NONE ||
           cli->out_dtype != AGMM_DTYPE_FP32;
}
