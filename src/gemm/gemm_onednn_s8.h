/* Internal to the oneDNN engine: the INT8 (W8A8) path's own state and
 * passes (gemm_onednn_s8.c). The primitives (gemm_onednn_pd.c) compute
 * the exact int32 sums; this does the rest. */
#ifndef AGMM_GEMM_ONEDNN_S8_H
#define AGMM_GEMM_ONEDNN_S8_H

#include "gemm/gemm_onednn_pd.h"

typedef struct agmm_dn_s8 agmm_dn_s8_t;

/* Weight bytes beyond the prepared weight and agmm_dn_vec_bytes: the u8s8
 * compensation (ncols int32), 0 otherwise or when cfg is not INT8. */
uint64_t agmm_dn_s8_weight_extra(const agmm_dn_cfg_t *cfg);
/* Per-worker scratch after the (64-aligned) scratchpad, for at most mmax
 * rows per primitive call (see gemm_onednn_s8.c). */
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

#endif /* AGMM_GEMM_ONEDNN_S8_H */
