/*
 * The checks of the `agmm` command line about a quantized weight
 * (--weight-dtype int8|int4, --group-size, --zero-point, --a-quant;
 * options.h): what
 * the library's description check would refuse (agmm.h, "Quantized
 * weights"), said in the tool's terms before any rank starts, one line
 * each, "agmm: --option: ...".
 */
#include "options.h"

#include <inttypes.h>

#include "agmm_ext.h"
#include "desc.h"

int opt_check_wq(const agmm_cli_t *cli, FILE *err)
{
    const char *wd = agmm_wdtype_name(cli->weight_dtype);
    if (cli->weight_dtype == AGMM_WDTYPE_SAME) {
        if (cli->gemm_engine == AGMM_GEMM_ENGINE_WQ &&
            cli->dtype != AGMM_DTYPE_BF16) {
            fprintf(err,
                    "agmm: --gemm-engine wq: with --weight-dtype int8 or "
                    "int4, or --dtype bf16 (agmm's bf16-weight kernel; here "
                    "--dtype %s)\n",
                    agmm_dtype_name(cli->dtype));
            return 2;
        }
        if (cli->group_size_set || cli->zero_point ||
            cli->a_quant != AGMM_AQUANT_NONE) {
            fprintf(err,
                    "agmm: --%s: only with --weight-dtype int8 or int4 (a "
                    "quantized weight; --weight-dtype is same)\n",
                    cli->group_size_set ? "group-size"
                    : cli->zero_point   ? "zero-point"
                                        : "a-quant int8");
            return 2;
        }
        return 0;
    }
    if (cli->dtype == AGMM_DTYPE_INT8) {
        fprintf(err,
                "agmm: --weight-dtype %s: with --dtype fp32, bf16 or fp16 "
                "(int8 A with int8 W is W8A8: --weight-dtype same)\n",
                wd);
        return 2;
    }
    if (cli->gemm_engine != AGMM_GEMM_ENGINE_AUTO &&
        cli->gemm_engine != AGMM_GEMM_ENGINE_WQ) {
        fprintf(err,
                "agmm: --gemm-engine %s: a quantized weight runs on agmm's wq "
                "kernels (allowed with --weight-dtype %s: auto, wq)\n",
                agmm_gemm_engine_name(cli->gemm_engine), wd);
        return 2;
    }
    /* gemm-rs, gemm-ar: no group straddles the k split. */
    for (int r = 0;
         agmm_tool_split_k(cli) && cli->group_size > 0 && r + 1 < cli->ranks;
         r++) {
        int64_t kp = agmm_tool_k_part(cli, r);
        if (kp != cli->k && kp % cli->group_size) {
            fprintf(err,
                    "agmm: --group-size %d: rank %d's k part is %" PRId64
                    " (allowed: every rank's part but the last a multiple of "
                    "the group, so no group straddles the k split: --k-local, "
                    "or --group-size 0)\n",
                    cli->group_size, r, kp);
            return 2;
        }
    }
    return 0;
}
