/* Joined worlds (processes started by anyone on one host): the layout of
 * the job's control segment and the rules that decide when a control
 * segment is garbage, shared by the rendezvous (join.c), the formed world
 * (joined.c) and agmm_cleanup (cleanup.c). Private to world/.
 *
 * The control segment /agmm:<uid>:<job>:0:ctl (transport/shm/segment.h):
 *
 *   join_hdr_t     magic (set last by the creator, release), size, creator
 *                  pid, counters, then one slot per rank;
 *   shm control    the shm backend's control block (barrier counters,
 *                  allgather slots, abort cell) at hdr.ctl_off.
 *
 * Slots: pid (CAS 0 -> pid: a rank takes its slot once) and state EMPTY ->
 * JOINED -> LEFT. A process "holds" the segment while its slot is JOINED
 * and the process is alive. A segment with no holder is garbage; whoever
 * removes it first wins hdr.reaped (CAS 0 -> 1), then checks again that no
 * holder appeared (a joiner stores its slot, then reads `reaped`: one of
 * the two sees the other, sequentially consistent), and only then unlinks
 * the name: a name is never unlinked by someone who did not win the CAS of
 * the segment it names. */
#ifndef AGMM_WORLD_JOIN_H
#define AGMM_WORLD_JOIN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agmm.h"

#define AGMM_JOIN_MAGIC     0x6e696f6a6d6d6761ull /* "agmmjoin" */
#define AGMM_JOIN_VERSION   1
#define AGMM_JOIN_MAX_RANKS 4096
/* A control segment still empty or without magic this long after it was
 * made is a creator's leftover (it dies between create and publish). */
#define AGMM_JOIN_INIT_GRACE_S 2.0

enum { AGMM_SLOT_EMPTY = 0, AGMM_SLOT_JOINED = 1, AGMM_SLOT_LEFT = 2 };

typedef struct agmm_join_slot {
    _Atomic int32_t pid;
    _Atomic int32_t state;
} agmm_join_slot_t;

typedef struct agmm_join_hdr {
    _Atomic uint64_t magic;
    int32_t version;
    int32_t size;
    _Atomic int32_t creator_pid; /* stored first, before anything else */
    _Atomic int32_t joined;      /* slots taken */
    _Atomic int32_t formed;      /* 1 once every rank joined */
    _Atomic int32_t reaped;      /* 1: being removed / removed */
    /* The status the rendezvous returns when it ends with an abort
     * (AGMM_ERR_TIMEOUT, AGMM_ERR_MISMATCH, ...); 0: AGMM_ERR_ABORTED. */
    _Atomic int32_t fail_status;
    int32_t pad;
    uint64_t ctl_off; /* the shm control block */
    uint64_t bytes;   /* of the whole segment */
    agmm_join_slot_t slots[];
} agmm_join_hdr_t;

/* Bytes of the control segment of `size` ranks; *ctl_off gets the offset
 * of the shm control block. */
size_t agmm_join_seg_bytes(int size, size_t *ctl_off);

/* 1 when a mapped header of `mapped` bytes is complete and consistent
 * (magic, version, size, bytes). */
int agmm_join_hdr_valid(const agmm_join_hdr_t *h, size_t mapped);

/* A holder of a valid segment: 1 and its rank and pid, or 0 when none. */
int agmm_join_holder(agmm_join_hdr_t *h, int *rank, pid_t *pid);

/* Remove the control segment `name` mapped at `h` (`mapped` bytes) if it
 * is garbage: a valid one with no holder, or one whose creator never
 * published it (its creator is dead, or no creator pid was stored
 * AGMM_JOIN_INIT_GRACE_S after it was made, judged from `age_s`, the
 * seconds since the segment was last changed).
 * Returns 1 when this call unlinked it. */
int agmm_join_reap(agmm_join_hdr_t *h, size_t mapped, const char *name,
                   double age_s);

/* Mark `rank`'s slot LEFT, then remove the segment if nobody holds it any
 * more (joined.c). */
void agmm_join_leave(agmm_join_hdr_t *h, size_t mapped, const char *name,
                     int rank);

/* The world of a rank whose rendezvous succeeded (joined.c): takes over
 * the mapping `seg` of the control segment whose header is `h`. On
 * failure the caller still owns the mapping and its slot. */
struct agmm_seg;
agmm_status_t agmm_joined_world_new(const agmm_join_opts_t *o,
                                    const struct agmm_seg *seg,
                                    agmm_join_hdr_t *h, agmm_world_t **out);

/* Seconds since the segment `name` (with '/') was last changed, from
 * /dev/shm; -1 when it cannot be told. */
double agmm_join_seg_age(const char *name);

#endif
