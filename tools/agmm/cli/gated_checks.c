/*
 * The checks of the `agmm` command line about a gated activation
 * (--activation silu-mul, gelu-tanh-mul; options.h): W's --n columns are
 * [gate | up] halves, so each --n value must be even, and only ag-gemm
 * takes one (gemm-rs and gemm-ar apply the epilogue to the reduced sum,
 * which the two halves would need first). Each refusal is one line,
 * "agmm: --option: ...", before any rank starts.
 */
#include "options.h"

#include <inttypes.h>

#include "agmm_ext.h"

int opt_check_gated(const agmm_cli_t *cli, FILE *err)
{
    if (agmm_activation_gate(cli->activation) == AGMM_ACT_NONE) return 0;
    const char *act = agmm_activation_name(cli->activation);
    if (cli->op != AGMM_OP_AG_GEMM) {
        fprintf(err,
                "agmm: --activation %s: only with --op ag-gemm (%s applies "
                "the epilogue to the reduced sum of both halves)\n",
                act, agmm_op_name(cli->op));
        return 2;
    }
    for (int i = 0; i < cli->n_count; i++)
        if (cli->n_list[i] % 2) {
            fprintf(err,
                    "agmm: --n: %" PRId64 " with --activation %s (allowed: "
                    "even, W's [gate | up] halves; C has n/2 columns)\n",
                    cli->n_list[i], act);
            return 2;
        }
    return 0;
}
