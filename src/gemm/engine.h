/*
 * GEMM engines: the interface the schedules call for their tile GEMMs, the
 * way the transport has its ops table (transport.h), and the attributes a
 * call can carry (agmm_gemm_attr_t: accumulate, bias, activation, C dtype,
 * per-row / per-column scales), fixed when the weight is prepared.
 *
 * An engine multiplies row tiles of A (rows x k, in attr.a_dtype, row
 * stride lda) by a weight it prepared once, writing C rows (attr.c_dtype,
 * row stride ldc) at any row offset. The weight is prepared per column
 * range: each GEMM worker owns a contiguous range of columns, and an
 * engine's blocked layout cannot be sliced portably, so the plan prepares
 * one weight per column group (ops/common/gemm_plan.c). A second prep of
 * the same weight with other attributes shares it (prepare's `share`).
 *
 * Life of a prepared weight (all but run on one thread, the plan's owner):
 *   estimate the bytes prepare will take (weight, per-worker scratch);
 *   prepare  once per plan: allocates the weight in the engine's layout and
 *            creates everything a run needs for each row count the
 *            schedules will use (oneDNN: one primitive per row count);
 *   load     once per agmm_plan_set_weight: the weight's values (and bias,
 *            scales), converted / reordered into the prepared layout
 *            (creates nothing);
 *   run      from any number of threads at once, each with its own scratch
 *            (scratch_bytes); never creates a primitive for a row count
 *            given to prepare;
 *   destroy.
 * Errors are logged once, where they are detected (agmm_error).
 *
 * Engines, each an entry of the list that chooses them (engine_list.h):
 * onednn/ (when built with AGMM_ONEDNN; its table is onednn/cols.c),
 * gemm_openblas.c (with epilogue.c for the attributes), wq/engine.c
 * (agmm's int4 / int8 weight kernels, gemm/wq: quantized weights only) and
 * wq/engine_bf16w.c (agmm's bf16-weight kernel). What they all call back
 * into is here and in engine.c: the attributes' initialiser and names, the
 * checks of shape, attr and share, the count of creations. The
 * test oracles are apart from them: check/gemm_ref.c is plain
 * double-accumulating loops; check/reference.c (agmm_reference, the
 * all-gather-GEMM oracle of `agmm run` and the tests) shares one thing with the
 * OpenBLAS engine, the CBLAS sgemm (agmm_gemm_f32), called once on the whole
 * fp32-converted problem: no tiles, no column ranges, no attributes, no engine
 * code.
 */
#ifndef AGMM_GEMM_ENGINE_H
#define AGMM_GEMM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

typedef struct agmm_gemm_prep agmm_gemm_prep_t; /* engine-specific */

/* The activation applied after the bias (and after the accumulate). */
typedef enum agmm_gemm_act {
    AGMM_GEMM_ACT_NONE = 0,
    AGMM_GEMM_ACT_RELU,
    AGMM_GEMM_ACT_GELU_TANH,
    AGMM_GEMM_ACT_GELU_ERF,
    AGMM_GEMM_ACT_SILU,
} agmm_gemm_act_t;
/* "none", "relu", "gelu-tanh", "gelu-erf", "silu" ("invalid" otherwise). */
const char *agmm_gemm_act_name(agmm_gemm_act_t act);

/* What a call computes beyond A @ W, fixed at prepare:
 *   C[i,j] = act( a_scale[i] * w_scale[j] * sum_k A[i,k] W[k,j] + bias[j]
 *                 + (accumulate ? C_old[i,j] : 0) )
 * A zero-initialised struct with a_dtype = w_dtype = FP32
 * (agmm_gemm_attr_init(&a, dt_a, dt_w)) is the plain overwrite in fp32 out.
 *
 * INT8 (W8A8; a_dtype = w_dtype = INT8, a_scale = w_scale = 1, c_dtype
 * FP32, BF16 or FP16; oneDNN only, k <= 65536): the sum over k is exact
 * in int32, then every engine path does, in this order, each step one
 * fp32 operation rounded to nearest even:
 *   x = (float)acc;  x = x * w_scale[j];  x = x * a_scale[i];
 *   x = x + bias[j] (bias);  x = x + C_old[i,j] (accumulate);
 *   C[i,j] = act(x), rounded to c_dtype
 * (epilogue.h, agmm_gemm_epilogue_s32): a result depends on nothing but
 * the inputs, whatever the engine's kernel, variant or row count. The
 * double oracle and the bound a result meets are agmm_reference_int8 and
 * agmm_int8_bound (agmm_ext.h). */
typedef struct agmm_gemm_attr {
    int accumulate; /* 1: C += (beta 1). Must add the finished fp32 product to
                       C_old once (one fp32 rounding of C_old + acc), so
                       fixed-order sums keep their bits; an engine whose beta
                       would add C_old inside the k loop (OpenBLAS's K panels)
                       computes into its scratch and adds. */
    int bias;       /* 1: + a per-column fp32 bias, given to load */
    agmm_gemm_act_t act;
    agmm_dtype_t a_dtype; /* A as run() receives it (the compute dtype: fp32, or
                             = w_dtype) */
    agmm_dtype_t w_dtype; /* W as load() receives it (converted at load when
                             a_dtype differs) */
    agmm_dtype_t c_dtype; /* C: FP32 (0 is FP16 in agmm_dtype_t, so
                             agmm_gemm_attr_init sets FP32), BF16, FP16 */
    int a_scale;          /* 1: per-row fp32 scales of A, given to run */
    int w_scale;          /* 1: per-column fp32 scales of W, given to load */
    /* INT8 only (ignored otherwise): 0 runs s8 x s8 -> s32; 1 runs u8 x s8
     * -> s32 on A + 128 (a pass into the scratch), subtracting 128 *
     * sum_k W[k,j] (computed at load) from each int32 sum. Both give the
     * same exact int32 sums, so the same bits in C; they differ in speed
     * only (which kernel the CPU has: VNNI's VPDPBUSD is u8 x s8). */
    int s8_as_u8;
    /* A quantized weight (W8A16 / W4A16: the wq engine, wq/engine.c; every
     * other engine refuses one, agmm_gemm_check): wq_bits 4 or 8 (0: W in
     * w_dtype, everything above), its group (32, 64, 128, or 0 = k) and
     * wq_asym (1: uint8 zero points). load then takes the plain layout
     * (gemm/wq/wq.h) in the operand's w, wq_scales and wq_zeros; w_dtype
     * is the plan's A dtype (not read). */
    int wq_bits;
    int64_t wq_group;
    int wq_asym;
    /* wq_a8 (with wq_bits): A quantized per row to int8 for the product
     * (agmm_plan_desc_t.a_quant INT8, W4A8 / W8A8 in groups): every call
     * on the wq engine's int8-dot kernels (gemm/wq/wq.h), no prefill path. */
    int wq_a8;
    /* Options of the oneDNN engine (other engines ignore them): its column
     * parts (onednn/cols.c): parts of part_cols columns whenever a range
     * is wider (> 0), the engine's own choice (0, what agmm_gemm_attr_init
     * sets), or never (< 0), through a buffer of part_buf_rows rows (> 0;
     * 0: the engine's). A prep made with share takes its base's parts. */
    int64_t part_cols;
    int64_t part_buf_rows;
    /* INT8 on the oneDNN engine as two 7-bit weight halves (the way it
     * runs on cores without VNNI, onednn/s8.c) even where its 8-bit sums
     * are exact (nonzero: the tests' way to run that path anywhere), or
     * only where needed (0). */
    int s8_split;
} agmm_gemm_attr_t;
/* Zero everything, then the two dtypes and c_dtype = FP32. */
void agmm_gemm_attr_init(agmm_gemm_attr_t *attr, agmm_dtype_t a_dtype,
                         agmm_dtype_t w_dtype);

/* The weight and what comes with it, for load. */
typedef struct agmm_gemm_operand {
    const void *w;     /* row 0, first column of the range, in attr.w_dtype, row
                          stride shape.ldw */
    const float *bias; /* [ncols] when attr.bias, else NULL */
    const float *w_scale; /* [ncols] when attr.w_scale, else NULL */
    /* attr.wq_bits: w is the plain layout's q (one byte per column per row,
     * int4: per pair of rows) at the range's first column; wq_scales (fp32)
     * and wq_zeros (attr.wq_asym, else NULL) are its [ceil(k/G)] rows at
     * the same column; all three of row stride shape.ldw. */
    const float *wq_scales;
    const uint8_t *wq_zeros;
} agmm_gemm_operand_t;

/* What a prepared weight serves (the dtypes are in the attr). */
typedef struct agmm_gemm_shape {
    int64_t k;           /* inner dimension */
    int64_t ncols;       /* columns of this range */
    int64_t ldw;         /* row stride of the weight given to load */
    int64_t lda;         /* row stride of every run's A (elements of a_dtype) */
    int64_t ldc;         /* row stride of every run's C (elements of c_dtype) */
    const int64_t *rows; /* the row counts runs will use (duplicates ok) */
    int nrows;
    /* attr.a_scale: floats from one row's A scale to the next's in run's
     * a_scale (0 or 1: contiguous; the all-gather window keeps each int8
     * row's scale after its values, so there it is lda / 4). Never
     * negative. */
    int64_t ld_a_scale;
} agmm_gemm_shape_t;

typedef struct agmm_gemm_engine {
    const char *name; /* "onednn", "openblas", "wq" */
    agmm_gemm_engine_kind_t kind;
    /* 1 when a call over one tile costs what the same rows cost inside one
     * big call (no per-call packing of the weight): the fused schedule then
     * computes tiles one by one as they arrive. */
    int cheap_tile_calls;
    const char *(*version)(void);
    /* The A dtype the engine reads natively for user dtype dt: dt itself,
     * or FP32 when the caller converts the tile first (convert.c). INT8:
     * INT8 from an engine with int8 products; FP32 from one without, and
     * then plans refuse int8 (there is no exact fp32 path for it: path.c)
     * and so does its prepare. */
    agmm_dtype_t (*input_dtype)(agmm_dtype_t dt);
    /* NULL when input_dtype(dt) == dt, else why not, for messages ("this
     * oneDNN's s8 x s8 matmul (gemm:jit) is not exact on this CPU ..."). */
    const char *(*why_not_native)(agmm_dtype_t dt);
    /* What a prepared weight and each worker's scratch will take, exactly
     * what prepare then allocates (the plan's memory booking reads it; a
     * test checks estimate == actual): oneDNN builds the same primitive
     * descriptors prepare builds (no primitives) and queries the weight md
     * size and the largest scratchpad; OpenBLAS: k*ncols*4, and the scratch
     * the accumulate / c_dtype passes need. Both count the fp32 bias and
     * w_scale copies (ncols*4 each) as weight bytes; oneDNN's INT8 also
     * the u8s8 compensation (ncols*4) and, per worker, the int32 sums and
     * the A pass (onednn/s8.c). share != 0: no weight
     * bytes (see prepare). Refuses what prepare refuses. */
    agmm_status_t (*estimate)(const agmm_gemm_shape_t *shape,
                              const agmm_gemm_attr_t *attr, int share,
                              uint64_t *weight_bytes, uint64_t *scratch_bytes);
    /* share: NULL, or a prep of the same k/ncols/ldw/w_dtype/bias/w_scale
     * (and a_dtype: the prepared layout is the compute dtype's) whose
     * prepared weight (and bias, scales) this one uses instead of owning
     * one: e.g. the same W with accumulate on. load on such a prep is
     * refused (AGMM_ERR_BAD_STATE); loading `share` updates both; `share`
     * must outlive it. An attribute the engine cannot do is refused with
     * AGMM_ERR_UNSUPPORTED and a message naming it
     * ("gemm: openblas: c_dtype fp16 ..."), never computed otherwise. */
    agmm_status_t (*prepare)(const agmm_gemm_shape_t *shape,
                             const agmm_gemm_attr_t *attr,
                             const agmm_gemm_prep_t *share,
                             agmm_gemm_prep_t **out);
    agmm_status_t (*load)(agmm_gemm_prep_t *prep, const agmm_gemm_operand_t *w);
    /* A new bias ([ncols] fp32) alone, for a prep with attr.bias (refused
     * otherwise, and on a prep made with share, like load): what load
     * would have taken of it, the weight untouched; before or after load
     * (the plan's agmm_plan_set_bias). Creates nothing. */
    agmm_status_t (*load_bias)(agmm_gemm_prep_t *prep, const float *bias);
    /* C = ... (the attr's formula) for m rows. a in attr.a_dtype (stride
     * lda); a_scale: row i's at a_scale[i * ld_a_scale] (ld_a_scale 0:
     * [i]) when attr.a_scale, else NULL; c in attr.c_dtype
     * (stride ldc); scratch: scratch_bytes(prep) bytes of this thread's own
     * (NULL when 0). */
    agmm_status_t (*run)(agmm_gemm_prep_t *prep, int64_t m, const void *a,
                         const float *a_scale, void *c, void *scratch);
    size_t (*scratch_bytes)(const agmm_gemm_prep_t *prep);
    /* Bytes of weight memory this prep owns (0 for a prep made with
     * share): what estimate said. */
    uint64_t (*weight_bytes)(const agmm_gemm_prep_t *prep);
    /* The implementation it picked, e.g. "brg:avx512_core_bf16". The
     * oneDNN engine refuses (estimate and prepare, AGMM_ERR_UNSUPPORTED)
     * a bias, act or 16-bit c_dtype for which oneDNN would pick its
     * reference kernel (ref:*), orders of magnitude slower: the plan then
     * does those attributes in a pass (ops/common/gemm_plan.c). */
    const char *(*impl)(const agmm_gemm_prep_t *prep);
    void (*destroy)(agmm_gemm_prep_t *prep);
} agmm_gemm_engine_t;

/* For engines: the checks every engine makes of shape and attr (dtypes
 * valid, a_dtype FP32 or w_dtype, act valid, positive sizes, strides;
 * INT8 only as a_dtype = w_dtype = INT8 with a_scale and w_scale, C not
 * INT8), and of share against them (INT8: s8_as_u8 and s8_split too).
 * Logs "gemm: <engine>: ..." once and returns the status; AGMM_OK when
 * fine. */
agmm_status_t agmm_gemm_check(const char *engine, const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *attr,
                              const agmm_gemm_shape_t *share_shape,
                              const agmm_gemm_attr_t *share_attr);

/* Primitives (or other engine objects costing a creation) made so far in
 * this process, over every engine: constant while rounds run. */
uint64_t agmm_gemm_engine_created(void);
/* For engines: count one creation. Thread-safe. */
void agmm_gemm_engine_count_creation(void);

#endif /* AGMM_GEMM_ENGINE_H */
