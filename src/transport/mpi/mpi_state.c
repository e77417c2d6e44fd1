/* The MPI backend's start and stop: its own communicators (duplicated
 * from MPI_COMM_WORLD), the persistent control receives, the progress
 * thread; on the way out, the abort drain, the thread's join and MPI's
 * finalize. Called by world/mpi_world.c, which owns the world itself.
 *
 * Threads: start and stop run on the thread that creates / destroys the
 * world; the progress thread runs between them (mpi.c). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/param.h"
#include "common/util.h"
#include "transport/mpi/mpi.h"
#include "transport/mpi/mpi_internal.h"
#include "transport/mpi/mpi_node.h"

static agmm_status_t dup_comm(MPI_Comm *out)
{
    MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, out), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
    return AGMM_OK;
}

static agmm_status_t state_init(agmm_world_t *w, mpi_state_t *s)
{
    AGMM_CHECK(dup_comm(&s->ctl));
    AGMM_CHECK(dup_comm(&s->coll));
    AGMM_CHECK(dup_comm(&s->bulk));
    AGMM_CHECK(agmm_mpi_node_init(w, s)); /* same-host peers */
    AGMM_CHECK(agmm_mpi_coll_init(w, s)); /* collectives' announcements */
    void *ub = NULL;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    s->tag_ub = flag && ub ? *(int *)ub : 32767;
    s->abort_sends = malloc(sizeof(MPI_Request) * (size_t)w->size);
    s->cap = 16;
    s->active = malloc(sizeof(MPI_Request) * (size_t)s->cap);
    s->slot_of = calloc((size_t)s->cap, sizeof(slot_t *));
    if (!s->abort_sends || !s->active || !s->slot_of)
        return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    for (int q = 0; q < w->size; q++)
        s->abort_sends[q] = MPI_REQUEST_NULL;
    pthread_mutex_init(&s->lock, NULL);
    /* Test hook (tests/unit/test_recreate.c): the progress thread sleeps this
     * long before it applies each ack, so acks land late. */
    s->ctl_delay_us = agmm_param_int(AGMM_PARAM_TEST_CTL_DELAY_US);
    if (s->ctl_delay_us < 0 || s->ctl_delay_us > 1000000) s->ctl_delay_us = 0;
    MPI_TRY(MPI_Recv_init(s->abort_buf, REASON_MAX, MPI_CHAR, MPI_ANY_SOURCE,
                          TAG_ABORT, s->ctl, &s->active[0]),
            "MPI_Recv_init");
    MPI_TRY(MPI_Recv_init(s->sig_buf, 3, MPI_UINT64_T, MPI_ANY_SOURCE,
                          TAG_SIGNAL, s->ctl, &s->active[1]),
            "MPI_Recv_init");
    MPI_TRY(MPI_Startall(2, s->active), "MPI_Startall");
    s->nactive = 2;
    atomic_store_explicit(&s->beat_ns, agmm_now_ns(), memory_order_relaxed);
    if (pthread_create(&s->thread, NULL, agmm_mpi_progress_main, w) != 0)
        return agmm_error(AGMM_ERR_SYSTEM, "MPI: cannot start the progress "
                                           "thread");
    s->thread_started = 1;
    return AGMM_OK;
}

agmm_status_t agmm_mpi_backend_start(agmm_world_t *w, int we_initialized)
{
    mpi_state_t *s = agmm_alloc(sizeof *s);
    if (!s) return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    s->we_initialized = we_initialized;
    w->ops = &agmm_mpi_ops;
    w->impl = s;
    return state_init(w, s);
}

/* Wait (bounded) for the requests, ignoring errors: used on the way out. */
static void drain(MPI_Request *reqs, int n, double seconds)
{
    double end = agmm_now() + seconds;
    int done = 0;
    while (!done && agmm_now() < end) {
        if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            return;
        if (!done) agmm_mpi_backoff(1024);
    }
}

void agmm_mpi_backend_stop(agmm_world_t *w)
{
    mpi_state_t *s = agmm_mpi_state(w);
    /* Whether, not why: no wait for a reason still being written. */
    int aborted = agmm_abort_reason(&s->abort, 0) != NULL;
    if (aborted &&
        atomic_load_explicit(&s->abort_originated, memory_order_relaxed)) {
        /* Let the peers' progress threads take our reason and print it
         * before the launcher, seeing us exit non-zero, stops them. */
        drain(s->abort_sends, w->size, 1.0);
        struct timespec ts = {0, 300000000L};
        nanosleep(&ts, NULL);
    }
    atomic_store_explicit(&s->stop, 1, memory_order_release);
    if (s->thread_started) pthread_join(s->thread, NULL);
    agmm_mpi_node_report(w, s);
    if (aborted) {
        /* Finalize is collective and a peer may be gone, stuck or cut
         * off: never finalize. End the whole job instead, from every rank
         * that knows of the abort (the one that detected the failure and
         * every peer its message reached): the launcher kills the ranks
         * through its daemons, also under launchers that let the others
         * run on when one rank exits non-zero. The reason was printed
         * where it was detected, and the peers were told above (the
         * originator waited for its sends). Whether mpirun can end a job
         * with a host it no longer reaches is up to its own failure
         * detection (docs/mpi.md, "Failures across hosts"). */
        MPI_Abort(MPI_COMM_WORLD, 1);
        return; /* MPI_Abort does not return */
    }
    for (int i = 0; i < 2; i++) {
        MPI_Cancel(&s->active[i]);
        MPI_Wait(&s->active[i], MPI_STATUS_IGNORE);
        MPI_Request_free(&s->active[i]);
    }
    agmm_mpi_coll_fini(s, w->size);
    MPI_Comm_free(&s->ctl);
    MPI_Comm_free(&s->coll);
    MPI_Comm_free(&s->bulk);
    agmm_mpi_node_fini(s);
    if (s->we_initialized) MPI_Finalize();
    pthread_mutex_destroy(&s->lock);
    agmm_wintab_free(&s->windows);
    free(s->active);
    free(s->slot_of);
    free(s->fwd); /* the relay's pending list (mpi_relay.c), empty by now */
    free(s->abort_sends);
    agmm_free(s);
    w->impl = NULL;
}

void agmm_mpi_stall_note(agmm_world_t *w, char *buf, size_t cap)
{
    mpi_state_t *s = agmm_mpi_state(w);
    buf[0] = 0;
    if (!s->thread_started) return;
    uint64_t beat = atomic_load_explicit(&s->beat_ns, memory_order_relaxed);
    uint64_t now = agmm_now_ns();
    if (now > beat && now - beat > 1000000000ull)
        snprintf(buf, cap,
                 "; this rank's MPI progress thread has been stuck for %.1f s",
                 (double)(now - beat) * 1e-9);
}
