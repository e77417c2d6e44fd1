/* INT8 A staged with its scales (stage.c). */
#ifndef AGMM_OPS_STAGE_H
#define AGMM_OPS_STAGE_H

#include <stdint.h>

#include "agmm.h"

struct agmm_book;

/* INT8: the bytes booked for staging this rank's A (0 when not
 * INT8), and the round's A as the schedules read it: the rows packed with
 * their scales into a_stage (scales_in_rows), or a_local with its scales
 * (a per-tensor scale expanded into a_stage). a_rows: this call's rows of
 * A. Not INT8: a_local, NULL. */
void agmm_plan_book_stage(agmm_plan_t *p, struct agmm_book *b);
void agmm_plan_stage_a(agmm_plan_t *p, const void *a_local,
                       const float *a_scale, int64_t a_rows, const void **a,
                       const float **scales);

#endif
