/* The plan descriptor (include/agmm.h: agmm_plan_pd_t), internal side:
 * what plan.c takes from it besides the public queries. */
#ifndef AGMM_OPS_PD_H
#define AGMM_OPS_PD_H

#include <stdint.h>

#include "agmm.h"

/* The bytes per rank its booking holds with the engine's share bounded by
 * a model that builds no engine object (plan_book.c:
 * agmm_plan_bytes_booked(desc, 0)): path.c's memory test. */
uint64_t agmm_plan_pd_bound(const agmm_plan_pd_t *pd);

#endif
