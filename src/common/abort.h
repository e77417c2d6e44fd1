/* The abort state machine, written once: every kind of world keeps one
 * agmm_abort_cell_t (in shared memory for forked shm ranks, in the rank's
 * own state under MPI) and the backends only deliver reasons into it (shm:
 * the cell is shared; mpi: a peer's reason arrives as a control message).
 *
 * States: NONE -> WRITING by the first aborter (CAS), the reason written,
 * then PUBLISHED (release); a reader that sees PUBLISHED (acquire) may read
 * the reason. Any thread, any process mapping the cell.
 *
 * It sits in common/ rather than world/ because both planes use it: the
 * transport's waits (transport/signal.c) and backends read it, and world/
 * is layered above transport/ (no include cycle between folders). The
 * world's one entry point is agmm_world_abort_with (world/world.h). */
#ifndef AGMM_COMMON_ABORT_H
#define AGMM_COMMON_ABORT_H

#include <stdatomic.h>

#include "common/util.h"

#define AGMM_ABORT_REASON_MAX 384

typedef struct agmm_abort_cell {
    _Alignas(AGMM_CACHE_LINE) _Atomic int state;
    char reason[AGMM_ABORT_REASON_MAX];
} agmm_abort_cell_t;

/* Record `reason` (NULL or empty: a placeholder). Returns 1 if this call
 * was the first abort, 0 if another one's reason stands. */
int agmm_abort_record(agmm_abort_cell_t *c, const char *reason);
/* NULL while not aborted; else the reason (or a placeholder while the
 * first aborter is still writing it). */
const char *agmm_abort_reason(agmm_abort_cell_t *c);

#endif
