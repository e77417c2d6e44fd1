/* The prefill path's library GEMM (libgemm.c): a plain
 *   prod[m, nc] (fp32, row stride nc) = A[m, k] (row stride lda) x W[k, nc]
 * (W a dense row-major panel, row stride nc, from agmm_wq_unpack) on
 * oneDNN's matmul when agmm is built with it (bf16 panels for bf16 A where
 * this oneDNN has a non-reference bf16 matmul, fp32 panels for fp32 A),
 * else on the CBLAS sgemm (fp32 A) or OpenBLAS's cblas_sbgemm (bf16 A).
 * fp16 A, or a library whose only kernel is oneDNN's reference one: none
 * (the wq engine keeps its own kernels).
 *
 * oneDNN's primitives have fixed sizes: one per (row count, panel width)
 * given to agmm_wq_lib_make, all created there, with user scratchpads
 * (the caller's per-worker scratch); created and run at one OpenMP thread
 * on the calling thread (onednn/prep.c's note). BLAS: any m.
 *
 * Threads: make and destroy on one thread; run from any number at once,
 * each with its own scratch and prod. */
#ifndef AGMM_GEMM_WQ_LIBGEMM_H
#define AGMM_GEMM_WQ_LIBGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

typedef struct agmm_wq_lib agmm_wq_lib_t;

typedef struct agmm_wq_lib_cfg {
    agmm_dtype_t a_dtype; /* FP32 or BF16 (else none) */
    int64_t k, lda;
    const int64_t *ms; /* the row counts runs will use (> 0; dups ok) */
    int nms;
    const int64_t *ns; /* the panel widths runs will use (> 0) */
    int nns;
} agmm_wq_lib_cfg_t;

/* With out NULL: only the sizes (no primitive is created): *scratch the
 * per-run scratch bytes (the largest scratchpad), *bf16 the panel dtype.
 * With out: the same, and *out made (oneDNN's primitives created, each
 * counted by agmm_gemm_engine_count_creation). AGMM_ERR_UNSUPPORTED,
 * NOT logged, when no library GEMM fits (the caller falls back to its own
 * kernels); other errors logged. */
agmm_status_t agmm_wq_lib_make(const agmm_wq_lib_cfg_t *cfg,
                               agmm_wq_lib_t **out, size_t *scratch, int *bf16);
/* Can run take m rows of panel width nc? */
int agmm_wq_lib_has(const agmm_wq_lib_t *l, int64_t m, int64_t nc);
/* Its name for the engine's impl string: "onednn brg:avx512_core_bf16",
 * "openblas sbgemm", "cblas sgemm". */
const char *agmm_wq_lib_name(const agmm_wq_lib_t *l);
/* The product (above); scratch: the make's scratch bytes, 64-aligned.
 * AGMM_ERR_INVALID_ARG (logged) for an (m, nc) it was not made for. */
agmm_status_t agmm_wq_lib_run(const agmm_wq_lib_t *l, int64_t m, int64_t nc,
                              const void *a, const void *w, float *prod,
                              void *scratch);
void agmm_wq_lib_destroy(agmm_wq_lib_t *l); /* NULL: nothing */

#endif /* AGMM_GEMM_WQ_LIBGEMM_H */
