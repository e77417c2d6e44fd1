/* Internal to the oneDNN engine: one prepared column range on oneDNN's
 * matmul (gemm_onednn.c), the part the engine's table (gemm_onednn_cols.c)
 * runs alone or several side by side. Each function is the engine.h entry
 * of the same name, on an agmm_dn_prep_t. */
#ifndef AGMM_GEMM_ONEDNN_H
#define AGMM_GEMM_ONEDNN_H

#include "gemm/engine.h"

typedef struct agmm_dn_prep agmm_dn_prep_t;

const char *agmm_dn_version(void);
agmm_dtype_t agmm_dn_input_dtype(agmm_dtype_t dt);
const char *agmm_dn_why_not_native(agmm_dtype_t dt);
/* agmm_dn_estimate: gemm_onednn_pd.h */
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
 * gemm_onednn_dense.c) get an AMX implementation? 0 also when oneDNN has
 * none for it (nothing logged). */
int agmm_dn_amx(const agmm_gemm_shape_t *s, const agmm_gemm_attr_t *a);

/* Test hook (agmm_gemm_engine_set_parts): see engine.h. */
void agmm_dn_set_parts(int64_t cols, int64_t buf_rows);

#endif /* AGMM_GEMM_ONEDNN_H */
