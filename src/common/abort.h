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

enum { AGMM_ABORT_NONE = 0, AGMM_ABORT_WRITING = 1, AGMM_ABORT_PUBLISHED = 2 };

typedef struct agmm_abort_cell {
    _Alignas(AGMM_CACHE_LINE) _Atomic int state;
    char reason[AGMM_ABORT_REASON_MAX];
} agmm_abort_cell_t;

/* Record `reason` (NULL or empty: a placeholder). Returns 1 if this call
 * was the first abort, 0 if another one's reason stands. */
int agmm_abort_record(agmm_abort_cell_t *c, const char *reason);
/* NULL while not aborted; else the reason. While the first aborter is
 * still writing it, waits up to `max_wait_s` for it, then returns a
 * placeholder. A cell in this process (MPI) is written by one of its own
 * threads, which cannot die without the reader: AGMM_ABORT_WAIT_LOCAL_S,
 * a bound only a stopped process reaches. A cell in shared memory may
 * lose its writer to a kill between the two steps: AGMM_ABORT_WAIT_SHARED_S,
 * short enough that the launcher, which polls it, still ends the job
 * promptly. */
#define AGMM_ABORT_WAIT_LOCAL_S  10.0
#define AGMM_ABORT_WAIT_SHARED_S 2.0
const char *agmm_abort_reason(agmm_abort_cell_t *c, double max_wait_s);

#endif
