/* The GEMM half of agmm_ag_peer (ag_peer.c): one GEMM call over the whole
 * gathered matrix, C[M, N] (fp32) = A[M, K] @ W[K, N], with the field's
 * standard CPU library, one thread. Everything that can be done once
 * (weight conversion or reorder, primitive creation) is done in create,
 * outside the timed rounds; run is what a round costs. */
#ifndef AGMM_AG_PEER_H
#define AGMM_AG_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

typedef struct ag_engine ag_engine_t;
struct ag_engine {
    char name[64];  /* library and version, e.g. "oneDNN 2.6.3" */
    char what[256]; /* what a round's GEMM (+ conversion) does, in words */
    char impl[128]; /* oneDNN's implementation string, OpenBLAS's kernel */
    /* c = a @ w, a [M, K] in the plan's dtype (row-major), c [M, N]
     * fp32 (row-major). 0 or -1 (printed). */
    int (*run)(ag_engine_t *e, const void *a, float *c);
    /* int8 (onednn-int8): the gathered rows' scales [M], set before run
     * (applied to C's rows after the matmul); NULL otherwise */
    const float *row_scale;
    void (*destroy)(ag_engine_t *e);
    void *state;
};

/* Prepare the engine for M x K x N in dtype with weight w ([K, N],
 * row-major, in dtype; the engine keeps its own copy). 0, or -1 with one
 * line on stderr. */
int ag_engine_openblas(ag_engine_t *e, agmm_dtype_t dt, int64_t M, int64_t K,
                       int64_t N, const void *w);
#ifdef AG_PEER_ONEDNN
int ag_engine_onednn(ag_engine_t *e, agmm_dtype_t dt, int64_t M, int64_t K,
                     int64_t N, const void *w);
/* bf16/fp16 A converted to fp32 each round, one fp32 matmul against the
 * weight converted to fp32 here. */
int ag_engine_onednn_f32(ag_engine_t *e, agmm_dtype_t dt, int64_t M, int64_t K,
                         int64_t N, const void *w);
/* W8A8: one s8 x s8 -> f32 matmul of the gathered int8 rows with the int8
 * weight w ([K, N]), its per-column scales w_scale [N] as oneDNN output
 * scales (mask 2: per column of C), then C's rows times e->row_scale. */
int ag_engine_onednn_int8(ag_engine_t *e, int64_t M, int64_t K, int64_t N,
                          const int8_t *w, const float *w_scale);
#endif

#endif
