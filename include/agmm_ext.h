/*
 * agmm_ext.h: helpers for agmm's own tests, benchmarks and CLI, beside the
 * core API of agmm.h (which this header includes).
 *
 * What is here is not needed to run the operation: the trusted reference
 * result and the fp32 conversion the checks use, the benchmark parts of a
 * round (where a round's time goes), and queries for reports (which BLAS
 * and kernel, whether links are emulated). The functions are implemented
 * by the same library; they follow agmm.h's error model (a status and
 * agmm_last_error(), or a value) and its threading contract
 * (agmm_plan_run_part is a collective call on a plan, like agmm_plan_run).
 *
 * Unlike agmm.h, this API is not stable: it may change between versions,
 * minor ones included, as the tests and benchmarks need.
 */
#ifndef AGMM_EXT_H
#define AGMM_EXT_H

#include "agmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ reference */

/* Convert n fp32 values to `dtype` (round to nearest even). */
agmm_status_t agmm_convert_from_fp32(agmm_dtype_t dtype, const float *src,
                                     void *dst, size_t n);
/* Convert n values of `dtype` (FP16, BF16, FP32: exact; INT8: the integer
 * value) to fp32, e.g. a 16-bit C (agmm_plan_desc_t.out_dtype) for a
 * check. */
agmm_status_t agmm_convert_to_fp32(agmm_dtype_t dtype, const void *src,
                                   float *dst, size_t n);

/* The trusted result of the operation, computed the plain way: gather the
 * shards (shards[r] is [m_local[r], k] in dtype) into one fp32 matrix with a
 * scalar conversion, then one CBLAS GEMM with w ([k, n] in dtype) into c
 * ([M, n] fp32). Shares no code with the plan's gathering, tiling or
 * signals. Local; allocates its own scratch. */
agmm_status_t agmm_reference(int nranks, const void *const *shards,
                             const int64_t *m_local, int64_t k, int64_t n,
                             agmm_dtype_t dtype, const void *w, float *c);

/* The trusted result of GEMM + reduce-scatter for rows [row0, row0 + rows)
 * of C = sum_r A_r @ W_r: a[r] is [M, k_local[r]] and w[r] [k_local[r], n]
 * in dtype (NULL allowed where k_local[r] == 0), c is [rows, n] fp32. Each
 * element is summed over every r and inner index in double, then rounded
 * once: plain loops, no BLAS, nothing shared with the plan's tiles, slots
 * or summation order. Local. */
agmm_status_t agmm_reference_rs(int nranks, const void *const *a,
                                const void *const *w, const int64_t *k_local,
                                int64_t M, int64_t n, agmm_dtype_t dtype,
                                int64_t row0, int64_t rows, float *c);

/* A plan's epilogue (agmm_plan_desc_t: bias, activation) on a reference
 * result: c ([rows, n] fp32: a reference product or sum) becomes
 * act(c + bias[j]) computed in double, rounded once to fp32 (bias NULL:
 * none; AGMM_ACT_NONE: just the bias). A gated activation (SILU_MUL,
 * GELU_TANH_MUL; n even, [gate | up] halves of h = n / 2 columns) packs
 * the result into c's first rows * h floats, row stride h:
 *   c[i*h + j] = gate_act(c[i,j] + bias[j]) * (c[i,h+j] + bias[h+j]).
 * It does not round to the plan's out_dtype: a check allows half an ulp
 * of it on top (the agmm tool's allowance, docs/cli.md). Plain libm in
 * double, sharing nothing with the engines' fp32 epilogue. Local. */
agmm_status_t agmm_reference_epilogue(int64_t rows, int64_t n,
                                      const float *bias, agmm_activation_t act,
                                      float *c);
/* The largest |slope| of the activation over the reals (none and relu 1,
 * gelu-tanh and gelu-erf 1.129, silu 1.0998, rounded up): how much an
 * error before it can grow through it; a gated one's is its gate
 * activation's (silu-mul 1.0998, gelu-tanh-mul 1.129); 0 for an invalid
 * value. */
double agmm_activation_max_slope(agmm_activation_t act);
/* A gated activation's activation of the gate: AGMM_ACT_SILU for
 * SILU_MUL, AGMM_ACT_GELU_TANH for GELU_TANH_MUL; AGMM_ACT_NONE for any
 * other value (not gated). */
agmm_activation_t agmm_activation_gate(agmm_activation_t act);

/* The int8 (W8A8) oracles: the same operations on int8 values with fp32
 * scales (AGMM_DTYPE_INT8), as plain loops sharing nothing with the
 * engines: each dot product exact in int64, then scaled in double in the
 * engines' order ((double)dot * w_scale[j] * a_scale[i]), rounded to fp32
 * once. All-gather + GEMM: shards[r] is [m_local[r], k] int8 with
 * a_scales[r] its rows' scales ([m_local[r]]), w [k, n] int8 with
 * per-column scales w_scale [n]; c is [M, n] fp32. Local. */
agmm_status_t agmm_reference_int8(int nranks, const int8_t *const *shards,
                                  const float *const *a_scales,
                                  const int64_t *m_local, int64_t k, int64_t n,
                                  const int8_t *w, const float *w_scale,
                                  float *c);
/* GEMM + reduce-scatter, rows [row0, row0 + rows) of C = sum_r
 * scaled(A_r @ W_r): a[r] [M, k_local[r]] int8 with a_scale[r] [M],
 * w[r] [k_local[r], n] int8 with w_scale[r] [n] (NULLs allowed where
 * k_local[r] == 0); each rank's term scaled in double, the terms summed
 * in double, rounded once into c ([rows, n] fp32). Local. */
agmm_status_t agmm_reference_rs_int8(
    int nranks, const int8_t *const *a, const float *const *a_scale,
    const int8_t *const *w, const float *const *w_scale, const int64_t *k_local,
    int64_t M, int64_t n, int64_t row0, int64_t rows, float *c);
/* The same arguments; mag = sum_r |rank r's scaled term| (the magnitude
 * agmm_int8_bound takes for GEMM + reduce-scatter). */
agmm_status_t agmm_reference_rs_int8_mag(
    int nranks, const int8_t *const *a, const float *const *a_scale,
    const int8_t *const *w, const float *const *w_scale, const int64_t *k_local,
    int64_t M, int64_t n, int64_t row0, int64_t rows, float *mag);
/* How far a correct agmm int8 result may be from these oracles, element
 * by element: |got - ref| <= agmm_int8_bound(nparts, mag) =
 * (nparts + 3) * 2^-24 * (1 + 2^-20) * mag, where
 *   all-gather + GEMM: nparts 1, mag |ref| (three fp32 roundings in the
 *     engine: (float)acc, * w_scale, * a_scale; one in the oracle);
 *   GEMM + reduce-scatter: nparts the ranks P, mag from
 *     agmm_reference_rs_int8_mag (each rank's three roundings, P - 1 fp32
 *     additions of the partials, the oracle's one).
 * Assumes no fp32 step under- or overflows (normal results, or exact
 * zeros: a zero scale gives 0 exactly, bound 0). */
double agmm_int8_bound(int nparts, double mag);

/* ---------------------------------------------------- benchmark parts */

/* Benchmark parts (collective, like a round): one part of a schedule on its
 * own, to show where a round's time goes. The result in c is not the
 * operation's (parts skip work); use them only for timing.
 *   COMM_ONLY:  the fused schedule's puts and signals, each rank waiting
 *               until every tile has arrived; no GEMM.
 *   GEMM_ONLY:  the fused schedule's conversion and GEMM work with every
 *               tile taken as already in place (the last round's rows);
 *               no communication.
 *   MONOLITHIC: the same rows converted and multiplied by one GEMM per
 *               GEMM worker (column split) over the whole pre-gathered
 *               matrix, as the baseline does after its all-gather.
 * For AGMM_OP_GEMM_RS: COMM_ONLY is the fused schedule's puts, signals and
 * reductions without the tile GEMMs; GEMM_ONLY its tile GEMMs without
 * puts or reductions; MONOLITHIC the baseline's whole-partial GEMM. */
typedef enum agmm_part {
    AGMM_PART_COMM_ONLY = 0,
    AGMM_PART_GEMM_ONLY = 1,
    AGMM_PART_MONOLITHIC = 2,
} agmm_part_t;
agmm_status_t agmm_plan_run_part(agmm_plan_t *plan, agmm_part_t part,
                                 const void *a_local, void *c);
/* The same with the extended arguments (several outputs, per-call rows);
 * args->schedule and args->a_gathered are ignored. */
agmm_status_t agmm_plan_run_part_args(agmm_plan_t *plan, agmm_part_t part,
                                      const agmm_run_args_t *args);

/* ---------------------------------------------------------------- memory */

/* Bytes this rank's live plan holds, as allocated: its layout arrays, its
 * local buffers, its windows (as asked of the transport) and the GEMM
 * engine's prepared weights. The plan books every buffer once, and
 * agmm_plan_bytes_per_rank() adds up the same booking, so on the rank with
 * the most this equals agmm_plan_bytes_per_rank() of its description. 0 for
 * a NULL or destroyed plan. */
uint64_t agmm_plan_bytes_held(const agmm_plan_t *plan);

/* ------------------------------------------------------- link emulation */

/* 1 when the world's links are emulated (agmm_launch_opts_t.link_gbps),
 * with the settings in *gbps and *latency_us (either may be NULL). */
int agmm_world_link_emulated(const agmm_world_t *world, double *gbps,
                             double *latency_us);

/* ------------------------------------------------------------ BLAS info */

/* "OpenBLAS 0.3.21" or the CBLAS the library was built with. */
const char *agmm_blas_name(void);
/* The kernel the BLAS picked at run time ("Haswell", "SkylakeX"), or
 * "unknown" where the BLAS cannot say. */
const char *agmm_blas_kernel(void);
/* NULL when that kernel suits this CPU, else one line saying what to do,
 * e.g. "OpenBLAS runs its Prescott kernel (SSE, no AVX) on a CPU with
 * AVX-512: set OPENBLAS_CORETYPE=SkylakeX (several times faster sgemm)":
 * an OpenBLAS that does not know a CPU runs an old kernel silently. No
 * advice when OPENBLAS_CORETYPE is set (the user chose) or the BLAS is not
 * OpenBLAS. Decided at the first call; agmm never sets the variable. */
const char *agmm_blas_advice(void);
/* Threads the BLAS uses per call (agmm makes it 1: its workers are the
 * parallelism), or -1 where the BLAS cannot say. */
int agmm_blas_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* AGMM_EXT_H */
