/* What a bias + activation + narrowed output costs on top of a tile's GEMM,
 * in the two places the library puts it, on one thread, side by side:
 *
 *   plain    the tile's GEMM, fp32 out, no attributes;
 *   pass     the same GEMM into an fp32 tile, then agmm_gemm_epilogue over
 *            it (src/gemm/epilogue.c): what gemm-rs's and gemm-ar's owners
 *            do to the sums of a tile (there row by row, after each row's
 *            last addition);
 *   engine   one GEMM whose prepared weight carries the attributes (the
 *            oneDNN engine puts them in its post-ops): what all-gather +
 *            GEMM does.
 *
 * C[M, N] = A[M, K] @ W[K, N] as M / ROWS calls of ROWS rows and every
 * column each (a plan's tile calls with one GEMM worker), the three
 * variants alternating within a round so noise hits them alike; the median
 * over rounds of each, the ratio to plain and the added cost per output
 * element. The defaults are one gemm-rs owner's rows at the issue's
 * prefill shape on 2 ranks (K_r = 2048): there a round computes 2 x M rows
 * of partials and applies the epilogue to M of them.
 *
 * usage: [ENGINE=onednn|openblas] [DTYPE=bf16|fp16|fp32] \
 *        agmm_epilogue_gemm [M K N [ROUNDS [ROWS [ACT [OUT]]]]]
 *        (onednn when built in, bf16; 2048 2048 4096 9 128 silu bf16) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
#include "gemm/epilogue.h"
#include "gemm/gemm.h"

enum { PLAIN, PASS, ENGINE, NVAR };
static const char *const var_name[NVAR] = {"plain", "pass", "engine"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_act(const char *s, agmm_gemm_act_t *act)
{
    for (int a = AGMM_GEMM_ACT_NONE; a <= AGMM_GEMM_ACT_SILU; a++)
        if (!strcmp(s, agmm_gemm_act_name((agmm_gemm_act_t)a))) {
            *act = (agmm_gemm_act_t)a;
            return 0;
        }
    return -1;
}

static int parse_dtype(const char *s, agmm_dtype_t *dt)
{
    static const struct {
        const char *name;
        agmm_dtype_t dt;
    } t[] = {{"fp32", AGMM_DTYPE_FP32},
             {"bf16", AGMM_DTYPE_BF16},
             {"fp16", AGMM_DTYPE_FP16}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].name)) {
            *dt = t[i].dt;
            return 0;
        }
    return -1;
}

static int usage(const char *prog)
{
    fprintf(stderr,
            "usage: [ENGINE=onednn|openblas] [DTYPE=bf16|fp16|fp32] %s "
            "[M K N [ROUNDS [ROWS [ACT [OUT]]]]]\n"
            "  sizes, ROUNDS and ROWS >= 1; ACT none|relu|gelu-tanh|"
            "gelu-erf|silu; OUT fp32|bf16|fp16; ENGINE onednn|openblas; "
            "DTYPE bf16|fp16|fp32\n",
            prog);
    return 2;
}

int main(int argc, char **argv)
{
    int64_t M = 2048, K = 2048, N = 4096, ROWS = 128;
    int rounds = 9;
    agmm_gemm_act_t act = AGMM_GEMM_ACT_SILU;
    agmm_dtype_t out = AGMM_DTYPE_BF16, dt = AGMM_DTYPE_BF16;
    if (argc == 2 || argc == 3 || argc > 8) return usage(argv[0]);
    if (argc > 3) {
        M = atoll(argv[1]);
        K = atoll(argv[2]);
        N = atoll(argv[3]);
    }
    if (argc > 4) rounds = atoi(argv[4]);
    if (argc > 5) ROWS = atoll(argv[5]);
    if ((argc > 6 && parse_act(argv[6], &act)) ||
        (argc > 7 && parse_dtype(argv[7], &out)))
        return usage(argv[0]);
    const char *en = getenv("ENGINE"), *dn = getenv("DTYPE");
    if ((dn && parse_dtype(dn, &dt)) ||
        (en && strcmp(en, "onednn") && strcmp(en, "openblas")) || M < 1 ||
        K < 1 || N < 1 || rounds < 1 || ROWS < 1)
        return usage(argv[0]);
    agmm_gemm_engine_kind_t kind =
        en ? (!strcmp(en, "openblas") ? AGMM_GEMM_ENGINE_OPENBLAS
                                      : AGMM_GEMM_ENGINE_ONEDNN)
        : agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN)
            ? AGMM_GEMM_ENGINE_ONEDNN
            : AGMM_GEMM_ENGINE_OPENBLAS;
    agmm_blas_init();
    const agmm_gemm_engine_t *e = agmm_gemm_engine_get(kind);
    if (!e) {
        fprintf(stderr, "%s: engine %s is not built in\n", argv[0],
                agmm_gemm_engine_name(kind));
        return 2;
    }
    ROWS = AGMM_MIN(ROWS, M);
    agmm_dtype_t in = e->input_dtype(dt);
    size_t ies = agmm_dtype_size(in), oes = agmm_dtype_size(out);
    float *a32 = agmm_alloc((size_t)(M * K) * sizeof(float));
    float *w32 = agmm_alloc((size_t)(K * N) * sizeof(float));
    float *bias = agmm_alloc((size_t)N * sizeof(float));
    void *a = agmm_alloc((size_t)(M * K) * ies);
    void *w = agmm_alloc((size_t)(K * N) * agmm_dtype_size(dt));
    float *c = agmm_alloc((size_t)(M * N) * sizeof(float)); /* plain */
    float *tile = agmm_alloc((size_t)(ROWS * N) * sizeof(float));
    void *co = agmm_alloc((size_t)(M * N) * oes); /* pass, engine */
    double *t = calloc((size_t)(NVAR * rounds), sizeof *t);
    if (!a32 || !w32 || !bias || !a || !w || !c || !tile || !co || !t) return 1;
    /* Values around zero, so the activations see both signs. */
    for (int64_t i = 0; i < M * K; i++)
        a32[i] = (float)((i * 7) % 13 - 6) * 0.05f;
    for (int64_t i = 0; i < K * N; i++)
        w32[i] = (float)((i * 5) % 11 - 5) * 0.05f;
    for (int64_t j = 0; j < N; j++)
        bias[j] = (float)(j % 9 - 4) * 0.25f;
    agmm_convert_from_f32(in, a32, a, (size_t)(M * K));
    agmm_convert_from_f32(dt, w32, w, (size_t)(K * N));
    int64_t counts[2] = {ROWS, M % ROWS};
    agmm_gemm_shape_t shape = {.k = K,
                               .ncols = N,
                               .ldw = N,
                               .lda = K,
                               .ldc = N,
                               .rows = counts,
                               .nrows = M % ROWS ? 2 : 1};
    /* plain's prep (also pass's GEMM), and engine's */
    agmm_gemm_attr_t at[2];
    agmm_gemm_attr_init(&at[0], in, dt);
    agmm_gemm_attr_init(&at[1], in, dt);
    at[1].bias = 1;
    at[1].act = act;
    at[1].c_dtype = out;
    agmm_gemm_operand_t wop[2] = {{.w = w}, {.w = w, .bias = bias}};
    agmm_gemm_prep_t *prep[2] = {NULL, NULL};
    void *scratch[2] = {NULL, NULL};
    for (int p = 0; p < 2; p++) {
        agmm_status_t st = e->prepare(&shape, &at[p], NULL, &prep[p]);
        if (st == AGMM_OK) st = e->load(prep[p], &wop[p]);
        if (st != AGMM_OK && p == 1) {
            /* refused (logged): the engine would not take these
             * attributes; the plans then make them a pass */
            if (prep[1]) e->destroy(prep[1]);
            prep[1] = NULL;
            break;
        }
        if (st != AGMM_OK) return 1;
        size_t sb = e->scratch_bytes(prep[p]);
        scratch[p] = sb ? agmm_alloc(sb) : NULL;
    }
    int nvar = prep[1] ? NVAR : ENGINE;
    for (int r = -1; r < rounds; r++) /* round -1 warms up */
        for (int v = 0; v < nvar; v++) {
            double t0 = agmm_now();
            for (int64_t r0 = 0; r0 < M; r0 += ROWS) {
                int64_t m = AGMM_MIN(ROWS, M - r0);
                const void *ar = (const char *)a + (size_t)(r0 * K) * ies;
                void *cr = (char *)co + (size_t)(r0 * N) * oes;
                agmm_status_t st;
                if (v == PLAIN)
                    st = e->run(prep[0], m, ar, NULL, c + r0 * N, scratch[0]);
                else if (v == PASS) {
                    st = e->run(prep[0], m, ar, NULL, tile, scratch[0]);
                    agmm_gemm_epilogue(&at[1], m, N, tile, N, NULL, 0, NULL,
                                       bias, cr, N);
                } else
                    st = e->run(prep[1], m, ar, NULL, cr, scratch[1]);
                if (st != AGMM_OK) return 1;
            }
            if (r >= 0) t[v * rounds + r] = agmm_now() - t0;
        }
    printf("epilogue_gemm: M=%lld K=%lld N=%lld %s, %lld rows per call, 1 "
           "thread, %s %s impl %s; epilogue: bias + %s, %s out; median of %d "
           "rounds\n",
           (long long)M, (long long)K, (long long)N, agmm_dtype_name(dt),
           (long long)ROWS, e->name, e->version(), e->impl(prep[0]),
           agmm_gemm_act_name(act), agmm_dtype_name(out), rounds);
    if (!prep[1])
        printf("engine: refused by %s (the plans make it a pass)\n", e->name);
    else
        printf("engine: impl %s\n", e->impl(prep[1]));
    double med[NVAR];
    printf("%8s %12s %12s %12s %9s %14s\n", "variant", "median_ms", "min_ms",
           "max_ms", "vs_plain", "added_ns/elem");
    for (int v = 0; v < nvar; v++) {
        double *tv = t + v * rounds;
        qsort(tv, (size_t)rounds, sizeof *tv, cmp_double);
        med[v] = tv[rounds / 2];
        printf("%8s %12.2f %12.2f %12.2f %9.3f %14.3f\n", var_name[v],
               med[v] * 1e3, tv[0] * 1e3, tv[rounds - 1] * 1e3,
               med[v] / med[PLAIN],
               (med[v] - med[PLAIN]) / (double)(M * N) * 1e9);
    }
    for (int p = 0; p < 2; p++) {
        if (prep[p]) e->destroy(prep[p]);
        agmm_free(scratch[p]);
    }
    agmm_free(a32);
    agmm_free(w32);
    agmm_free(bias);
    agmm_free(a);
    agmm_free(w);
    agmm_free(c);
    agmm_free(tile);
    agmm_free(co);
    free(t);
    return 0;
}
