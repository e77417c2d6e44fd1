/* AGMM_SCHEDULE_AUTO (auto.c). */
#ifndef AGMM_OPS_AUTO_H
#define AGMM_OPS_AUTO_H

#include "agmm_ext.h"

/* AGMM_SCHEDULE_AUTO (auto.c): the schedule the next auto round runs, and
 * recording its time (collective while measuring: allgathers the slowest
 * rank's time). */
agmm_schedule_t agmm_auto_next(agmm_plan_t *p);
agmm_status_t agmm_auto_record(agmm_plan_t *p, agmm_schedule_t ran,
                               double seconds);

#endif
