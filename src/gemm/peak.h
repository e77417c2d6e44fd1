/*
 * The physical peak of one core for a dtype's GEMM instruction, measured.
 *
 * A register-only loop of independent multiply-adds (no memory traffic, no
 * dependency chain shorter than the instruction's latency x throughput)
 * times how many flops one core retires per second with the instruction a
 * GEMM of that dtype is built from on this CPU:
 *
 *   bf16        VDPBF16PS zmm    (AVX512_BF16)  64 flops per instruction
 *   fp32, fp16  VFMADD231PS zmm  (AVX-512F)     32 flops per instruction
 *   fallbacks   VFMADD231PS ymm  (AVX2 + FMA)   16 flops per instruction
 *               "scalar"         (plain C)       2 flops per multiply-add
 *
 * fp16 is computed in fp32 after conversion on CPUs without AVX512_FP16
 * (agmm converts fp16 and bf16 tiles to fp32 for the fp32 GEMM), and bf16
 * without AVX512_BF16 likewise, so both then get the fp32 instruction.
 *
 * The probe runs on the calling thread (it pins nothing), takes about
 * 0.1 s and is meant to be called once, at the start of a benchmark. It is
 * a ceiling for the GEMM rate per core, not a prediction: a real GEMM also
 * loads, stores and packs.
 */
#ifndef AGMM_GEMM_PEAK_H
#define AGMM_GEMM_PEAK_H

#include "agmm.h"

/* Instruction sets the probe knows, weakest first. */
typedef enum agmm_peak_isa {
    AGMM_PEAK_SCALAR = 0,
    AGMM_PEAK_AVX2_FMA = 1,    /* VFMADD231PS ymm */
    AGMM_PEAK_AVX512F = 2,     /* VFMADD231PS zmm */
    AGMM_PEAK_AVX512_BF16 = 3, /* VDPBF16PS zmm (and VFMADD231PS zmm) */
} agmm_peak_isa_t;

/* The best instruction set this CPU (and OS) supports, probed once. */
agmm_peak_isa_t agmm_peak_isa(void);

/* The instruction agmm_peak_gflops() times for dtype on this CPU, e.g.
 * "VDPBF16PS zmm", "VFMADD231PS zmm", "VFMADD231PS ymm", "scalar". Does
 * not time anything. NULL for an invalid dtype. */
const char *agmm_peak_instr(agmm_dtype_t dtype);

/* Measured peak GFLOP/s of the calling thread's core for dtype's
 * instruction; *instr (if instr is not NULL) names the instruction. 0 for
 * an invalid dtype (then *instr is NULL). */
double agmm_peak_gflops(agmm_dtype_t dtype, const char **instr);

/* The same, with the instruction set capped at `max_isa` (clamped to what
 * the CPU has): how the tests reach the fallbacks on any machine. */
double agmm_peak_gflops_isa(agmm_dtype_t dtype, agmm_peak_isa_t max_isa,
                            const char **instr);

#endif
