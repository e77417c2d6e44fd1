/* Internal to the oneDNN engine (the gemm_onednn*.c files of src/gemm/,
 * and gemm_onednn.h and gemm_onednn_s8.h, which build on it): the CPU
 * engine and what it can do (gemm_onednn_probe.c), the OpenMP thread-count
 * guard, the matmul primitive descriptors with the GEMM attributes
 * (engine.h) mapped onto oneDNN's, the layout and size estimates, and the
 * dense buffer of a strided C (gemm_onednn_dense.c). */
#ifndef AGMM_GEMM_ONEDNN_PD_H
#define AGMM_GEMM_ONEDNN_PD_H

#include "gemm/engine.h"
#include "gemm/gemm_onednn_compat.h"

/* What every primitive descriptor of a prepared weight is built from. */
typedef struct {
    agmm_gemm_shape_t shape; /* rows/nrows not kept */
    agmm_gemm_attr_t attr;
    dnnl_data_type_t dt; /* compute dtype of W (attr.a_dtype's) */
    /* The primitives' A and C: dtype and row stride (elements). Else than
     * INT8 the attr's (A: dt, stride lda; C: c_dtype, ldc, or ncols with
     * DENSE_COPY). INT8 (gemm_onednn_s8.c): a dense A (s8, or u8 with
     * s8_as_u8), C the dense int32 sums (s32, ncols), and no attributes:
     * the s32 pass does them. */
    dnnl_data_type_t a_dt, c_dt;
    int64_t lda, ldc;
    /* INT8 where oneDNN's 8-bit sums saturate but 7-bit ones do not
     * (agmm_dn_int8_mode: SPLIT): W kept as two prepared halves, each
     * multiplied by the same primitives (gemm_onednn_s8.c). */
    int s8_split;
} agmm_dn_cfg_t;

/* The process's CPU engine (made once, at one OpenMP thread), or NULL
 * after logging why it could not be made. */
dnnl_engine_t agmm_dn_engine(void);
/* What this oneDNN does on this CPU, tried once per process
 * (gemm_onednn_probe.c): a non-reference bf16 / f16 matmul? */
int agmm_dn_bf16_native(void);
int agmm_dn_f16_native(void);
/* Is a sum post-op C_old + the plain product bit for bit on a dense C, for
 * A/W of dtype dt (FP32, or BF16 where native; else 0)? */
int agmm_dn_sum_exact(agmm_dtype_t dt);
/* INT8 on this oneDNN and CPU: NONE (refused: agmm_dn_int8_why says
 * why; "" otherwise), EXACT (its s8 x s8 and u8 x s8 sums are exact),
 * SPLIT (exact only for weights in -64..63: W multiplied as two halves,
 * gemm_onednn_s8.c). */
enum { AGMM_DN_S8_NONE = 0, AGMM_DN_S8_EXACT = 1, AGMM_DN_S8_SPLIT = 2 };
int agmm_dn_int8_mode(void);
const char *agmm_dn_int8_why(void);
/* (agmm_gemm_force_int8_split, engine.h, makes EXACT read SPLIT.) */

/* This thread's OpenMP thread count to 1; returns the previous one for
 * agmm_dn_restore_omp(). */
int agmm_dn_one_omp_thread(void);
void agmm_dn_restore_omp(int saved);

/* Logs "gemm: oneDNN <what> failed: <status>" and maps the status. */
agmm_status_t agmm_dn_fail(dnnl_status_t s, const char *what);
#define DN(call, what)                                                         \
    do {                                                                       \
        dnnl_status_t s_ = (call);                                             \
        if (s_ != dnnl_success) return agmm_dn_fail(s_, what);                 \
    } while (0)

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

/* Sizes and layout, shared by estimate and prepare. */
size_t
agmm_dn_pd_scratch(const_dnnl_primitive_desc_t pd); /* scratchpad bytes */
/* The weight layout: what oneDNN picks for m rows (the most prepared);
 * owned (agmm_dn_md_destroy). */
agmm_status_t agmm_dn_choose_layout(const agmm_dn_cfg_t *cfg, int64_t m,
                                    agmm_dn_md_t *w_md);
int64_t agmm_dn_most_rows(const agmm_gemm_shape_t *s);
/* Is rows[i] <= 0 or a repeat of an earlier one? */
int agmm_dn_is_dup(const agmm_gemm_shape_t *s, int i);
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
size_t agmm_dn_align64(size_t n);
/* Bytes of the dense copy of C's rows: mmax x ncols in c_dtype. */
size_t agmm_dn_dense_size(const agmm_dn_cfg_t *cfg, int64_t mmax);
/* Bytes of the fp32 bias and w_scale copies. */
uint64_t agmm_dn_vec_bytes(const agmm_dn_cfg_t *cfg);
/* The engine's estimate (engine.h): the descriptors prepare builds. */
agmm_status_t agmm_dn_estimate(const agmm_gemm_shape_t *s,
                               const agmm_gemm_attr_t *a, int share,
                               uint64_t *weight_bytes, uint64_t *scratch_bytes);

/* The weight the reorder reads (its source desc is dense, ncols apart,
 * exactly when agmm_dn_dense_source): w itself, or a dense copy of its
 * columns in *copy (the caller frees it): converted to fp32 when w_dtype
 * is not the compute dtype, copied as they are for INT8 with ldw != ncols
 * (oneDNN 2.6 has no s8 reorder into the brgemm layout from a strided
 * source: "unimplemented"). */
int agmm_dn_dense_source(const agmm_dn_cfg_t *cfg);
agmm_status_t agmm_dn_weight_source(const agmm_dn_cfg_t *cfg, const void *w,
                                    void **copy, const void **src);

#endif /* AGMM_GEMM_ONEDNN_PD_H */
