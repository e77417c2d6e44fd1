/* Reproducible inputs: every value is a pure function of (seed, stream,
 * index), so any rank can make any shard (the check regenerates all of
 * them) without communication. Values are randn * 0.1, as in the original
 * example, rounded to the input dtype. */
#ifndef AGMM_TOOL_INPUTS_H
#define AGMM_TOOL_INPUTS_H

#include <stdint.h>

#include "agmm.h"

enum { AGMM_STREAM_A = 1, AGMM_STREAM_W = 2 };

/* n values of stream (seed, kind, id) in `dtype` into dst. */
agmm_status_t agmm_inputs_fill(uint64_t seed, int kind, int64_t id,
                               agmm_dtype_t dtype, void *dst, int64_t n);

#endif
