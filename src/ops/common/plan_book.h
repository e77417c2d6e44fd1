/* A plan's geometry and its memory booking (plan_book.c), from a checked
 * description: what the descriptor (pd.c) and plan.c build a plan's
 * numbers and buffers with. */
#ifndef AGMM_OPS_PLAN_BOOK_H
#define AGMM_OPS_PLAN_BOOK_H

#include <stdint.h>

#include "agmm.h"

struct agmm_book;

/* The geometry of rank `rank`'s plan from a checked
 * description: every count and per-rank array, in p->layout (agmm_free).
 * book: every buffer of that plan, into b (the engine's share from its
 * estimate). */
agmm_status_t agmm_plan_geometry(agmm_plan_t *p, const agmm_plan_desc_t *d,
                                 int rank);
agmm_status_t agmm_plan_book(agmm_plan_t *p, struct agmm_book *b);
/* The GEMM path p's engine calls take (p->path, gemm_dtype, native,
 * gemm_esize), before the booking. */
void agmm_plan_set_path(agmm_plan_t *p, agmm_gemm_path_t path);
/* The most any rank's plan of a checked description books (0 on
 * overflow or failure); with_engine 0: the engine's share by a model that
 * cannot fail (the descriptor's overflow check, pd.c, which must not
 * build engine objects). */
uint64_t agmm_plan_bytes_booked(const agmm_plan_desc_t *d, int with_engine);

#endif
