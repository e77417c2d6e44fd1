/* The plan description and the shapes the options ask for (desc.c), and
 * the memory they need (memory_check.c): what `agmm run`, `agmm bench`
 * and `agmm model` share, made from the parsed options (cli.h) alone, on
 * the launcher as on every rank. */
#ifndef AGMM_TOOL_DESC_H
#define AGMM_TOOL_DESC_H

#include <stdint.h>
#include <stdio.h>

#include "agmm.h"
#include "cli.h"

/* The plan description the options ask for. */
void agmm_tool_desc(const agmm_cli_t *cli, agmm_plan_desc_t *desc);
/* The bits of a quantized weight (--weight-dtype int8: 8, int4: 4), or 0. */
static inline int agmm_tool_wq_bits(const agmm_cli_t *cli)
{
    return cli->weight_dtype == AGMM_WDTYPE_INT8   ? 8
           : cli->weight_dtype == AGMM_WDTYPE_INT4 ? 4
                                                   : 0;
}

/* Does the operation reduce partials over a split of k (gemm-rs, gemm-ar:
 * each rank has [M, K_r] of A and its own W_r)? */
static inline int agmm_tool_split_k(const agmm_cli_t *cli)
{
    return cli->op == AGMM_OP_GEMM_RS || cli->op == AGMM_OP_GEMM_AR;
}
/* Per rank r: its inner-dimension part (gemm-rs, gemm-ar; else k), the
 * elements of its A (gemm-rs, gemm-ar: [M, K_r]; else [m_local[r], k]), the
 * rows of its C (gemm-rs: m_local[r]; else M), and its weight's input
 * stream id (the rows of a round: agmm_tool_round_rs_rows). */
int64_t agmm_tool_k_part(const agmm_cli_t *cli, int r);
/* One rank's GEMM flops per round (mean over ranks; desc.c). */
double agmm_tool_flop_per_rank(const agmm_cli_t *cli);
int64_t agmm_tool_a_elems(const agmm_cli_t *cli, int r);
int64_t agmm_tool_c_rows(const agmm_cli_t *cli, int r);
/* C's columns for a weight of n columns: n, or n / 2 with a gated
 * activation (agmm.h: [gate | up] halves of W make one column of C). */
int64_t agmm_tool_c_cols(const agmm_cli_t *cli, int64_t n);
int64_t agmm_tool_w_id(const agmm_cli_t *cli, int r);
/* int8: the rows of rank r's A (ag-gemm m_local[r], gemm-rs/-ar M), its A
 * scales (per row: those rows; --a-scale tensor: 1), weight i's scales
 * (per column: its columns; --w-scale tensor: 1); 0 for other dtypes. */
int64_t agmm_tool_a_rows(const agmm_cli_t *cli, int r);
int64_t agmm_tool_a_scales(const agmm_cli_t *cli, int r);
int64_t agmm_tool_w_scales(const agmm_cli_t *cli, int i);
/* Rank r's rows in round `round` (--m-local-per-round, else --m-local). */
int64_t agmm_tool_round_rows(const agmm_cli_t *cli, int round, int r);
/* gemm-rs, gemm-ar: the rows of C in round `round` (*M: every rank's;
 * A_r's are the first *M rows of its [m_total, K_r] inputs) and rank r's
 * part of them (*rows from *row0; gemm-ar: all *M from 0). */
void agmm_tool_round_rs_rows(const agmm_cli_t *cli, int round, int r,
                             int64_t *M, int64_t *row0, int64_t *rows);
/* The input stream id of weight i of rank r (i = 0: agmm_tool_w_id). */
int64_t agmm_tool_w_id_i(const agmm_cli_t *cli, int r, int i);

/* Is there an epilogue to check (a bias, an activation, a 16-bit C)? */
int agmm_tool_has_epilogue(const agmm_cli_t *cli);

/* Memory one rank of the tool needs besides the plan (memory_check.c). */
uint64_t agmm_tool_bytes_per_rank(const agmm_cli_t *cli);
/* 0 if the plan and the tool fit the available memory of the ranks on this
 * host, else 2 with one line on `err` (memory_check.c). */
int agmm_tool_check_memory(const agmm_cli_t *cli, FILE *err);

#endif
