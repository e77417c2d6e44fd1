/* Descriptions (desc.c): the checks of a description's fields (the
 * common ones, then the operation's: op.h), its weights and activations,
 * and the cross-rank hash. Pure functions; the descriptor (pd.c) runs the
 * checks once, then books. */
#ifndef AGMM_OPS_DESC_H
#define AGMM_OPS_DESC_H

#include <stdint.h>

#include "agmm.h"

/* Every field of d checked (the common checks, the operation's
 * check_desc, the path's rules), without the booking's overflow check
 * (pd.c adds it): logs and returns the first failure. */
agmm_status_t agmm_desc_check(const agmm_plan_desc_t *d);

/* FNV-1a over the description fields every rank must agree on (desc.c). */
uint64_t agmm_plan_desc_hash(const agmm_plan_desc_t *d);

/* A checked description's weight count (n_list's, else 1) and weight
 * i's activation (activations[i], else activation). */
int agmm_desc_weights(const agmm_plan_desc_t *d);
agmm_activation_t agmm_desc_activation(const agmm_plan_desc_t *d, int i);

#endif
