/* The MPI transport's windows (see mpi.c for the whole design): collective
 * allocation with ids that are never reused (wintab.h), the persistent
 * receives a plan declares once (expect) and each round starts
 * (round_begin), and freeing.
 *
 * Threads: the plan's thread calls all of these; the progress thread
 * reads the window table and the active receive list, both under the
 * state lock, which every change below takes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/mpi/mpi.h"
#include "transport/mpi/mpi_internal.h"
#include "transport/mpi/mpi_node.h"
#include "transport/mpi/mpi_relay.h"

agmm_status_t agmm_mpi_win_alloc(agmm_world_t *w, size_t bytes, agmm_win_t *out)
{
    mpi_state_t *s = agmm_mpi_state(w);
    /* Ids count up and are never reused (wintab.h): every rank allocates
     * windows in the same order, so they agree (checked below). The
     * window enters the table before the agreement, so a peer that got
     * past the agreement can only signal a window we already have. */
    pthread_mutex_lock(&s->lock);
    uint64_t id = agmm_wintab_take_id(&s->windows);
    pthread_mutex_unlock(&s->lock);
    mpi_win_t *mw = calloc(1, sizeof *mw);
    int added = -1;
    /* The memory: this rank's copy, and the same-host peers' copies mapped
     * (mpi_node.c). It is collective among the host's ranks, so it runs
     * even when `mw` could not be allocated (into a stand-in, released at
     * once; the allocation then fails below, on every rank). */
    mpi_win_t none = {.id = id};
    mpi_win_t *tmp = mw ? mw : &none;
    tmp->id = id;
    agmm_status_t st = agmm_mpi_node_win_alloc(w, tmp, bytes);
    if (mw && st == AGMM_OK) {
        mw->bytes = bytes;
        mw->comm = MPI_COMM_NULL;
        pthread_mutex_lock(&s->lock);
        added = agmm_wintab_add(&s->windows, id, mw);
        pthread_mutex_unlock(&s->lock);
    }
    if (!mw && st == AGMM_OK) agmm_mpi_node_win_free(s, &none);
    /* Every rank takes part in the agreement even when out of memory (or
     * its host failed to share the window), so the others do not wait for
     * it and every rank fails the allocation together. */
    if (st == AGMM_OK && added != 0)
        st = agmm_error(AGMM_ERR_NO_MEMORY,
                        "MPI: out of memory for a %zu-byte window", bytes);
    agmm_status_t agree = agmm_win_agree(w, added == 0 ? id : 0, bytes);
    if (st == AGMM_OK) st = agree;
    if (st == AGMM_OK) {
        MPI_Request req;
        int rc = MPI_Comm_idup(s->coll, &mw->comm, &req);
        st = rc == MPI_SUCCESS
                 ? agmm_mpi_wait_reqs(w, &req, 1, agmm_deadline(w, 0),
                                      "creating a window's communicator")
                 : agmm_mpi_fail(rc, "MPI_Comm_idup");
    }
    if (st != AGMM_OK) {
        pthread_mutex_lock(&s->lock);
        if (added == 0) agmm_wintab_remove(&s->windows, id);
        pthread_mutex_unlock(&s->lock);
        if (mw && mw->local) agmm_mpi_node_win_free(s, mw);
        free(mw);
        return st;
    }
    MPI_Comm_set_errhandler(mw->comm, MPI_ERRORS_RETURN);
    out->offset = (size_t)id;
    out->bytes = bytes;
    out->local = mw->local;
    out->impl = mw;
    return AGMM_OK;
}

/* Drop slot `sl` from the active list if it is there (lock held). */
static void deactivate(mpi_state_t *s, slot_t *sl)
{
    for (int i = 2; i < s->nactive; i++) {
        if (s->slot_of[i] != sl) continue;
        MPI_Cancel(&sl->req);
        MPI_Wait(&sl->req, MPI_STATUS_IGNORE);
        s->nactive--;
        s->active[i] = s->active[s->nactive];
        s->slot_of[i] = s->slot_of[s->nactive];
        return;
    }
}

void agmm_mpi_win_free(agmm_world_t *w, agmm_win_t *win)
{
    mpi_state_t *s = agmm_mpi_state(w);
    mpi_win_t *mw = win->impl;
    if (!mw) return;
    /* Rows this rank still forwards to its same-host peers (mpi_relay.c)
     * are read from this window: let them go first (they are done before
     * the peers can pass plan destroy's barrier; this is the safety net).
     * In an aborted world nobody waits for them. */
    if (!agmm_mpi_aborted(w))
        (void)agmm_mpi_relay_drain(w, mw, agmm_deadline(w, 0));
    pthread_mutex_lock(&s->lock);
    agmm_mpi_relay_forget(s, mw);
    agmm_wintab_remove(&s->windows, mw->id);
    for (int i = 0; i < mw->nslots; i++) {
        deactivate(s, mw->slots[i]);
        MPI_Request_free(&mw->slots[i]->req);
        free(mw->slots[i]);
    }
    pthread_mutex_unlock(&s->lock);
    free(mw->slots);
    MPI_Comm_free(&mw->comm);
    agmm_mpi_node_win_free(s, mw);
    free(mw);
    memset(win, 0, sizeof *win);
}

agmm_status_t agmm_mpi_expect(agmm_world_t *w, const agmm_win_t *win, int src,
                              size_t off, size_t bytes,
                              const agmm_win_t *sigwin, size_t sig_off,
                              agmm_tp_recv_set_t set)
{
    mpi_state_t *s = agmm_mpi_state(w);
    mpi_win_t *mw = sigwin->impl;
    size_t tag = sig_off / sizeof(uint64_t);
    if (src < 0 || src >= w->size || src == w->rank || off > win->bytes ||
        bytes > win->bytes - off || sig_off % sizeof(uint64_t) != 0 ||
        sig_off + sizeof(uint64_t) > sigwin->bytes)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "MPI: expect: a put from rank %d of %zu bytes at %zu "
                          "does not fit its window",
                          src, bytes, off);
    /* A same-host peer stores its rows and raises the cell itself
     * (mpi_node.c), and a rank of this host relays src's puts to us
     * (mpi_relay.c): nothing to receive. */
    if (agmm_mpi_same_host(s, src) || agmm_mpi_relayed(s, win, src, w->rank))
        return AGMM_OK;
    if (tag > (size_t)s->tag_ub)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "MPI: signal cell %zu exceeds the MPI tag bound %d "
                          "(use fewer, larger tiles)",
                          tag, s->tag_ub);
    if (bytes > (size_t)INT32_MAX)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "MPI: one put of %zu bytes exceeds 2 GiB (use a "
                          "smaller --tile-m)",
                          bytes);
    if (mw->nslots == mw->cap) {
        int cap = mw->cap ? 2 * mw->cap : 64;
        slot_t **n = realloc(mw->slots, sizeof *n * (size_t)cap);
        if (!n) return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
        mw->slots = n;
        mw->cap = cap;
    }
    slot_t *sl = calloc(1, sizeof *sl);
    if (!sl) return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    MPI_Recv_init(win->local + off, (int)bytes, MPI_BYTE, src, (int)tag,
                  mw->comm, &sl->req);
    sl->set = set;
    sl->src = src;
    sl->bytes = bytes;
    sl->cell = (_Atomic uint64_t *)(void *)(sigwin->local + sig_off);
    agmm_mpi_relay_slot(s, sl, win, sigwin, off, sig_off);
    mw->slots[mw->nslots++] = sl;
    return AGMM_OK;
}

agmm_status_t agmm_mpi_round_begin(agmm_world_t *w, const agmm_win_t *sigwin,
                                   agmm_tp_recv_set_t set, uint64_t value)
{
    mpi_state_t *s = agmm_mpi_state(w);
    mpi_win_t *mw = sigwin->impl;
    /* Our rows of the previous round are read by no one of ours now: a
     * relay of this host may forward this round's into our window
     * (mpi_relay.c). Before the receives are posted: a relay's own
     * forwards of the previous round must be done before a sender can
     * overwrite those rows, and it is our ack, after this, that lets it. */
    agmm_mpi_relay_ready(sigwin, value);
    AGMM_CHECK(agmm_mpi_relay_drain(w, mw, agmm_deadline(w, 0)));
    agmm_status_t st = AGMM_OK;
    pthread_mutex_lock(&s->lock);
    if (s->nactive + mw->nslots > s->cap) {
        int cap = s->nactive + mw->nslots;
        MPI_Request *a = realloc(s->active, sizeof *a * (size_t)cap);
        if (a) s->active = a;
        slot_t **o = a ? realloc(s->slot_of, sizeof *o * (size_t)cap) : NULL;
        if (o) {
            s->slot_of = o;
            s->cap = cap;
        } else {
            st = agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
        }
    }
    for (int i = 0; st == AGMM_OK && i < mw->nslots; i++) {
        slot_t *sl = mw->slots[i];
        if (sl->set != set) continue;
        for (int j = 2; j < s->nactive; j++)
            if (s->slot_of[j] == sl)
                st = agmm_error(AGMM_ERR_BAD_STATE,
                                "MPI: a receive from rank %d of the previous "
                                "round is still pending",
                                sl->src);
        if (st != AGMM_OK) break;
        sl->value = value;
        int rc = MPI_Start(&sl->req);
        if (rc != MPI_SUCCESS) {
            st = agmm_mpi_fail(rc, "MPI_Start of a tile receive");
            break;
        }
        s->active[s->nactive] = sl->req;
        s->slot_of[s->nactive++] = sl;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* Control messages dropped because their window was freed (wintab.h). */
uint64_t agmm_mpi_dropped(agmm_world_t *w)
{
    mpi_state_t *s = agmm_mpi_state(w);
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->windows.dropped;
    pthread_mutex_unlock(&s->lock);
    return n;
}
