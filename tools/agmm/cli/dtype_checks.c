/*
 * The checks of the `agmm` command line about the input dtype (options.h):
 * int8's scale layouts (--a-scale, --w-scale) only with --dtype int8, and
 * int8 only with --k up to AGMM_INT8_MAX_K, on an engine that has an
 * int8 GEMM (oneDNN; OpenBLAS has none) and a --gemm-path that engine has
 * for it. Each refusal is one
 * line, "agmm: --option: ...", before any rank starts.
 */
#include "options.h"

#include <string.h>

/* The engine --gemm-engine names (auto resolved as the library does). */
static agmm_gemm_engine_kind_t resolved_engine(const agmm_cli_t *cli)
{
    if (cli->gemm_engine != AGMM_GEMM_ENGINE_AUTO) return cli->gemm_engine;
    return agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN)
               ? AGMM_GEMM_ENGINE_ONEDNN
               : AGMM_GEMM_ENGINE_OPENBLAS;
}

int opt_check_dtype(const agmm_cli_t *cli, FILE *err)
{
    const char *dt = agmm_dtype_name(cli->dtype);
    if (cli->dtype != AGMM_DTYPE_INT8) {
        if (cli->a_scale_set) {
            fprintf(err,
                    "agmm: --a-scale: only with --dtype int8 (int8 A's "
                    "scales: row or tensor; --dtype is %s)\n",
                    dt);
            return 2;
        }
        if (cli->w_scale_set) {
            fprintf(err,
                    "agmm: --w-scale: only with --dtype int8 (int8 W's "
                    "scales: col or tensor; --dtype is %s)\n",
                    dt);
            return 2;
        }
        return 0;
    }
    if (cli->k > AGMM_INT8_MAX_K) {
        fprintf(err,
                "agmm: --k: %lld with --dtype int8 (allowed 1..%d: int32 sums "
                "of longer int8 dot products may overflow)\n",
                (long long)cli->k, AGMM_INT8_MAX_K);
        return 2;
    }
    agmm_gemm_engine_kind_t eng = resolved_engine(cli);
    if (eng == AGMM_GEMM_ENGINE_OPENBLAS) {
        fprintf(err,
                "agmm: --dtype int8: needs the onednn GEMM engine (openblas "
                "has no int8 GEMM; %s)\n",
                cli->gemm_engine == AGMM_GEMM_ENGINE_OPENBLAS
                    ? "drop --gemm-engine openblas"
                    : "this agmm has openblas only: build with libdnnl-dev");
        return 2;
    }
    if (!agmm_gemm_path_available(eng, cli->dtype, cli->gemm_path)) {
        char allowed[64] = "";
        static const agmm_gemm_path_t paths[] = {
            AGMM_GEMM_PATH_AUTO, AGMM_GEMM_PATH_NATIVE, AGMM_GEMM_PATH_F32};
        for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
            if (agmm_gemm_path_available(eng, cli->dtype, paths[i])) {
                size_t len = strlen(allowed);
                snprintf(allowed + len, sizeof allowed - len, "%s%s",
                         len ? ", " : "", agmm_gemm_path_name(paths[i]));
            }
        fprintf(err,
                "agmm: --gemm-path %s: the %s engine has no %s path for int8 "
                "(allowed here: %s)\n",
                agmm_gemm_path_name(cli->gemm_path), agmm_gemm_engine_name(eng),
                agmm_gemm_path_name(cli->gemm_path),
                allowed[0] ? allowed : "none");
        return 2;
    }
    return 0;
}
