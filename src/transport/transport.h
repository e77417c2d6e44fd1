/* The transport layer, the data plane only: symmetric windows,
 * put-with-signal and signal waits, behind one vtable with one folder per
 * backend (shm/: processes on one host sharing memory, with the link
 * emulator; mpi/: MPI, across hosts). Worlds are made and torn down in
 * world/, which calls the backends' own headers (shm/shm.h, mpi/mpi.h) and
 * registers each world's control table (world/world_ops.h: barrier,
 * allgather, abort, ...) beside this one; the control plane is reached
 * through world/world.h.
 *
 * Callers above the transport (ops/, trace/) never read the vtable: they
 * call the agmm_tp_* wrappers below and ask agmm_tp_has() for a capability
 * (AGMM_TP_CAP_*) where the protocol differs between backends.
 *
 * Signals are 64-bit epoch counters living in a window. A signal has one
 * writer (the rank that owns the data it guards) and is only ever raised:
 * round e publishes the value e and a reader waits for ">= e". Publication
 * is a release store made after the data is in place; the wait is an acquire
 * load, so a reader that sees e also sees the data of round e. */
#ifndef AGMM_TRANSPORT_H
#define AGMM_TRANSPORT_H

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agmm.h"
#include "common/util.h"

typedef struct agmm_win {
    size_t offset; /* same on every rank (symmetric) */
    size_t bytes;
    unsigned char *local; /* this rank's copy */
    void *impl;           /* backend state (e.g. an MPI window) */
} agmm_win_t;

/* Capabilities: what the protocol above the transport must know about a
 * backend, as bits of agmm_transport_ops_t.caps. */
/* Puts are one-sided stores into the peer's memory (shm): nothing has to be
 * declared or posted on the receiving side. */
#define AGMM_TP_CAP_ONE_SIDED 0x1u
/* Receives must be posted before a round (MPI): every put a rank will
 * receive is declared once (agmm_tp_expect) and a round posts its receive
 * set (agmm_tp_round_begin) before acking the previous round, so acks go out
 * at round start, not at round end. Rounds that issue no puts would leave
 * posted receives unmatched. */
#define AGMM_TP_CAP_POSTED_RECEIVES 0x2u
/* The backend gathers row blocks natively (agmm_tp_allgather_rows: MPI's
 * MPI_Iallgatherv); the baseline schedule uses it instead of puts. */
#define AGMM_TP_CAP_NATIVE_ALLGATHER 0x4u
/* The backend may deliver one put to several peers (MPI across hosts: one
 * copy per remote host, to a relay rank there that forwards it to its
 * same-host peers through shared memory), for windows the caller declared
 * replicated (agmm_tp_replicate). A put to a peer that gets it forwarded
 * is skipped (agmm_tp_put_direct says which). */
#define AGMM_TP_CAP_FORWARD 0x8u

/* A receive set: the puts a round arms together (AGMM_TP_CAP_POSTED_RECEIVES
 * only). The caller names its sets (e.g. one per schedule); the transport
 * only compares them. */
typedef int agmm_tp_recv_set_t;

typedef struct agmm_transport_ops {
    unsigned caps; /* AGMM_TP_CAP_* */
    /* Collective. A zeroed window of `bytes` on every rank. */
    agmm_status_t (*win_alloc)(agmm_world_t *w, size_t bytes, agmm_win_t *out);
    /* Collective. */
    void (*win_free)(agmm_world_t *w, agmm_win_t *win);
    /* Copy `bytes` from `src` to rank `dst`'s `win` at `off`, then raise the
     * signal at `sig_off` of `dst`'s `sigwin` to `value` with release order.
     * May return before the copy is done (the backend owns completion; src
     * must stay unchanged until quiet()). */
    agmm_status_t (*put_signal)(agmm_world_t *w, const agmm_win_t *win, int dst,
                                size_t off, const void *src, size_t bytes,
                                const agmm_win_t *sigwin, size_t sig_off,
                                uint64_t value);
    /* Raise a signal on `dst` without data (release). */
    agmm_status_t (*signal)(agmm_world_t *w, const agmm_win_t *sigwin, int dst,
                            size_t sig_off, uint64_t value);
    /* Every put/signal issued by the calling thread is complete at its
     * target. */
    agmm_status_t (*quiet)(agmm_world_t *w);
    /* --- Entries set only with AGMM_TP_CAP_POSTED_RECEIVES ---------------
     * A two-sided backend (mpi/mpi.c) receives every put straight into place
     * with a receive it posted in advance, so it must know what will arrive.
     * expect(): declared once per plan after win_alloc: `src` will put
     * `bytes` at `off` of this rank's `win`, then raise cell `sig_off` of
     * this rank's `sigwin`; the put belongs to receive set `set` (the ops
     * layer has one set per schedule, so a round arms only what it uses). */
    agmm_status_t (*expect)(agmm_world_t *w, const agmm_win_t *win, int src,
                            size_t off, size_t bytes, const agmm_win_t *sigwin,
                            size_t sig_off, agmm_tp_recv_set_t set);
    /* The round that raises signals of `sigwin` to `value` uses receive set
     * `set`: post its receives. The ops layer calls it before telling peers
     * (with the previous round's ack) that they may put this round's data,
     * so every put finds its receive posted. */
    agmm_status_t (*round_begin)(agmm_world_t *w, const agmm_win_t *sigwin,
                                 agmm_tp_recv_set_t set, uint64_t value);
    /* --- Set only with AGMM_TP_CAP_FORWARD --------------------------------
     * replicate(): declared once per plan after win_alloc, before expect(),
     * by every rank alike: every put into `win` carries the same bytes, at
     * the same offset and with the same signal cell, to every peer (an
     * all-gather's tiles), so the backend may forward one put to several
     * peers. put_direct(): 1 if a put from this rank into `win` must be
     * issued to `dst`, 0 if `dst` gets it forwarded by another rank (the
     * put would be a no-op; the caller skips it and the wait for its ack). */
    agmm_status_t (*replicate)(agmm_world_t *w, const agmm_win_t *win);
    int (*put_direct)(agmm_world_t *w, const agmm_win_t *win, int dst);
    /* The rank that forwards `src`'s puts into `win` to this rank, or -1
     * when src puts them here itself (for messages: who failed to). */
    int (*forwarder)(agmm_world_t *w, const agmm_win_t *win, int src);
    /* --- Set only with AGMM_TP_CAP_NATIVE_ALLGATHER ----------------------
     * A native all-gather of row blocks (the baseline on MPI is the
     * MPI_Allgather an MPI user would write). Collective, called by one
     * thread per rank: rank r's rows[r] rows of `row_bytes` from its `src`
     * land at row row_off[r] of every rank's `win`. Returns when this
     * rank's copy is complete (or with a timeout / abort). */
    agmm_status_t (*allgather_rows)(agmm_world_t *w, const agmm_win_t *win,
                                    const void *src, size_t row_bytes,
                                    const int64_t *rows, const int64_t *row_off,
                                    double deadline);
    /* --- Optional on any backend (NULL: nothing to say) ----------------
     * For a wait that timed out: what in this rank itself may have kept
     * the signal from arriving (a progress thread that stopped running),
     * as "; ..." text, or "" when this rank looks well. Any thread; takes
     * no lock (the stuck thread may hold it). */
    void (*stall_note)(agmm_world_t *w, char *buf, size_t cap);
} agmm_transport_ops_t;

/* Most bytes per rank of the control plane's allgather (world/). */
#define AGMM_ALLGATHER_MAX 1024

/* The world's control table (barrier, allgather, abort, ...): defined and
 * owned by world/ (world/world_ops.h) and opaque here. */
struct agmm_world_ops;

struct agmm_world {
    const agmm_transport_ops_t *ops;  /* data plane: this header's table */
    const struct agmm_world_ops *ctl; /* control plane: world/world_ops.h */
    int rank;
    int size;
    double timeout_s;   /* default wait timeout */
    int oversubscribed; /* more ranks than cores: waits must not spin */
    void *impl;         /* backend state */
};

/* ---- What the data plane needs from the control plane -----------------
 * Defined by world/ (world/world.c, over the world's control table) and
 * declared here, so that transport/ calls them without including world/
 * (world/ includes transport/, not the reverse). Only these three cross
 * upwards: the waits' abort (signal.c, shm/link.c) and the backends'
 * window agreement (win_alloc). Any thread for the first two. */
/* Mark the world aborted with `reason` as given (first abort wins). */
void agmm_world_abort_with(agmm_world_t *w, const char *reason);
/* NULL while the world runs; the reason once it is aborted. */
const char *agmm_world_aborted(agmm_world_t *w);

/* ---- The data plane as ops/ and trace/ call it -------------------------
 * Thin wrappers over the vtable; the optional entries become no-ops (or an
 * error for allgather_rows) on a backend without the capability. */
static inline int agmm_tp_has(const agmm_world_t *w, unsigned cap)
{
    return (w->ops->caps & cap) == cap;
}

static inline agmm_status_t agmm_tp_win_alloc(agmm_world_t *w, size_t bytes,
                                              agmm_win_t *out)
{
    return w->ops->win_alloc(w, bytes, out);
}

static inline void agmm_tp_win_free(agmm_world_t *w, agmm_win_t *win)
{
    w->ops->win_free(w, win);
}

static inline agmm_status_t
agmm_tp_put_signal(agmm_world_t *w, const agmm_win_t *win, int dst, size_t off,
                   const void *src, size_t bytes, const agmm_win_t *sigwin,
                   size_t sig_off, uint64_t value)
{
    return w->ops->put_signal(w, win, dst, off, src, bytes, sigwin, sig_off,
                              value);
}

static inline agmm_status_t agmm_tp_signal(agmm_world_t *w,
                                           const agmm_win_t *sigwin, int dst,
                                           size_t sig_off, uint64_t value)
{
    return w->ops->signal(w, sigwin, dst, sig_off, value);
}

static inline agmm_status_t agmm_tp_quiet(agmm_world_t *w)
{
    return w->ops->quiet(w);
}

/* No-op without AGMM_TP_CAP_POSTED_RECEIVES. */
static inline agmm_status_t
agmm_tp_expect(agmm_world_t *w, const agmm_win_t *win, int src, size_t off,
               size_t bytes, const agmm_win_t *sigwin, size_t sig_off,
               agmm_tp_recv_set_t set)
{
    if (!agmm_tp_has(w, AGMM_TP_CAP_POSTED_RECEIVES)) return AGMM_OK;
    return w->ops->expect(w, win, src, off, bytes, sigwin, sig_off, set);
}

/* No-op without AGMM_TP_CAP_POSTED_RECEIVES. */
static inline agmm_status_t agmm_tp_round_begin(agmm_world_t *w,
                                                const agmm_win_t *sigwin,
                                                agmm_tp_recv_set_t set,
                                                uint64_t value)
{
    if (!agmm_tp_has(w, AGMM_TP_CAP_POSTED_RECEIVES)) return AGMM_OK;
    return w->ops->round_begin(w, sigwin, set, value);
}

/* No-op without AGMM_TP_CAP_FORWARD. */
static inline agmm_status_t agmm_tp_replicate(agmm_world_t *w,
                                              const agmm_win_t *win)
{
    if (!agmm_tp_has(w, AGMM_TP_CAP_FORWARD)) return AGMM_OK;
    return w->ops->replicate(w, win);
}

/* Always 1 without AGMM_TP_CAP_FORWARD. */
static inline int agmm_tp_put_direct(agmm_world_t *w, const agmm_win_t *win,
                                     int dst)
{
    if (!agmm_tp_has(w, AGMM_TP_CAP_FORWARD)) return 1;
    return w->ops->put_direct(w, win, dst);
}

/* -1 without AGMM_TP_CAP_FORWARD. */
static inline int agmm_tp_forwarder(agmm_world_t *w, const agmm_win_t *win,
                                    int src)
{
    if (!agmm_tp_has(w, AGMM_TP_CAP_FORWARD)) return -1;
    return w->ops->forwarder(w, win, src);
}

/* Only with AGMM_TP_CAP_NATIVE_ALLGATHER (callers check first). */
static inline agmm_status_t
agmm_tp_allgather_rows(agmm_world_t *w, const agmm_win_t *win, const void *src,
                       size_t row_bytes, const int64_t *rows,
                       const int64_t *row_off, double deadline)
{
    return w->ops->allgather_rows(w, win, src, row_bytes, rows, row_off,
                                  deadline);
}

/* What a wait was for, so a timeout or abort can say so. */
typedef struct agmm_wait_what {
    const char *kind; /* "tile", "ack", ... */
    int peer;         /* the rank expected to raise the signal */
    int64_t index;    /* tile index, or -1 */
    /* The rank that forwards it to this one (agmm_tp_forwarder), if
     * via_set: a timeout names it too. Zero-initialised: none. */
    int via_set, via;
    /* The cell holds (round << 32) | rows (a rows cell: agmm_rows_signal):
     * a timeout states the rounds and the rows, not the raw values. */
    int rows_cell;
} agmm_wait_what_t;

/* A signal cell: the first 16 bytes of its own cache line (signal.c): the
 * 64-bit epoch, then the count of waiters sleeping in the kernel. */
#define AGMM_SIGNAL_CELL_BYTES 16

/* Raise the cell to `value` (release) and wake its sleepers. Every backend
 * and every in-process counter that someone waits on publishes with it. */
void agmm_signal_publish(_Atomic uint64_t *sig, uint64_t value);
/* Test hook: futex wake calls agmm_signal_publish made in this process. */
uint64_t agmm_signal_wake_count(void);

/* Wait until *sig >= at_least (acquire), the deadline passes, or the world
 * is aborted. Spins briefly, then yields, then sleeps in the kernel until
 * published, so that ranks oversubscribing cores still make progress. On
 * timeout or abort the error is recorded with rank, what, expected and
 * observed values; a timeout also aborts the world. */
agmm_status_t agmm_signal_wait(agmm_world_t *w, const _Atomic uint64_t *sig,
                               uint64_t at_least, double deadline,
                               const agmm_wait_what_t *what);
/* agmm_signal_wait whose timeout message also says who is missing: `late`
 * (called on the waiting thread, only on timeout) writes e.g. " (rank 2
 * did not arrive)" into buf. The shm barrier's (transport/shm/shm.c). */
typedef void (*agmm_late_fn)(agmm_world_t *w, char *buf, size_t cap);
agmm_status_t agmm_signal_wait_late(agmm_world_t *w,
                                    const _Atomic uint64_t *sig,
                                    uint64_t at_least, double deadline,
                                    const agmm_wait_what_t *what,
                                    agmm_late_fn late);

/* The signal cell at byte offset `off` of this rank's copy of `win`. */
static inline _Atomic uint64_t *agmm_win_signal(const agmm_win_t *win,
                                                size_t off)
{
    return (_Atomic uint64_t *)(void *)(win->local + off);
}

/* The deadline for a wait starting now with `timeout_s` (<= 0: world's).
 * Inline, as a read of the world's field: world/ and the backends make
 * deadlines, signal.c's waits take them (no file calls the other for it). */
static inline double agmm_deadline(const agmm_world_t *w, double timeout_s)
{
    /* NaN or infinity would make the wait endless: the default instead. */
    if (!(timeout_s > 0) || isinf(timeout_s))
        timeout_s =
            w->timeout_s > 0 && !isinf(w->timeout_s) ? w->timeout_s : 60.0;
    return agmm_now() + timeout_s;
}

/* Collective, for backends' win_alloc: check that every rank allocates the
 * same window (same `key`, e.g. offset or id, and same size). Defined by
 * world/ (world.c: it is a control-plane allgather); see the upcalls above. */
agmm_status_t agmm_win_agree(agmm_world_t *w, uint64_t key, size_t bytes);

#endif
