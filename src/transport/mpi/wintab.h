/* The live windows of an MPI world, looked up by id (mpi.c).
 *
 * Ids are handed out 1, 2, 3, ... by every rank in the same order (window
 * allocation is collective) and never reused within a world: a control
 * message (an ack) names its window by id, and one that was in flight when
 * its window was freed must not land in a later window. Such a message is
 * recognised (its id is below `next_id` but no longer live), dropped and
 * counted in `dropped`.
 *
 * Not thread-safe: the owner guards the table with its own lock (mpi.c:
 * the state lock, taken by the plan thread that allocates and frees and by
 * the progress thread that looks up). */
#ifndef AGMM_TRANSPORT_WINTAB_H
#define AGMM_TRANSPORT_WINTAB_H

#include <stdint.h>

typedef struct agmm_wintab {
    uint64_t *ids;
    void **items;
    int n, cap;
    uint64_t next_id; /* the id the next window gets; starts at 1 */
    uint64_t dropped; /* messages for windows already freed */
} agmm_wintab_t;

/* What a looked-up id is. */
typedef enum {
    AGMM_WIN_LIVE,  /* allocated and not freed: *item is set */
    AGMM_WIN_FREED, /* allocated earlier and freed since */
    AGMM_WIN_NEVER  /* not allocated yet on this rank */
} agmm_win_state_t;

/* The id for the next window (taken: the following call returns the next
 * one). Every rank calls it once per collective allocation, successful or
 * not, so ids agree across ranks. */
uint64_t agmm_wintab_take_id(agmm_wintab_t *t);
/* 0 on success, -1 when out of memory. */
int agmm_wintab_add(agmm_wintab_t *t, uint64_t id, void *item);
void agmm_wintab_remove(agmm_wintab_t *t, uint64_t id);
agmm_win_state_t agmm_wintab_find(const agmm_wintab_t *t, uint64_t id,
                                  void **item);
void agmm_wintab_free(agmm_wintab_t *t);

#endif
