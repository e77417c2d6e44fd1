/*
 * The AMX kernels of the peak probe (peak.h, peak_amx.c): tile matrix
 * multiply-adds on accumulators that stay in tiles, no memory traffic in
 * the loop. Internal to peak.c.
 */
#ifndef AGMM_GEMM_PEAK_AMX_H
#define AGMM_GEMM_PEAK_AMX_H

#include <stdint.h>

/* Tiles each kernel accumulates into per iteration (one instruction
 * each). */
#define AGMM_PEAK_AMX_ACC 6

/* 1 when the CPU has AMX-TILE and AMX-BF16 (int8 = 0) or AMX-INT8
 * (int8 = 1) and Linux granted this process the tile data state
 * (arch_prctl ARCH_REQ_XCOMP_PERM, asked once), else 0. */
int agmm_peak_amx_has(int int8);

/* `iters` iterations (>= 1) of AGMM_PEAK_AMX_ACC instructions: TDPBF16PS,
 * TDPBSSD, TDPBUSD. Only where agmm_peak_amx_has() says so (elsewhere they
 * return 0 without running anything). The result keeps the work alive. */
float agmm_peak_amx_bf16(uint64_t iters);
float agmm_peak_amx_ssd(uint64_t iters);
float agmm_peak_amx_usd(uint64_t iters);

#endif
