/* Reproducible inputs: every value is a pure function of (seed, stream,
 * index), so any rank can make any shard (the check regenerates all of
 * them) without communication. Values are randn * 0.1, as in the original
 * example, rounded to the input dtype. */
#ifndef AGMM_TOOL_INPUTS_H
#define AGMM_TOOL_INPUTS_H

#include <stdint.h>

#include "agmm.h"

enum { AGMM_STREAM_A = 1, AGMM_STREAM_W = 2, AGMM_STREAM_BIAS = 3 };

/* n values of stream (seed, kind, id) in `dtype` into dst. */
agmm_status_t agmm_inputs_fill(uint64_t seed, int kind, int64_t id,
                               agmm_dtype_t dtype, void *dst, int64_t n);

/* int8 (W8A8): a [rows, cols] matrix of stream (seed, kind, id), the same
 * fp32 values agmm_inputs_fill makes for fp32, quantized symmetrically
 * along `axis` (agmm_quantize: per row, per column or one scale) into q
 * [rows, cols] and scales ([rows], [cols] or [1]; 0 for an empty one). */
agmm_status_t agmm_inputs_fill_int8(uint64_t seed, int kind, int64_t id,
                                    int64_t rows, int64_t cols,
                                    agmm_quant_axis_t axis, int8_t *q,
                                    float *scales);

/* A quantized weight (--weight-dtype int8|int4): the [rows, cols] fp32
 * values agmm_inputs_fill makes for stream (seed, kind, id), quantized by
 * agmm_quantize_weight (bits 8 or 4, group 0|32|64|128, symmetric unless
 * asym) into the plain layout: q, scales [ceil(rows/G)][cols] and, when
 * asym, zeros (else untouched). rows 0: nothing written. */
agmm_status_t agmm_inputs_fill_wq(uint64_t seed, int kind, int64_t id,
                                  int64_t rows, int64_t cols, int bits,
                                  int64_t group, int asym, void *q,
                                  float *scales, uint8_t *zeros);
/* Bytes of q and elements of scales (and zeros) of such a weight (rows 0:
 * 0 and 0). */
size_t agmm_inputs_wq_bytes(int64_t rows, int64_t cols, int bits);
int64_t agmm_inputs_wq_groups(int64_t rows, int64_t cols, int64_t group);

#endif
