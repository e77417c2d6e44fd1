/* When and how the wq engine takes its prefill path (prefill_rule.c):
 * calls of many rows dequantize the weight a block of columns at a time
 * (unpack.h) and multiply on a library GEMM (libgemm.h) instead of agmm's
 * fp32-FMA kernels, which re-stream the packed weight every 32 rows. */
#ifndef AGMM_GEMM_WQ_PREFILL_RULE_H
#define AGMM_GEMM_WQ_PREFILL_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "gemm/engine.h"
#include "gemm/wq/libgemm.h"

typedef struct agmm_wq_pf {
    int64_t rows; /* calls of at least this many rows take the path */
    int64_t mb;   /* rows per library call */
    int64_t nb;   /* columns per block: a multiple of 16, or all ncols */
    int bf16;     /* the block's dtype: bf16 (1) or fp32 */
    /* The worker's scratch: the block at 0, k x nb; the product, mb x nb
     * fp32, at prod_off; the library's scratchpad at lib_off; bytes in
     * all (0: no prefill path). */
    size_t prod_off, lib_off, bytes;
} agmm_wq_pf_t;

/* The prefill rows for A of a_dtype: AGMM_WQ_PREFILL_ROWS when set (a
 * count >= 1, or 0 / "off": never; read once), else the measured
 * defaults (prefill_rule.c: 64 rows for bf16 A, 256 for fp32 A). */
int64_t agmm_wq_prefill_rows(agmm_dtype_t a_dtype);

/* The path for a prep of shape s and attributes a: *pf zero (no path)
 * when no row count of s reaches agmm_wq_prefill_rows() or no library
 * GEMM fits (libgemm.h); else its sizes, and with lib non-NULL the
 * library GEMM made for the row counts (mb, and each count's remainder
 * of mb) and block widths. Errors (logged) are the library's. */
agmm_status_t agmm_wq_pf_make(const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a, agmm_wq_pf_t *pf,
                              agmm_wq_lib_t **lib);

#endif /* AGMM_GEMM_WQ_PREFILL_RULE_H */
