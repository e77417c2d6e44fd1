/* A joined world once formed (join.c makes it): the death watch, the
 * world's control table, leaving, and the exit handler. See join.c for the
 * rendezvous and docs/design.md, "Joined worlds".
 *
 * Death watch. A joined world has no launcher watching its processes, so
 * every rank watches its peers itself, from its waits: the world's
 * `aborted` entry (called by every blocking wait of the library, each
 * slice) polls the peers' pidfds (opened when the world formed; pidfd
 * reports an exited process even before it is reaped, and cannot be
 * fooled by a reused pid) at most every WATCH_NS, one thread at a time. A
 * peer whose process ended while its slot is still JOINED aborts the
 * world with "rank R (pid N) ended without leaving job J". Without pidfd
 * (old kernels, valgrind) kill(pid, 0) and /proc/pid/stat stand in.
 *
 * Exit handler. A process that ends with exit() (return from main, Python
 * at interpreter exit) while its world has no live window (every plan
 * destroyed, so no peer waits for its data: a peer can at most still be
 * waking from a barrier this rank already arrived at) leaves the world
 * as agmm_world_destroy would, so that exit is not taken for a crash. With
 * a live window it stays JOINED: the peers see a rank that vanished in the
 * middle of a plan and abort at once. _exit and signals skip the handler.
 *
 * Threads: the registry of live joined worlds is under `registry_lock`;
 * the rest is per world (destroy is not concurrent with other calls on
 * the world, agmm.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "transport/shm/segment.h"
#include "transport/shm/shm.h"
#include "world/join.h"
#include "world/world.h"

#define WATCH_NS 10000000ull /* peers' liveness: at most every 10 ms */

typedef struct joined {
    agmm_world_t w; /* first: the world is the joined_t */
    char job[AGMM_SEG_JOB_MAX + 1];
    agmm_seg_t seg;
    agmm_join_hdr_t *hdr;
    agmm_shm_shared_t *sh;
    int *pidfds; /* [size]; -1: self, or no pidfd (use pid) */
    pid_t *pids; /* [size] */
    _Atomic uint64_t next_watch_ns;
    struct joined *next; /* the registry */
} joined_t;

static joined_t *joined_of(agmm_world_t *w)
{
    return (joined_t *)(void *)w;
}

void agmm_join_leave(agmm_join_hdr_t *h, size_t mapped, const char *name,
                     int rank)
{
    atomic_store(&h->slots[rank].state, AGMM_SLOT_LEFT);
    agmm_join_reap(h, mapped, name, 0);
}

/* ------------------------------------------------------------ registry */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static joined_t *registry;

static void at_exit(void)
{
    pthread_mutex_lock(&registry_lock);
    for (joined_t *j = registry; j; j = j->next)
        if (agmm_shm_live_windows(&j->w) == 0)
            agmm_join_leave(j->hdr, j->seg.bytes, j->seg.name, j->w.rank);
    pthread_mutex_unlock(&registry_lock);
}

static void register_at_exit(void)
{
    atexit(at_exit);
}

static void registry_add(joined_t *j)
{
    pthread_once(&registry_once, register_at_exit);
    pthread_mutex_lock(&registry_lock);
    j->next = registry;
    registry = j;
    pthread_mutex_unlock(&registry_lock);
}

static void registry_remove(joined_t *j)
{
    pthread_mutex_lock(&registry_lock);
    for (joined_t **pp = &registry; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

/* ---------------------------------------------------------- the watch */
/* 1 when peer p's process has ended. */
static int peer_gone(joined_t *j, int p)
{
    if (j->pidfds[p] >= 0) {
        struct pollfd pfd = {.fd = j->pidfds[p], .events = POLLIN};
        return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLHUP));
    }
    return !agmm_seg_pid_alive(j->pids[p]);
}

static const char *joined_aborted(agmm_world_t *w)
{
    const char *reason = agmm_shm_aborted(w);
    if (reason) return reason;
    joined_t *j = joined_of(w);
    uint64_t now = agmm_now_ns();
    uint64_t next =
        atomic_load_explicit(&j->next_watch_ns, memory_order_relaxed);
    if (now < next) return NULL;
    /* One thread at a time looks (the others see the abort it records). */
    if (!atomic_compare_exchange_strong(&j->next_watch_ns, &next,
                                        now + WATCH_NS))
        return NULL;
    for (int p = 0; p < w->size; p++) {
        if (p == w->rank) continue;
        if (atomic_load(&j->hdr->slots[p].state) != AGMM_SLOT_JOINED) continue;
        if (!peer_gone(j, p)) continue;
        /* It may have left just now (destroy after its last collective). */
        if (atomic_load(&j->hdr->slots[p].state) != AGMM_SLOT_JOINED) continue;
        char msg[300];
        snprintf(msg, sizeof msg,
                 "rank %d (pid %ld) ended without leaving job '%s' (killed or "
                 "crashed; seen by rank %d)",
                 p, (long)j->pids[p], j->job, w->rank);
        agmm_shm_abort(w, msg);
        return agmm_shm_aborted(w);
    }
    return NULL;
}

static void joined_destroy(agmm_world_t *w)
{
    joined_t *j = joined_of(w);
    agmm_shm_world_fini(w);
    agmm_shm_release(j->sh);
    registry_remove(j);
    agmm_join_leave(j->hdr, j->seg.bytes, j->seg.name, w->rank);
    agmm_seg_unmap(&j->seg);
    for (int p = 0; p < w->size; p++)
        if (j->pidfds[p] >= 0) close(j->pidfds[p]);
    free(j->pidfds);
    free(j->pids);
    free(j);
}

static const agmm_world_ops_t joined_world_ops = {
    .name = "shm",
    .barrier = agmm_shm_barrier,
    .allgather = agmm_shm_allgather,
    .abort = agmm_shm_abort,
    .aborted = joined_aborted,
    .link = agmm_shm_link,
    .destroy = joined_destroy,
};

/* ------------------------------------------------------------ making */

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static void free_joined(joined_t *j)
{
    if (j->w.impl) agmm_shm_world_fini(&j->w);
    agmm_shm_release(j->sh);
    for (int p = 0; j->pidfds && p < j->w.size; p++)
        if (j->pidfds[p] >= 0) close(j->pidfds[p]);
    free(j->pidfds);
    free(j->pids);
    free(j);
}

agmm_status_t agmm_joined_world_new(const agmm_join_opts_t *o,
                                    const agmm_seg_t *seg, agmm_join_hdr_t *h,
                                    agmm_world_t **out)
{
    int P = o->size;
    joined_t *j = calloc(1, sizeof *j);
    if (!j) return agmm_error(AGMM_ERR_NO_MEMORY, "join: out of memory");
    snprintf(j->job, sizeof j->job, "%s", o->job);
    j->seg = *seg;
    j->hdr = h;
    j->w.size = P;
    j->pidfds = malloc((size_t)P * sizeof *j->pidfds);
    j->pids = calloc((size_t)P, sizeof *j->pids);
    if (!j->pidfds || !j->pids) {
        free(j->pidfds);
        j->pidfds = NULL;
        free_joined(j);
        return agmm_error(AGMM_ERR_NO_MEMORY, "join: out of memory");
    }
    for (int p = 0; p < P; p++) {
        j->pids[p] = atomic_load(&h->slots[p].pid);
        /* ESRCH: already gone, the watch reports it at the first wait. */
        j->pidfds[p] = p == o->rank ? -1 : open_pidfd(j->pids[p]);
    }
    agmm_status_t st =
        agmm_shm_attach((char *)seg->addr + h->ctl_off, P, o->job, &j->sh);
    j->w.ctl = &joined_world_ops;
    j->w.timeout_s = o->timeout_s > 0 ? o->timeout_s : 60.0;
    j->w.oversubscribed = P > sysconf(_SC_NPROCESSORS_ONLN);
    if (st == AGMM_OK) st = agmm_shm_world_init(j->sh, o->rank, &j->w);
    if (st != AGMM_OK) {
        free_joined(j);
        return st;
    }
    registry_add(j);
    *out = &j->w;
    return AGMM_OK;
}
