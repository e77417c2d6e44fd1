/* MPI transport: the ranks are the processes of MPI_COMM_WORLD, on one host
 * or many. Standard MPI-3 calls only (OpenMPI, MPICH and vendor MPIs).
 *
 * Tiles are two-sided messages received straight into place:
 *   - plan creation declares every incoming put with expect(); each becomes
 *     a persistent receive (MPI_Recv_init) into the peer's rows of this
 *     rank's `gathered` window, tagged with the signal cell it raises, on a
 *     communicator of its own per signal window. Set up once per plan.
 *   - round_begin() starts (MPI_Start) the receives of the round's receive set
 *     and hands them to the progress thread. The ops layer calls it before
 *     it acks the previous round to its peers, and a peer puts only after
 *     that ack, so every tile finds its receive posted: MPI delivers it
 *     into the gathered rows with no staging copy (eager or rendezvous).
 *   - put_signal() is an MPI_Isend from the caller's thread; quiet() waits
 *     for the calling thread's sends (with the world's timeout and abort).
 *   - one progress thread per process tests the posted receives
 *     (MPI_Testsome) and, for each completed tile, stores the round's epoch
 *     into the tile's local signal cell with release order. GEMM workers
 *     wait only on those local cells (agmm_signal_wait, acquire), exactly
 *     as on shm: MPI's completion happens before the progress thread's
 *     release store, so a worker that sees the epoch sees the rows.
 *   - signal() (the end-of-round ack) is a 24-byte message {window id,
 *     cell, value} on the control communicator; the progress thread
 *     stores it. Window ids are never reused (wintab.h): a message for a
 *     window freed meanwhile is dropped and counted, never applied to a
 *     later window (plan teardown waits for acks, so none is expected).
 *   - abort() records the reason and sends it to every peer on the control
 *     communicator; the progress thread of a peer records it, so that
 *     peer's waits fail with a message naming the rank that failed.
 *   - the baseline's all-gather is MPI_Iallgatherv (allgather_rows) on a
 *     communicator of its own, completed with a deadline.
 * Workers send while the progress thread receives, so the backend needs
 * MPI_THREAD_MULTIPLE and refuses to start with less.
 *
 * Ranks on the same host skip all of the above between them: put_signal
 * and signal to such a peer are a copy and a release store into its
 * shared window (mpi_node.c), nothing is declared or received for them.
 *
 * Windows, the declared receives and round_begin are in mpi_win.c; the
 * same-host peers in mpi_node.c; relaying tiles across hosts in
 * mpi_relay.c; barrier and all-gather in mpi_coll.c; the backend's start
 * and stop (communicators, progress thread) in mpi_state.c; the state
 * shared by these files in mpi_internal.h. The MPI
 * world itself (MPI_Init_thread, MPI_COMM_WORLD) is made in
 * world/mpi_world.c.
 *
 * Threads: the caller's threads call win_alloc/free, round_begin, barrier
 * and allgather (the thread that runs the plan); any worker thread calls
 * put_signal, signal, quiet, abort; the progress thread owns the active
 * receive list, guarded by `lock` (round_begin appends to it). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fault.h"
#include "common/log.h"
#include "common/util.h"
#include "transport/mpi/mpi.h"
#include "transport/mpi/mpi_internal.h"
#include "transport/mpi/mpi_node.h"
#include "transport/mpi/mpi_relay.h"

#define MAX_PENDING 1024 /* sends in flight per thread before quiet */

#ifdef AGMM_PLANT_PROGRESS_RACE
/* Test build only (tests/CMakeLists.txt compiles this file a second time
 * with the flag for sanitizer_canary_mpi_progress_race; the library never
 * has it): a plain int the progress thread writes after each poll and
 * every waiting thread reads, with nothing ordering them. ThreadSanitizer
 * must report it, which shows that the OpenMPI suppressions
 * (tests/sanitizers/tsan.supp) leave races in agmm's own progress thread
 * visible. */
int agmm_mpi_planted_race;
#define PLANT_WRITE() (agmm_mpi_planted_race++)
#define PLANT_READ()  ((void)*(volatile int *)&agmm_mpi_planted_race)
#else
#define PLANT_WRITE() ((void)0)
#define PLANT_READ()  ((void)0)
#endif

agmm_status_t agmm_mpi_fail(int rc, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return agmm_error(AGMM_ERR_TRANSPORT, "MPI: %s failed: %s", what, msg);
}

/* ----------------------------------------------------------- abort */

/* The state machine is common/abort.c; this backend delivers the reason
 * to the peers (agmm_mpi_abort) and takes theirs (the progress thread).
 * agmm_mpi_abort and agmm_mpi_aborted are also the MPI world's control
 * entries (mpi.h; registered by world/mpi_world.c). */
const char *agmm_mpi_aborted(agmm_world_t *w)
{
    return agmm_abort_reason(&agmm_mpi_state(w)->abort,
                             AGMM_ABORT_WAIT_LOCAL_S);
}

static int record_abort(mpi_state_t *s, const char *reason)
{
    return agmm_abort_record(&s->abort, reason);
}

/* First abort wins; the reason goes to every peer as a control message
 * (nonblocking: a dead peer must not block us). */
void agmm_mpi_abort(agmm_world_t *w, const char *reason)
{
    mpi_state_t *s = agmm_mpi_state(w);
    if (!record_abort(s, reason)) return;
    atomic_store_explicit(&s->abort_originated, 1, memory_order_relaxed);
    for (int q = 0; q < w->size; q++)
        if (q != w->rank)
            MPI_Isend(s->abort.reason, (int)strlen(s->abort.reason) + 1,
                      MPI_CHAR, q, TAG_ABORT, s->ctl, &s->abort_sends[q]);
}

/* ------------------------------------------------ waiting on requests */

/* Sleep a little more the longer a wait lasts (ranks may oversubscribe
 * the cores, and MPI progress is driven by the progress thread). */
void agmm_mpi_backoff(unsigned idle)
{
    if (idle < 64) {
        agmm_cpu_relax();
        return;
    }
    struct timespec ts = {0, idle < 1024 ? 10000L : 100000L};
    nanosleep(&ts, NULL);
}

agmm_status_t agmm_mpi_wait_reqs(agmm_world_t *w, MPI_Request *reqs, int n,
                                 double deadline, const char *what)
{
    return agmm_mpi_wait_reqs_named(w, reqs, n, deadline, what, NULL);
}

agmm_status_t agmm_mpi_wait_reqs_named(agmm_world_t *w, MPI_Request *reqs,
                                       int n, double deadline, const char *what,
                                       void (*late)(agmm_world_t *, char *,
                                                    size_t))
{
    for (unsigned idle = 0;; idle++) {
        int done = 0;
        int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            agmm_status_t e = agmm_mpi_fail(rc, what);
            char reason[REASON_MAX];
            snprintf(reason, sizeof reason, "rank %d: %s", w->rank,
                     agmm_thread_error());
            agmm_mpi_abort(w, reason);
            return e;
        }
        if (done) return AGMM_OK;
        const char *reason = agmm_mpi_aborted(w);
        if (reason)
            return agmm_error_quiet(AGMM_ERR_ABORTED, "aborted during %s: %s",
                                    what, reason);
        if (agmm_now() > deadline) {
            char who[256] = "";
            if (late) late(w, who, sizeof who); /* " (rank 2 did not ...)" */
            agmm_error(AGMM_ERR_TIMEOUT, "timed out in %s%s", what, who);
            char r[REASON_MAX];
            snprintf(r, sizeof r, "rank %d timed out in %s%s", w->rank, what,
                     who);
            agmm_mpi_abort(w, r);
            return AGMM_ERR_TIMEOUT;
        }
        PLANT_READ();
        agmm_mpi_backoff(idle);
    }
}

/* ------------------------------------------------ sends of one thread */

/* Sends issued by this thread and not yet known complete. The payload of
 * a signal message lives here until its send completes. */
typedef struct pending {
    MPI_Request req;
    int dst;
    uint64_t payload[3];
} pending_t;
static _Thread_local pending_t pending[MAX_PENDING];
static _Thread_local int npending;

static agmm_status_t mpi_quiet(agmm_world_t *w)
{
    if (npending == 0) return AGMM_OK;
    MPI_Request reqs[MAX_PENDING];
    for (int i = 0; i < npending; i++)
        reqs[i] = pending[i].req;
    char what[96];
    snprintf(what, sizeof what, "completing %d send%s (the first to rank %d)",
             npending, npending == 1 ? "" : "s", pending[0].dst);
    agmm_status_t st =
        agmm_mpi_wait_reqs(w, reqs, npending, agmm_deadline(w, 0), what);
    /* On failure the requests stay unfinished: the process is ending. */
    npending = 0;
    return st;
}

/* A free pending entry (waits for the earlier sends when all are used). */
static agmm_status_t pending_slot(agmm_world_t *w, pending_t **out)
{
    if (npending == MAX_PENDING) AGMM_CHECK(mpi_quiet(w));
    *out = &pending[npending];
    return AGMM_OK;
}

static agmm_status_t mpi_put_signal(agmm_world_t *w, const agmm_win_t *win,
                                    int dst, size_t off, const void *src,
                                    size_t bytes, const agmm_win_t *sigwin,
                                    size_t sig_off, uint64_t value)
{
    mpi_state_t *s = agmm_mpi_state(w);
    if (agmm_mpi_same_host(s, dst)) { /* mpi_node.c: copy + release store */
        agmm_mpi_node_put(s, win, dst, off, src, bytes, sigwin, sig_off, value);
        return AGMM_OK;
    }
    /* Forwarded to dst by its host's relay (mpi_relay.c): no receive. */
    if (agmm_mpi_relayed(s, win, w->rank, dst)) return AGMM_OK;
    /* Another host: the receiver posted the receive for (this rank, cell)
     * into `off` of its `win`, and publishes its round's epoch, which is
     * `value`; the message carries the rows only. */
    if (bytes > (size_t)INT32_MAX)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "MPI: one put of %zu bytes exceeds 2 GiB (use a "
                          "smaller --tile-m)",
                          bytes);
    const mpi_win_t *mw = sigwin->impl;
    pending_t *pe;
    AGMM_CHECK(pending_slot(w, &pe));
    atomic_fetch_add_explicit(&s->node.mpi_puts, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->node.mpi_bytes, bytes, memory_order_relaxed);
    MPI_TRY(MPI_Isend(src, (int)bytes, MPI_BYTE, dst,
                      (int)(sig_off / sizeof(uint64_t)), mw->comm, &pe->req),
            "MPI_Isend of a tile");
    pe->dst = dst;
    npending++;
    return AGMM_OK;
}

static agmm_status_t mpi_signal(agmm_world_t *w, const agmm_win_t *sigwin,
                                int dst, size_t sig_off, uint64_t value)
{
    const mpi_win_t *mw = sigwin->impl;
    /* Test hook (fault.h): control sends count as puts on MPI, so a fault
     * can also hit a rank between its tiles and its acks. */
    AGMM_CHECK(agmm_fault_before_put(w->rank));
    mpi_state_t *s = agmm_mpi_state(w);
    if (agmm_mpi_same_host(s, dst)) {
        agmm_mpi_node_signal(s, sigwin, dst, sig_off, value);
        return AGMM_OK;
    }
    atomic_fetch_add_explicit(&s->node.mpi_signals, 1, memory_order_relaxed);
    pending_t *pe;
    AGMM_CHECK(pending_slot(w, &pe));
    pe->payload[0] = mw->id;
    pe->payload[1] = sig_off;
    pe->payload[2] = value;
    MPI_TRY(MPI_Isend(pe->payload, 3, MPI_UINT64_T, dst, TAG_SIGNAL, s->ctl,
                      &pe->req),
            "MPI_Isend of a signal");
    pe->dst = dst;
    npending++;
    return AGMM_OK;
}

/* ------------------------------------------------- progress thread */

/* A signal message {window id, cell offset, value} from rank `src` (lock
 * held). */
static void apply_signal(agmm_world_t *w, const uint64_t msg[3], int src)
{
    mpi_state_t *s = agmm_mpi_state(w);
    uint64_t id = msg[0], off = msg[1];
    if (id == AGMM_MPI_ARRIVE_ID) { /* a peer entered a collective */
        if (msg[2] > s->arrived[src]) s->arrived[src] = msg[2];
        return;
    }
    void *item;
    agmm_win_state_t ws = agmm_wintab_find(&s->windows, id, &item);
    const mpi_win_t *mw = item;
    if (ws == AGMM_WIN_FREED) {
        /* Its window is gone: a message that outlived its plan. The plan's
         * teardown waits for every ack peers send (plan.c), so none is
         * expected; should one come, it must not land in a later window
         * (ids are never reused), and it is counted. */
        s->windows.dropped++;
    } else if (!mw || off % sizeof(uint64_t) != 0 ||
               off + sizeof(uint64_t) > mw->bytes) {
        /* An id not allocated yet cannot come from a correct peer: a
         * window is in the table before its rank takes part in the
         * allocation's agreement (mpi_win_alloc), and a peer signals into
         * it only after that agreement completed on the peer, i.e. after
         * every rank contributed. */
        char r[REASON_MAX];
        snprintf(r, sizeof r,
                 "rank %d got a signal from rank %d for cell %llu of window "
                 "%llu, which it does not have",
                 w->rank, src, (unsigned long long)off, (unsigned long long)id);
        agmm_mpi_abort(w, r);
    } else {
        /* One writer per cell (the sender), messages from one sender
         * arrive in order: a release store keeps it monotonic; publish
         * also wakes waiters sleeping in the kernel. */
        agmm_signal_publish((_Atomic uint64_t *)(void *)(mw->local + off),
                            msg[2]);
    }
}

/* A completed receive of the list, at index i (lock held). Returns 1 if
 * entry i was removed (the last entry moved into its place). */
static int on_complete(agmm_world_t *w, int i, const MPI_Status *status)
{
    mpi_state_t *s = agmm_mpi_state(w);
    if (i == 0) { /* a peer aborted: its reason becomes ours */
        s->abort_buf[REASON_MAX - 1] = '\0';
        record_abort(s, s->abort_buf);
        MPI_Start(&s->active[0]);
        return 0;
    }
    if (i == 1) { /* an ack (or any signal without data) */
        if (s->ctl_delay_us > 0) {
            /* Test hook: applied later by progress_main, outside the lock
             * (the receive is re-armed only then, so order is kept). */
            memcpy(s->deferred, s->sig_buf, sizeof s->deferred);
            s->deferred_src = status->MPI_SOURCE + 1;
            return 0;
        }
        apply_signal(w, s->sig_buf, status->MPI_SOURCE);
        MPI_Start(&s->active[1]);
        return 0;
    }
    slot_t *sl = s->slot_of[i];
    int count = 0;
    MPI_Get_count(status, MPI_BYTE, &count);
    /* A declared receive is for the most bytes (the plan's most rows); a
     * round with fewer rows sends fewer, or none (ops/ag_gemm/call.c: the
     * ranks agree on the rows through their rows cells). More cannot fit. */
    if (count == MPI_UNDEFINED || (size_t)count > sl->bytes) {
        char r[REASON_MAX];
        snprintf(r, sizeof r,
                 "rank %d received %d bytes from rank %d where at most %zu "
                 "were expected (ranks disagree on the plan)",
                 w->rank, count, sl->src, sl->bytes);
        agmm_mpi_abort(w, r);
    }
    /* Release: the rows MPI just completed are visible to a worker whose
     * acquire load of the cell returns the epoch. */
    agmm_signal_publish(sl->cell, sl->value);
    /* A relay passes them on to its same-host peers (mpi_relay.c); not
     * rows that did not fit (the world is aborting). */
    if (count != MPI_UNDEFINED && (size_t)count <= sl->bytes)
        agmm_mpi_relay_received(w, sl, (size_t)count);
    s->nactive--;
    s->active[i] = s->active[s->nactive];
    s->slot_of[i] = s->slot_of[s->nactive];
    return 1;
}

void *agmm_mpi_progress_main(void *arg)
{
    agmm_world_t *w = arg;
    mpi_state_t *s = agmm_mpi_state(w);
    int cap = 0, *idx = NULL;
    MPI_Status *sts = NULL;
    unsigned idle = 0;
    while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
        atomic_store_explicit(&s->beat_ns, agmm_now_ns(), memory_order_relaxed);
        if (s->deferred_src) { /* test hook: a late ack, see on_complete */
            struct timespec ts = {s->ctl_delay_us / 1000000,
                                  s->ctl_delay_us % 1000000 * 1000};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&s->lock);
            apply_signal(w, s->deferred, s->deferred_src - 1);
            s->deferred_src = 0;
            MPI_Start(&s->active[1]);
            pthread_mutex_unlock(&s->lock);
        }
        pthread_mutex_lock(&s->lock);
        if (cap < s->nactive) { /* round_begin grew the list */
            free(idx);
            free(sts);
            cap = s->cap;
            idx = malloc(sizeof *idx * (size_t)cap);
            sts = malloc(sizeof *sts * (size_t)cap);
            if (!idx || !sts) {
                pthread_mutex_unlock(&s->lock);
                char r[REASON_MAX];
                snprintf(r, sizeof r, "rank %d: progress thread out of memory",
                         w->rank);
                agmm_mpi_abort(w, r);
                break;
            }
        }
        int n = 0;
        int rc = MPI_Testsome(s->nactive, s->active, &n, idx, sts);
        /* Forwards waiting for a same-host peer to begin its round. */
        int forwarding = s->nfwd > 0 && agmm_mpi_relay_progress(w) > 0;
        int armed = s->nactive > 2 || forwarding;
        if (rc != MPI_SUCCESS && !agmm_mpi_aborted(w)) {
            pthread_mutex_unlock(&s->lock);
            agmm_mpi_fail(rc, "MPI_Testsome in the progress thread");
            char r[REASON_MAX];
            snprintf(r, sizeof r, "rank %d: %s", w->rank, agmm_thread_error());
            agmm_mpi_abort(w, r);
            break;
        }
        if (rc == MPI_SUCCESS && n != MPI_UNDEFINED && n > 0) {
            /* Highest index first, so removals don't move pending ones. */
            for (int a = 0; a < n; a++)
                for (int b = a + 1; b < n; b++)
                    if (idx[b] > idx[a]) {
                        int t = idx[a];
                        idx[a] = idx[b];
                        idx[b] = t;
                        MPI_Status u = sts[a];
                        sts[a] = sts[b];
                        sts[b] = u;
                    }
            for (int a = 0; a < n; a++)
                on_complete(w, idx[a], &sts[a]);
            idle = 0;
        } else {
            idle++;
        }
        pthread_mutex_unlock(&s->lock);
        PLANT_WRITE();
        if (idle == 0) continue;
        if (!armed) /* only acks and aborts can come: poll gently */
            nanosleep(&(struct timespec){0, 200000L}, NULL);
        else
            agmm_mpi_backoff(idle);
    }
    free(idx);
    free(sts);
    return NULL;
}

/* ------------------------------------------------------ collectives */

/* Barrier and all-gather (the world's control entries) are in mpi_coll.c. */

static agmm_status_t mpi_allgather_rows(agmm_world_t *w, const agmm_win_t *win,
                                        const void *src, size_t row_bytes,
                                        const int64_t *rows,
                                        const int64_t *row_off, double deadline)
{
    if (row_bytes == 0 || row_bytes > (size_t)INT32_MAX)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "MPI: rows of %zu bytes (allowed 1..2 GiB)",
                          row_bytes);
    int *counts = malloc(sizeof(int) * 2 * (size_t)w->size);
    if (!counts) return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    int *displs = counts + w->size;
    for (int r = 0; r < w->size; r++) { /* plan.c keeps M <= INT_MAX */
        counts[r] = (int)rows[r];
        displs[r] = (int)row_off[r];
    }
    MPI_Datatype row;
    MPI_Request req;
    int rc = MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &row);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&row);
    if (rc == MPI_SUCCESS)
        rc = MPI_Iallgatherv(src ? src : win->local, counts[w->rank], row,
                             win->local, counts, displs, row,
                             agmm_mpi_state(w)->bulk, &req);
    agmm_status_t st = rc == MPI_SUCCESS
                           ? agmm_mpi_wait_reqs(w, &req, 1, deadline,
                                                "the baseline all-gather")
                           : agmm_mpi_fail(rc, "MPI_Iallgatherv");
    if (st == AGMM_OK) MPI_Type_free(&row);
    free(counts);
    return st;
}

const agmm_transport_ops_t agmm_mpi_ops = {
    .caps = AGMM_TP_CAP_POSTED_RECEIVES | AGMM_TP_CAP_NATIVE_ALLGATHER |
            AGMM_TP_CAP_FORWARD,
    .win_alloc = agmm_mpi_win_alloc,
    .win_free = agmm_mpi_win_free,
    .put_signal = mpi_put_signal,
    .signal = mpi_signal,
    .quiet = mpi_quiet,
    .expect = agmm_mpi_expect,
    .round_begin = agmm_mpi_round_begin,
    .replicate = agmm_mpi_replicate,
    .put_direct = agmm_mpi_put_direct,
    .forwarder = agmm_mpi_forwarder,
    .allgather_rows = mpi_allgather_rows,
    .stall_note = agmm_mpi_stall_note,
};
