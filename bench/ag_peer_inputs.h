/* agmm_ag_peer's inputs (ag_peer.c): every rank's rows of A and weight
 * from hashed streams, and the check of a round's C against double
 * dot products of the regenerated inputs. */
#ifndef AGMM_AG_PEER_INPUTS_H
#define AGMM_AG_PEER_INPUTS_H

#include <stdint.h>

#include "agmm.h"

#define NCHECK 64

/* The streams: rank r's rows of A, rank r's weight. */
uint64_t peer_stream_a(int r);
uint64_t peer_stream_w(int r);

/* dst[0..n) of a stream in dt (uniform in [-1, 1), rounded to dt); int8
 * is filled by peer_fill_int8 instead (nothing done here). */
void peer_fill(agmm_dtype_t dt, uint64_t stream, void *dst, int64_t n);

/* int8: a [rows, cols] block of a stream (row stride ld_stream in the
 * stream, first element first) in fp32, quantized along axis into q and
 * scales. 0 or -1 (printed). */
int peer_fill_int8(uint64_t stream, uint64_t first, int64_t rows, int64_t cols,
                   int64_t ld_stream, agmm_quant_axis_t axis, int8_t *q,
                   float *scales);

/* NCHECK entries of this rank's c [M, N] (M = m_local x the world's size;
 * ar: gemm-ar's sum over every rank's part of K) against double-precision
 * dot products of the regenerated inputs; rows spread over every source
 * rank. out[0] = max |diff|, out[1] = max |diff| / sum_k |a*w|. Aborts
 * the world if it runs out of memory. */
void peer_check(agmm_dtype_t dt, int64_t m_local, int64_t K, int64_t N, int ar,
                int rank, const float *c, double *out);

#endif
