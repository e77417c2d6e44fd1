/* The shm backend's state, shared by its files (shm.c: control plane and
 * data plane; window.c: the windows, one named segment per rank and
 * window). Private to transport/shm/. */
#ifndef AGMM_TRANSPORT_SHM_INTERNAL_H
#define AGMM_TRANSPORT_SHM_INTERNAL_H

#include <stdint.h>

#include "transport/shm/link.h"
#include "transport/shm/segment.h"
#include "transport/shm/shm.h"

/* What every rank of one world maps: the control block (barrier counters,
 * allgather slots, abort cell), owned by the forked launcher (anonymous,
 * inherited) or by a joined world's control segment (world/join.c). */
struct agmm_shm_shared {
    int nranks;
    struct shm_ctl *ctl;
    size_t ctl_bytes;
    int owns_ctl;                      /* 1: ctl is our anonymous mapping */
    char job[AGMM_SEG_JOB_MAX + 1];    /* names the window segments */
    double link_gbps, link_latency_us; /* link emulator; gbps 0: off */
};

/* A rank's private view (heap-allocated by agmm_shm_world_init, freed by
 * agmm_shm_world_fini). Used by the rank's plan thread (windows, barriers)
 * and read by every worker thread (link, sh). */
typedef struct shm_rank {
    agmm_shm_shared_t *sh;
    uint64_t barriers_done;   /* barriers this rank has completed */
    agmm_link_t *link;        /* the link emulator, NULL when off */
    uint64_t next_window;     /* windows created so far: names them */
    _Atomic int live_windows; /* allocated and not freed (read at exit) */
} shm_rank_t;

static inline shm_rank_t *agmm_shm_rank_of(agmm_world_t *w)
{
    return (shm_rank_t *)w->impl;
}

/* A window: every rank's copy mapped into this process, maps[p].addr is
 * rank p's copy (agmm_win_t.impl points here; win.local is maps[rank]). */
typedef struct shm_window {
    int nranks;
    agmm_seg_t maps[];
} shm_window_t;

/* window.c: the transport's win_alloc / win_free. */
agmm_status_t agmm_shm_win_alloc(agmm_world_t *w, size_t bytes,
                                 agmm_win_t *out);
void agmm_shm_win_free(agmm_world_t *w, agmm_win_t *win);

/* rank p's copy of `win` */
static inline unsigned char *agmm_shm_peer_base(const agmm_win_t *win, int p)
{
    return (unsigned char *)((const shm_window_t *)win->impl)->maps[p].addr;
}

#endif
