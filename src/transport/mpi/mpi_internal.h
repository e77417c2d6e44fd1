/* Internal to the MPI transport (transport/mpi/): the backend's state, its
 * windows and declared receives, and the helpers its files share. See
 * mpi.c for the design, threads and memory order. */
#ifndef AGMM_TRANSPORT_MPI_INTERNAL_H
#define AGMM_TRANSPORT_MPI_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/abort.h"
#include "common/util.h"
#include "transport/mpi/wintab.h"
#include "transport/shm/segment.h"
#include "transport/transport.h"

enum { TAG_ABORT = 1, TAG_SIGNAL = 2 };
#define REASON_MAX AGMM_ABORT_REASON_MAX

struct mpi_win;

/* One declared incoming put: a persistent receive. */
typedef struct slot {
    MPI_Request req;
    int set, src; /* receive set (agmm_tp_recv_set_t), sender */
    size_t bytes;
    _Atomic uint64_t *cell; /* the local signal cell it raises */
    uint64_t value;         /* set by round_begin, read on completion */
    /* Relayed (mpi_relay.c): this rank forwards what it receives to its
     * same-host peers. The rows sit at `off` of data window `dw`, the cell
     * at `sig_off` of signal window `sw` (whose slot this is) on every
     * rank alike; `todo` are the node ranks still to forward to this
     * round, `got` the bytes received. Progress thread, under the lock. */
    int fwd;
    const struct mpi_win *dw;
    struct mpi_win *sw;
    size_t off, sig_off, got;
    uint64_t todo;
} slot_t;

/* win->impl */
typedef struct mpi_win {
    uint64_t id;          /* never reused within the world (wintab.h) */
    unsigned char *local; /* the window's memory on this rank */
    size_t bytes;
    /* Same-host peers (mpi_node.h): peer[q] is rank q's copy mapped here,
     * NULL for ranks on other hosts; maps[] the mappings, by node rank
     * (maps[node rank].addr == local). NULL/NULL without same-host peers. */
    unsigned char **peer;
    agmm_seg_t *maps;
    MPI_Comm comm; /* tile messages guarded by this (signal) window */
    slot_t **slots;
    int nslots, cap;
    /* Relaying (mpi_relay.c). replicated: the op declared every put into
     * this (data) window the same for every peer. ready_off: a cell past
     * `bytes` in every copy where this rank raises the round it has begun
     * (its round_begin, before its acks; release): a relay forwards round
     * e's rows into this rank's copy only once it reads e there. fwd_slots:
     * this (signal) window's slots with forwards pending (lock). */
    int replicated;
    size_t ready_off;
    int fwd_slots;
} mpi_win_t;

/* The ranks of this host (mpi_node.c). */
typedef struct mpi_node {
    MPI_Comm comm; /* MPI_COMM_TYPE_SHARED; MPI_COMM_NULL when off */
    int size, rank;
    int hosts;     /* hosts of the world (node leaders), whatever the switch */
    int *node_of;  /* [world size]: node rank of a same-host peer, -1 for
                    * ranks on other hosts and for this rank; NULL: off */
    int *world_of; /* [size]: world rank of each node rank */
    int64_t *scratch; /* [2 * size]: window set-up's all-gathers */
    /* Every world rank's index among its host's ranks and the number of
     * ranks there (whether or not the layer is on), and whether relaying
     * is on in this world (mpi_relay.c; the same on every rank). */
    int *hidx, *hsize;
    int relay;
    /* What went where (AGMM_MPI_COUNTERS), any thread, relaxed. */
    _Atomic uint64_t shm_puts, shm_bytes, shm_signals;
    _Atomic uint64_t mpi_puts, mpi_bytes, mpi_signals;
    _Atomic uint64_t fwd_puts, fwd_bytes;
} mpi_node_t;

typedef struct mpi_state {
    MPI_Comm ctl;  /* abort and signal messages (progress thread receives) */
    MPI_Comm coll; /* barrier, allgather, window set-up (plan thread) */
    MPI_Comm bulk; /* allgather_rows (one comm worker per rank) */
    int we_initialized;
    int tag_ub;

    /* Abort: this rank's cell (common/abort.h); peers' reasons arrive on
     * ctl and are recorded into it. */
    agmm_abort_cell_t abort;
    _Atomic int abort_originated; /* this rank aborted first */
    MPI_Request *abort_sends;     /* [size], to tell the peers */

    /* Progress thread and its receive list. [0] abort, [1] signal, then
     * the armed slots (slot_of[i] for i >= 2). */
    pthread_t thread;
    int thread_started;
    _Alignas(AGMM_CACHE_LINE) _Atomic int stop;
    /* agmm_now_ns() at the progress thread's last pass (it writes, relaxed;
     * a timed-out wait reads it: agmm_mpi_stall_note). */
    _Atomic uint64_t beat_ns;
    pthread_mutex_t lock;
    MPI_Request *active;
    slot_t **slot_of;
    int nactive, cap;
    char abort_buf[REASON_MAX];
    uint64_t sig_buf[3]; /* window id, cell offset, value */
    /* Test hook AGMM_TEST_CTL_DELAY_US: the progress thread applies each
     * signal message that long after it arrived (progress thread only). */
    long ctl_delay_us;
    uint64_t deferred[3];
    int deferred_src; /* its sender + 1; 0: none deferred */

    /* Collectives (mpi_coll.c): each rank tells its peers when it enters
     * one, so a timed-out barrier can name who did not arrive. coll_seq
     * (plan thread) counts this rank's collectives; arrived[q] is the last
     * one rank q said it entered (progress thread writes, under lock);
     * arrive_msg/arrive_req: the announcement to each peer in flight. */
    uint64_t coll_seq;
    uint64_t *arrived;
    uint64_t *arrive_msg; /* [3 * size] */
    MPI_Request *arrive_req;

    /* Slots whose forwards wait for a destination's ready cell
     * (mpi_relay.c); progress thread and window free, under lock. */
    slot_t **fwd;
    int nfwd, fwd_cap;

    agmm_wintab_t windows; /* live windows by id, guarded by lock */
    mpi_node_t node;       /* same-host peers (mpi_node.h) */
} mpi_state_t;

static inline mpi_state_t *agmm_mpi_state(agmm_world_t *w)
{
    return (mpi_state_t *)w->impl;
}

/* Record an MPI error `rc` of `what`; AGMM_ERR_TRANSPORT. */
agmm_status_t agmm_mpi_fail(int rc, const char *what);

#define MPI_TRY(call, what)                                                    \
    do {                                                                       \
        int mpi_rc_ = (call);                                                  \
        if (mpi_rc_ != MPI_SUCCESS) return agmm_mpi_fail(mpi_rc_, what);       \
    } while (0)

/* A signal message with this window id is a collective announcement
 * {ARRIVE_ID, 0, collective number} (mpi_coll.c); ids never get here. */
#define AGMM_MPI_ARRIVE_ID UINT64_MAX

/* Complete `n` requests by `deadline`, failing early if the world is
 * aborted; a timeout or MPI error aborts the world. `what` names the
 * operation in messages. */
agmm_status_t agmm_mpi_wait_reqs(agmm_world_t *w, MPI_Request *reqs, int n,
                                 double deadline, const char *what);
/* The same; on a timeout `late` (if not NULL) appends who is late to the
 * message, e.g. " (rank 2 did not arrive)". */
agmm_status_t agmm_mpi_wait_reqs_named(agmm_world_t *w, MPI_Request *reqs,
                                       int n, double deadline, const char *what,
                                       void (*late)(agmm_world_t *, char *,
                                                    size_t));
/* Collectives' announcements (mpi_coll.c): set up / drain on the way out. */
agmm_status_t agmm_mpi_coll_init(agmm_world_t *w, mpi_state_t *s);
void agmm_mpi_coll_fini(mpi_state_t *s, int size);

/* The backend's data-plane vtable (mpi.c); its control entries are in
 * mpi.h, registered by world/mpi_world.c. */
extern const agmm_transport_ops_t agmm_mpi_ops;
/* The progress thread's body (mpi.c); started by mpi_state.c. */
void *agmm_mpi_progress_main(void *arg);
/* "; this rank's MPI progress thread has been stuck for 4.0 s" when its
 * last pass is over a second old, else "" (mpi_state.c; any thread, no
 * lock: the stuck thread may hold it). */
void agmm_mpi_stall_note(agmm_world_t *w, char *buf, size_t cap);
/* Sleep a little more the longer a wait lasts (`idle`: polls so far). */
void agmm_mpi_backoff(unsigned idle);

/* The window entries of the vtable (mpi_win.c). */
agmm_status_t agmm_mpi_win_alloc(agmm_world_t *w, size_t bytes,
                                 agmm_win_t *out);
void agmm_mpi_win_free(agmm_world_t *w, agmm_win_t *win);
agmm_status_t agmm_mpi_expect(agmm_world_t *w, const agmm_win_t *win, int src,
                              size_t off, size_t bytes,
                              const agmm_win_t *sigwin, size_t sig_off,
                              agmm_tp_recv_set_t set);
agmm_status_t agmm_mpi_round_begin(agmm_world_t *w, const agmm_win_t *sigwin,
                                   agmm_tp_recv_set_t set, uint64_t value);

#endif
