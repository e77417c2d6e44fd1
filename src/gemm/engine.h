/*
 * GEMM engines: the interface the schedules call for their tile GEMMs, the
 * way the transport has its ops table (transport.h).
 *
 * An engine multiplies row tiles of A (rows x k, in the engine's input
 * dtype, row stride lda) by a weight it prepared once, writing fp32 C rows
 * (row stride ldc) at any row offset. The weight is prepared per column
 * range: each GEMM worker owns a contiguous range of columns, and an
 * engine's blocked layout cannot be sliced portably, so the plan prepares
 * one weight per column group (ops/common/gemm_plan.c).
 *
 * Life of a prepared weight (all but run on one thread, the plan's owner):
 *   prepare  once per plan: allocates the weight in the engine's layout and
 *            creates everything a run needs for each row count the
 *            schedules will use (oneDNN: one primitive per row count);
 *   load     once per agmm_plan_set_weight: the weight's values, converted
 *            / reordered into the prepared layout (creates nothing);
 *   run      from any number of threads at once, each with its own scratch
 *            (scratch_bytes); never creates a primitive for a row count
 *            given to prepare;
 *   destroy.
 * Errors are logged once, where they are detected (agmm_error).
 *
 * Engines (one file each): gemm_onednn.c (when built with AGMM_ONEDNN),
 * gemm_openblas.c. The reference GEMM (check/gemm_ref.c) is independent of them.
 */
#ifndef AGMM_GEMM_ENGINE_H
#define AGMM_GEMM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

typedef struct agmm_gemm_prep agmm_gemm_prep_t; /* engine-specific */

/* What a prepared weight serves. */
typedef struct agmm_gemm_shape {
    agmm_dtype_t dtype;  /* of A and W as the user gives them */
    int64_t k;           /* inner dimension */
    int64_t ncols;       /* columns of this range */
    int64_t ldw;         /* row stride of the weight given to load */
    int64_t lda, ldc;    /* row strides of every run's A and C */
    const int64_t *rows; /* the row counts runs will use (duplicates ok) */
    int nrows;
} agmm_gemm_shape_t;

typedef struct agmm_gemm_engine {
    const char *name; /* "onednn", "openblas" */
    agmm_gemm_engine_kind_t kind;
    /* 1 when a call over one tile costs what the same rows cost inside one
     * big call (no per-call packing of the weight): the fused schedule then
     * computes tiles one by one as they arrive. */
    int cheap_tile_calls;
    const char *(*version)(void);
    /* The dtype run() takes for user dtype dt: dt itself, or FP32 when the
     * caller converts the tile first (convert.c). */
    agmm_dtype_t (*input_dtype)(agmm_dtype_t dt);
    /* Bytes a prepared weight of k x ncols holds (for the plan's estimate). */
    uint64_t (*weight_bytes)(agmm_dtype_t dt, int64_t k, int64_t ncols);
    agmm_status_t (*prepare)(const agmm_gemm_shape_t *shape,
                             agmm_gemm_prep_t **out);
    /* w: row 0, first column of the range, in shape->dtype, stride ldw. */
    agmm_status_t (*load)(agmm_gemm_prep_t *prep, const void *w);
    /* C[m, ncols] = A[m, k] @ W. a in input_dtype(dtype); scratch: at least
     * scratch_bytes(prep) bytes of this thread's own (NULL when 0). */
    agmm_status_t (*run)(agmm_gemm_prep_t *prep, int64_t m, const void *a,
                         float *c, void *scratch);
    size_t (*scratch_bytes)(const agmm_gemm_prep_t *prep);
    /* The implementation it picked, e.g. "brg:avx512_core_bf16". */
    const char *(*impl)(const agmm_gemm_prep_t *prep);
    void (*destroy)(agmm_gemm_prep_t *prep);
} agmm_gemm_engine_t;

/* The engine of `kind` (AUTO: oneDNN when built, else OpenBLAS), or NULL
 * when it is not built in. */
const agmm_gemm_engine_t *agmm_gemm_engine_get(agmm_gemm_engine_kind_t kind);

/* Primitives (or other engine objects costing a creation) made so far in
 * this process, over every engine: constant while rounds run. */
uint64_t agmm_gemm_engine_created(void);
/* For engines: count one creation. Thread-safe. */
void agmm_gemm_engine_count_creation(void);

extern const agmm_gemm_engine_t agmm_gemm_engine_openblas;
#ifdef AGMM_HAVE_ONEDNN
extern const agmm_gemm_engine_t agmm_gemm_engine_onednn;
#endif

#endif /* AGMM_GEMM_ENGINE_H */
