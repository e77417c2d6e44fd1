/* The MPI world's barrier and all-gather (its control entries, mpi.h;
 * world/mpi_world.c registers them), over the backend's `coll`
 * communicator, on the plan's thread.
 *
 * MPI's collectives do not say who is missing when one does not complete.
 * So every rank, entering its k-th collective, tells each peer "I entered
 * k" with a 24-byte control message (window id AGMM_MPI_ARRIVE_ID, the
 * signal message's format; the peer's progress thread records it in
 * arrived[]). When a collective times out, the ranks whose last
 * announcement is below k are the ones that did not arrive, and the
 * message names them: `timed out in a barrier (rank 2 did not arrive)`.
 * An announcement to a peer that has not taken the previous one yet is
 * skipped (that peer is stuck; it would be late anyway). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "transport/mpi/mpi.h"
#include "transport/mpi/mpi_internal.h"

agmm_status_t agmm_mpi_coll_init(agmm_world_t *w, mpi_state_t *s)
{
    s->arrived = calloc((size_t)w->size, sizeof *s->arrived);
    s->arrive_msg = calloc(3 * (size_t)w->size, sizeof *s->arrive_msg);
    s->arrive_req = malloc(sizeof *s->arrive_req * (size_t)w->size);
    if (!s->arrived || !s->arrive_msg || !s->arrive_req)
        return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    for (int q = 0; q < w->size; q++)
        s->arrive_req[q] = MPI_REQUEST_NULL;
    return AGMM_OK;
}

void agmm_mpi_coll_fini(mpi_state_t *s, int size)
{
    if (s->arrive_req)
        for (int q = 0; q < size; q++) /* delivered or not: the job ends */
            if (s->arrive_req[q] != MPI_REQUEST_NULL)
                MPI_Request_free(&s->arrive_req[q]);
    free(s->arrived);
    free(s->arrive_msg);
    free(s->arrive_req);
}

/* Tell every peer this rank entered its next collective. */
static void announce(agmm_world_t *w)
{
    mpi_state_t *s = agmm_mpi_state(w);
    uint64_t k = ++s->coll_seq;
    for (int q = 0; q < w->size; q++) {
        if (q == w->rank) continue;
        int done = 1;
        if (s->arrive_req[q] != MPI_REQUEST_NULL)
            MPI_Test(&s->arrive_req[q], &done, MPI_STATUS_IGNORE);
        if (!done) continue; /* q has not taken the previous one */
        uint64_t *m = &s->arrive_msg[3 * q];
        m[0] = AGMM_MPI_ARRIVE_ID;
        m[1] = 0;
        m[2] = k;
        if (MPI_Isend(m, 3, MPI_UINT64_T, q, TAG_SIGNAL, s->ctl,
                      &s->arrive_req[q]) != MPI_SUCCESS)
            s->arrive_req[q] = MPI_REQUEST_NULL; /* a diagnostic only */
    }
}

/* " (ranks 1, 3 did not arrive)", for the collective in progress. The
 * announcements are the progress thread's, under its lock: a stuck
 * progress thread may hold it, so wait for it one second at most and then
 * say that instead of blaming the peers. */
static void late_ranks(agmm_world_t *w, char *buf, size_t cap)
{
    mpi_state_t *s = agmm_mpi_state(w);
    size_t len = 0;
    int n = 0;
    char list[200] = "", self[100];
    agmm_mpi_stall_note(w, self, sizeof self);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    if (pthread_mutex_timedlock(&s->lock, &until) != 0) {
        snprintf(buf, cap, " (%s)",
                 self[0] ? self + 2
                         : "this rank's MPI progress thread has held its lock "
                           "for over a second");
        return;
    }
    for (int q = 0; q < w->size; q++) {
        if (q == w->rank || s->arrived[q] >= s->coll_seq) continue;
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d",
                                    n ? ", " : "", q);
        n++;
    }
    pthread_mutex_unlock(&s->lock);
    if (self[0])
        snprintf(buf, cap, " (%s)", self + 2);
    else if (n)
        snprintf(buf, cap, " (rank%s %s did not arrive)", n > 1 ? "s" : "",
                 list);
    else
        snprintf(buf, cap,
                 " (every rank entered it: its messages were not delivered in "
                 "time)");
}

/* The plan's thread is outside the worker pool that prints a rank's
 * abort once: print it here. */
static agmm_status_t loud(agmm_status_t st)
{
    if (st != AGMM_ERR_ABORTED) return st;
    /* A copy: agmm_error writes the thread's message buffer, which must not
     * also be its argument (that printed "agmm: rank 0: " and nothing). */
    char reason[REASON_MAX + 128];
    snprintf(reason, sizeof reason, "%s", agmm_thread_error());
    return agmm_error(AGMM_ERR_ABORTED, "%s",
                      reason[0] ? reason : "aborted (no reason recorded)");
}

agmm_status_t agmm_mpi_barrier(agmm_world_t *w, double deadline)
{
    MPI_Request req;
    announce(w);
    MPI_TRY(MPI_Ibarrier(agmm_mpi_state(w)->coll, &req), "MPI_Ibarrier");
    return loud(agmm_mpi_wait_reqs_named(w, &req, 1, deadline, "a barrier",
                                         late_ranks));
}

agmm_status_t agmm_mpi_allgather(agmm_world_t *w, const void *in, void *out,
                                 size_t bytes, double deadline)
{
    MPI_Request req;
    announce(w);
    MPI_TRY(MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE,
                           agmm_mpi_state(w)->coll, &req),
            "MPI_Iallgather");
    return loud(agmm_mpi_wait_reqs_named(
        w, &req, 1, deadline, "an all-gather of control data", late_ranks));
}
