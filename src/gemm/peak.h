/*
 * The physical peak of one core, measured, for the instruction a GEMM's
 * kernel is built from.
 *
 * A register-only loop of independent multiply-adds (no memory traffic, no
 * dependency chain shorter than the instruction's latency x throughput)
 * times how many flops (int8: ops) one core retires per second with one
 * instruction (a kernel, agmm_peak_kernel_t):
 *
 *   TDPBF16PS        (AMX-BF16)     16384 flops per instruction
 *   TDPBSSD, TDPBUSD (AMX-INT8)     32768 ops
 *   VPDPBUSD zmm     (AVX512_VNNI)    128 ops
 *   VDPBF16PS zmm    (AVX512_BF16)     64 flops
 *   VFMADD231PS zmm  (AVX-512F)        32 flops
 *   VFMADD231PS ymm  (AVX2 + FMA)      16 flops
 *   "scalar"         (plain C)          2 flops per multiply-add
 *
 * Which instruction is the peak of a GEMM (agmm_peak_kernel_for): the one
 * of the kind of unit the kernel that ran uses, and within it the best the
 * CPU has, decided by the path, the implementation string and the CPU
 * (never the CPU's name):
 *   - the F32 path, or fp32 data: the best fp32 FMA (zmm, ymm, scalar),
 *     whatever the kernel itself uses (OpenBLAS's "sgemm:Prescott" is an
 *     SSE3 kernel; its peak is still the core's VFMADD231PS zmm: of_peak
 *     shows how far below the core a kernel is);
 *   - NATIVE bf16: TDPBF16PS when the implementation names AMX (contains
 *     "amx", e.g. oneDNN's "brg:avx512_core_amx_bf16") and the CPU has it,
 *     else VDPBF16PS where the CPU has AVX512_BF16 (an AVX-512 kernel
 *     cannot use the tiles), else the fp32 FMA (bf16 is then computed in
 *     fp32);
 *   - NATIVE fp16: the fp32 FMA (the probe has no fp16 instruction);
 *   - agmm's int4 / int8 weight kernels (an implementation "wq:..."), any
 *     A dtype: the fp32 FMA (they widen rows to fp32 and multiply with it),
 *     but VDPBF16PS for the dot kernel ("wq:avx512bf16...", bf16 A, not
 *     the f32 path), which multiplies bf16 pairs with it;
 *   - int8 (W8A8, always native): TDPBSSD when the implementation names
 *     AMX and the CPU has AMX-INT8, else VPDPBUSD zmm where there is VNNI
 *     (oneDNN's s8 x s8 kernels are built on it), else the fp32 FMA.
 * agmm_peak_gflops(dtype) without a path is the best for the dtype
 * (TDPBF16PS for bf16 where there is AMX).
 *
 * The probe runs on the calling thread (it pins nothing) and takes about
 * 0.1 s per instruction; agmm_peak_kernel_gflops (and everything built on
 * it) measures each instruction once per process and then returns the
 * cached rate. It is a ceiling for the GEMM rate per core, not a
 * prediction: a real GEMM also loads, stores and packs.
 */
#ifndef AGMM_GEMM_PEAK_H
#define AGMM_GEMM_PEAK_H

#include "agmm.h"

/* The dtype ladder of instruction sets, weakest first. */
typedef enum agmm_peak_isa {
    AGMM_PEAK_SCALAR = 0,
    AGMM_PEAK_AVX2_FMA = 1,    /* VFMADD231PS ymm */
    AGMM_PEAK_AVX512F = 2,     /* VFMADD231PS zmm */
    AGMM_PEAK_AVX512_BF16 = 3, /* VDPBF16PS zmm (and VFMADD231PS zmm) */
    AGMM_PEAK_AMX_BF16 = 4,    /* TDPBF16PS (AMX-TILE + AMX-BF16 + OS) */
} agmm_peak_isa_t;

/* The instructions the probe times. */
typedef enum agmm_peak_kernel {
    AGMM_PEAK_K_NONE = -1,
    AGMM_PEAK_K_SCALAR = 0, /* "scalar" */
    AGMM_PEAK_K_FMA_YMM,    /* "VFMADD231PS ymm" */
    AGMM_PEAK_K_FMA_ZMM,    /* "VFMADD231PS zmm" */
    AGMM_PEAK_K_DPBF16_ZMM, /* "VDPBF16PS zmm" */
    AGMM_PEAK_K_AMX_BF16,   /* "TDPBF16PS" */
    AGMM_PEAK_K_VNNI_ZMM,   /* "VPDPBUSD zmm" (u8 x s8 -> s32) */
    AGMM_PEAK_K_AMX_SSD,    /* "TDPBSSD" (s8 x s8 -> s32) */
    AGMM_PEAK_K_AMX_USD,    /* "TDPBUSD" (u8 x s8 -> s32) */
    AGMM_PEAK_NKERNELS
} agmm_peak_kernel_t;

/* The best instruction set of the ladder this CPU (and OS) supports,
 * probed once. AMX counts only once Linux granted the tile state. */
agmm_peak_isa_t agmm_peak_isa(void);

/* 1 when this CPU and OS can run kernel k, else 0. */
int agmm_peak_kernel_available(agmm_peak_kernel_t k);
/* The instruction's name (above), NULL for an invalid k. */
const char *agmm_peak_kernel_instr(agmm_peak_kernel_t k);
/* Measured GFLOP/s (int8: GOP/s) of the calling thread's core with
 * kernel k: the first call per k measures, later ones return that rate.
 * 0 where k is unavailable or invalid. */
double agmm_peak_kernel_gflops(agmm_peak_kernel_t k);
/* The same, measured afresh (not cached): for tests. */
double agmm_peak_kernel_measure(agmm_peak_kernel_t k);

/* The best kernel for dtype with instruction sets up to isa (no path,
 * no implementation): NONE for an invalid dtype. */
agmm_peak_kernel_t agmm_peak_kernel_isa(agmm_dtype_t dtype,
                                        agmm_peak_isa_t isa);

/* The rule above, pure: the kernel whose peak is the peak of a GEMM of
 * dtype on path `path` (F32, or NATIVE; AUTO counts as NATIVE) run by
 * implementation `impl` (NULL or "" names no AMX) on a CPU whose ladder
 * reaches `isa`; INT8 (native only): TDPBSSD for an implementation naming
 * AMX, else VPDPBUSD zmm where there is VNNI. NONE for an invalid dtype or
 * path. */
agmm_peak_kernel_t agmm_peak_kernel_for(agmm_dtype_t dtype,
                                        agmm_gemm_path_t path, const char *impl,
                                        agmm_peak_isa_t isa);

/* The peak (cached as agmm_peak_kernel_gflops) of the GEMM that ran on
 * this CPU: agmm_peak_kernel_for(dtype, path, impl, agmm_peak_isa()).
 * *instr (if not NULL) names the instruction; 0 and NULL when invalid. */
double agmm_peak_gflops_for(agmm_dtype_t dtype, agmm_gemm_path_t path,
                            const char *impl, const char **instr);

/* The instruction agmm_peak_gflops() times for dtype on this CPU, e.g.
 * "TDPBF16PS", "VDPBF16PS zmm", "VFMADD231PS zmm", "VFMADD231PS ymm",
 * "scalar". Does not time anything. NULL for an invalid dtype. */
const char *agmm_peak_instr(agmm_dtype_t dtype);

/* Peak GFLOP/s (cached) of the calling thread's core for dtype's best
 * instruction; *instr (if instr is not NULL) names the instruction. 0 for
 * an invalid dtype (then *instr is NULL). */
double agmm_peak_gflops(agmm_dtype_t dtype, const char **instr);

/* The same, with the instruction set capped at `max_isa` (clamped to what
 * the CPU has): how the tests reach the fallbacks on any machine. */
double agmm_peak_gflops_isa(agmm_dtype_t dtype, agmm_peak_isa_t max_isa,
                            const char **instr);

#endif
