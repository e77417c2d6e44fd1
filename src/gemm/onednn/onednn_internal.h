/* Internal to the oneDNN engine (the files of src/gemm/onednn/): what its
 * files give one another, in the order they build on each other (a file
 * calls only the files of the sections above its own, so their calls form
 * no loop):
 *   compat.c        oneDNN 2.x against 3.x (compat.h);
 *   cpu.c, probe.c  the CPU engine and what it can do (cpu.h; probe.c
 *                   calls cpu.c);
 *   pd.c            the matmul primitive descriptors with the GEMM
 *                   attributes (engine.h) mapped onto oneDNN's, the weight
 *                   layout and source;
 *   dense.c         a strided C through a dense buffer, the AMX question;
 *   s8.c            the INT8 (W8A8) path's state and passes;
 *   estimate.c      the sizes a prepared column range will take;
 *   prep.c          one prepared column range (agmm_dn_prep_t);
 *   cols.c          the engine's table (engine.h): a range in parts. */
#ifndef AGMM_GEMM_ONEDNN_INTERNAL_H
#define AGMM_GEMM_ONEDNN_INTERNAL_H

#include "gemm/engine.h"
#include "gemm/onednn/cpu.h"

static inline size_t agmm_dn_align64(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* ------------------------------------------------------------- pd.c */

/* What every primitive descriptor of a prepared weight is built from. */
typedef struct {
    agmm_gemm_shape_t shape; /* rows/nrows not kept */
    agmm_gemm_attr_t attr;
    dnnl_data_type_t dt; /* compute dtype of W (attr.a_dtype's) */
    /* The primitives' A and C: dtype and row stride (elements). Else than
     * INT8 the attr's (A: dt, stride lda; C: c_dtype, ldc, or ncols with
     * DENSE_COPY). INT8 (s8.c): a dense A (s8, or u8 with
     * s8_as_u8), C the dense int32 sums (s32, ncols), and no attributes:
     * the s32 pass does them. */
    dnnl_data_type_t a_dt, c_dt;
    int64_t lda, ldc;
    /* INT8 where oneDNN's 8-bit sums saturate but 7-bit ones do not
     * (agmm_dn_int8_mode: SPLIT): W kept as two prepared halves, each
     * multiplied by the same primitives (s8.c). */
    int s8_split;
} agmm_dn_cfg_t;

/* Checks shape and attr (and share's), refuses what oneDNN 2.6 cannot do
 * exactly (a_scale but with INT8; w_scale with bias but with INT8; fp16 A
 * without a native f16 matmul; INT8 with k > 65536), and fills cfg. */
agmm_status_t agmm_dn_config(const agmm_gemm_shape_t *s,
                             const agmm_gemm_attr_t *a,
                             const agmm_gemm_shape_t *share_shape,
                             const agmm_gemm_attr_t *share_attr,
                             agmm_dn_cfg_t *cfg);

/* The matmul of m rows with cfg's attributes on the weight layout
 * `layout`: the one oneDNN prefers when it is NULL or equal, else one made
 * with it forced. Call at one OpenMP thread. An unimplemented combination
 * is refused (UNSUPPORTED) naming the attributes. */
agmm_status_t agmm_dn_matmul_pd(const agmm_dn_cfg_t *cfg, int64_t m,
                                agmm_dn_cmd_t layout,
                                dnnl_primitive_desc_t *pd);

/* The memory desc (owned: agmm_dn_md_destroy) of the per-column bias
 * (1 x ncols) and of the w_scale vector (ncols), both f32. */
agmm_status_t agmm_dn_vec_md(const agmm_dn_cfg_t *cfg, int as_row,
                             agmm_dn_md_t *md);

/* Sizes and layout, shared by estimate and prepare. The weight layout: what
 * oneDNN picks for m rows (the most prepared); owned (agmm_dn_md_destroy). */
agmm_status_t agmm_dn_choose_layout(const agmm_dn_cfg_t *cfg, int64_t m,
                                    agmm_dn_md_t *w_md);
int64_t agmm_dn_most_rows(const agmm_gemm_shape_t *s);
/* Is rows[i] <= 0 or a repeat of an earlier one? */
int agmm_dn_is_dup(const agmm_gemm_shape_t *s, int i);
/* Bytes of the fp32 bias and w_scale copies. */
uint64_t agmm_dn_vec_bytes(const agmm_dn_cfg_t *cfg);
/* The weight the reorder reads (its source desc is dense, ncols apart,
 * exactly when agmm_dn_dense_source): w itself, or a dense copy of its
 * columns in *copy (the caller frees it): converted to fp32 when w_dtype
 * is not the compute dtype, copied as they are for any ldw != ncols (and
 * for INT8's split). Only a dense source reaches oneDNN's own reorder into
 * the brgemm layout (brgemm_matmul_copy_reorder_t); from a strided one
 * oneDNN 2.6 has none for s8 ("unimplemented"), and oneDNN 3.7 falls back
 * to its generic jit:uni reorder, which into bf16's pair layout
 * (BA16a64b2a) with an odd K leaves the last row of K zero for most
 * columns (measured on AMD Zen 5: K 67, 73 of 150 columns; the dense
 * source gives every element). The copy lives for the load only. */
int agmm_dn_dense_source(const agmm_dn_cfg_t *cfg);
agmm_status_t agmm_dn_weight_source(const agmm_dn_cfg_t *cfg, const void *w,
                                    void **copy, const void **src);

/* ---------------------------------------------------------- dense.c */

/* A strided C (ldc > ncols): how it goes through the dense buffer after
 * the scratchpad (0: it does not), cfg changed to match (see there). */
enum {
    AGMM_DN_DENSE_COPY = 1,
    AGMM_DN_DENSE_ADD = 2,
    AGMM_DN_DENSE_OUT = 3,
    AGMM_DN_DENSE_ADD_OUT = 4
};
int agmm_dn_use_dense(agmm_dn_cfg_t *cfg);
/* DENSE_OUT's buffer holds at most this many rows (a longer call goes
 * through it in parts; its bytes are booked per worker: 512 rows x 5504
 * fp32 columns are 11 MiB). */
enum { AGMM_DN_OUT_ROWS = 512 };
/* The rows the dense buffer of mode `dense` holds for calls of mmax. */
int64_t agmm_dn_dense_rows(int dense, int64_t mmax);
/* Bytes of the dense copy of C's rows: mmax x ncols in c_dtype. */
size_t agmm_dn_dense_size(const agmm_dn_cfg_t *cfg, int64_t mmax);
/* Does a call of shape/attr (its C dense; asked for a fixed row count)
 * get an AMX implementation? 0 also when oneDNN has none for it (nothing
 * logged). */
int agmm_dn_amx(const agmm_gemm_shape_t *s, const agmm_gemm_attr_t *a);

/* ------------------------------------------------------------- s8.c */

typedef struct agmm_dn_s8 agmm_dn_s8_t;

/* Weight bytes beyond the prepared weight and agmm_dn_vec_bytes: the u8s8
 * compensation (ncols int32), 0 otherwise or when cfg is not INT8. */
uint64_t agmm_dn_s8_weight_extra(const agmm_dn_cfg_t *cfg);
/* Per-worker scratch after the (64-aligned) scratchpad, for at most mmax
 * rows per primitive call (see s8.c). */
size_t agmm_dn_s8_scratch(const agmm_dn_cfg_t *cfg, int64_t mmax);

/* SPLIT (agmm_dn_cfg_t.s8_split): the n weights w (a copy) become the
 * low halves 0..63 in place and *hi_out (agmm_alloc'd, agmm_free) the high
 * halves -2..1, W = 64 * hi + lo. */
agmm_status_t agmm_dn_s8_split(int8_t *w, int64_t n, int8_t **hi_out);

/* The state of an INT8 prep: its own fp32 bias and w_scale copies and
 * compensation, or base's (a prep made with share). */
agmm_status_t agmm_dn_s8_create(const agmm_dn_cfg_t *cfg,
                                const agmm_dn_s8_t *base, int64_t mmax,
                                agmm_dn_s8_t **out);
/* The bias and w_scale copied, the compensation computed from o->w. */
agmm_status_t agmm_dn_s8_load(agmm_dn_s8_t *s, const agmm_gemm_operand_t *o);
/* The bias alone (engine.h: load_bias), for an attr with bias. */
agmm_status_t agmm_dn_s8_load_bias(agmm_dn_s8_t *s, const float *bias);
void agmm_dn_s8_destroy(agmm_dn_s8_t *s);

/* The int32 sums of m <= mmax rows of a dense A (s8 or u8, stride k) into
 * acc (stride ncols): the engine's primitives on its weight (half 0) or,
 * with cfg.s8_split, on the high half of it (half 1; half 0 is then the
 * low half), scratchpad at `pad`. */
typedef agmm_status_t (*agmm_dn_s8_gemm_fn)(void *ctx, int half, int64_t m,
                                            const void *a, int32_t *acc,
                                            void *pad);
/* The engine's run for INT8: scratch is the worker's (scratchpad, then
 * pad_bytes on, this path's). */
agmm_status_t agmm_dn_s8_run(const agmm_dn_s8_t *s, int64_t m, const void *a,
                             const float *a_scale, void *c, void *scratch,
                             size_t pad_bytes, agmm_dn_s8_gemm_fn gemm,
                             void *ctx);

/* ------------------------------------------------------- estimate.c */

/* A column range's estimate (engine.h): the descriptors prepare builds,
 * no primitive. */
agmm_status_t agmm_dn_estimate(const agmm_gemm_shape_t *s,
                               const agmm_gemm_attr_t *a, int share,
                               uint64_t *weight_bytes, uint64_t *scratch_bytes);

/* ----------------------------------------------------------- prep.c */

/* One prepared column range on oneDNN's matmul, the part the engine's
 * table (cols.c) runs alone or several side by side. Each function is the
 * engine.h entry of the same name, on an agmm_dn_prep_t. */
typedef struct agmm_dn_prep agmm_dn_prep_t;

agmm_status_t agmm_dn_prepare(const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a,
                              const agmm_dn_prep_t *share,
                              agmm_dn_prep_t **out);
agmm_status_t agmm_dn_load(agmm_dn_prep_t *p, const agmm_gemm_operand_t *o);
agmm_status_t agmm_dn_load_bias(agmm_dn_prep_t *p, const float *bias);
agmm_status_t agmm_dn_run(agmm_dn_prep_t *p, int64_t m, const void *a,
                          const float *a_scale, void *c, void *scratch);
size_t agmm_dn_scratch_bytes(const agmm_dn_prep_t *p);
uint64_t agmm_dn_weight_bytes(const agmm_dn_prep_t *p);
const char *agmm_dn_impl(const agmm_dn_prep_t *p);
void agmm_dn_destroy(agmm_dn_prep_t *p);

/* Does a call of shape/attr (its C dense; asked for a fixed row count,
 * dense.c) get an AMX implementation? 0 also when oneDNN has
 * none for it (nothing logged). */
int agmm_dn_amx(const agmm_gemm_shape_t *s, const agmm_gemm_attr_t *a);

#endif /* AGMM_GEMM_ONEDNN_INTERNAL_H */
