/* Relaying across hosts (AGMM_TP_CAP_FORWARD): an all-gather's tile crosses
 * the network once per remote host, not once per remote rank.
 *
 * For a window the op declared replicated (every put into it carries the
 * same bytes, at the same offset and with the same signal cell, to every
 * peer: ag-gemm's tiles), a sender s puts each tile directly to its
 * same-host peers (shared memory, mpi_node.c) and, on every other host H,
 * to one rank only: relay(s, H), the rank of H whose index among H's ranks
 * is s's own index modulo |H| (so a host's ranks share the relaying). The
 * relay receives it as any tile (a receive posted at round start, before
 * its ack) and then, in its progress thread, forwards it to each other
 * rank p of its host: a copy into p's window at the same place, then a
 * release store of p's cell (p's GEMM worker waits on its cell as for any
 * tile). Ranks that get a tile forwarded post no receive for it, and the
 * sender skips them (agmm_tp_put_direct: no put and no wait for their ack).
 *
 * When may the relay R write round e's rows into p's window? Only once p
 * has finished reading round e - 1's: p raises its ready cell to e in its
 * round_begin(e) (release, after every worker of round e - 1 joined and
 * before its acks of round e - 1), and R copies only after an acquire load
 * of p's ready cell reads >= e; a forward that finds p not ready waits in
 * R's pending list, retried by the progress thread. And R must not let the
 * sender overwrite its own rows before they are forwarded: R's round_begin
 * of round e + 1 (which re-posts the receives and precedes R's acks of
 * round e) first waits until none of the window's forwards is pending; so
 * does window free (plan destroy). That wait cannot deadlock: p's forwards
 * of round e wait only for p to begin round e, and p needs nothing from R
 * for that but the forwards of round e - 1, which R finished before it
 * began round e. The protocol model checks it (tests/model, "relay"
 * configurations; docs/design.md).
 *
 * Threads: replicate/expect/round_begin/win_free on the plan's thread;
 * put_direct on any worker thread (reads constants); forwards run on the
 * progress thread; the pending list and slots' forward state are guarded by
 * the state lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "common/log.h"
#include "transport/mpi/mpi.h"
#include "transport/mpi/mpi_internal.h"
#include "transport/mpi/mpi_node.h"
#include "transport/mpi/mpi_relay.h"

int agmm_mpi_is_relay(const mpi_state_t *s, int src, int q)
{
    const mpi_node_t *n = &s->node;
    return n->hidx[q] == n->hidx[src] % n->hsize[q];
}

agmm_status_t agmm_mpi_replicate(agmm_world_t *w, const agmm_win_t *win)
{
    (void)w;
    mpi_win_t *mw = win->impl;
    mw->replicated = 1;
    return AGMM_OK;
}

int agmm_mpi_relayed(const mpi_state_t *s, const agmm_win_t *win, int src,
                     int dst)
{
    const mpi_win_t *mw = win->impl;
    return s->node.relay && mw->replicated && !agmm_mpi_same_host(s, dst) &&
           !agmm_mpi_same_host(s, src) && src != dst &&
           !agmm_mpi_is_relay(s, src, dst);
}

int agmm_mpi_put_direct(agmm_world_t *w, const agmm_win_t *win, int dst)
{
    return !agmm_mpi_relayed(agmm_mpi_state(w), win, w->rank, dst);
}

int agmm_mpi_forwarder(agmm_world_t *w, const agmm_win_t *win, int src)
{
    const mpi_state_t *s = agmm_mpi_state(w);
    if (!agmm_mpi_relayed(s, win, src, w->rank)) return -1;
    /* relayed implies this host's layer is on (world_of is set) */
    return s->node.world_of[s->node.hidx[src] % s->node.size];
}

void agmm_mpi_relay_slot(mpi_state_t *s, slot_t *sl, const agmm_win_t *win,
                         const agmm_win_t *sigwin, size_t off, size_t sig_off)
{
    const mpi_win_t *dw = win->impl;
    sl->fwd = s->node.relay && dw->replicated && s->node.node_of != NULL;
    sl->dw = dw;
    sl->sw = sigwin->impl;
    sl->off = off;
    sl->sig_off = sig_off;
}

/* Forward slot `sl`'s rows to every same-host peer in its todo set that is
 * ready for its round (lock held). Returns 1 when none is left. */
static int forward(agmm_world_t *w, mpi_state_t *s, slot_t *sl)
{
    mpi_node_t *n = &s->node;
    for (int i = 0; i < n->size && sl->todo; i++) {
        if (!(sl->todo & (1ull << i))) continue;
        int p = n->world_of[i];
        const _Atomic uint64_t *ready =
            (const _Atomic uint64_t *)(const void *)(sl->sw->peer[p] +
                                                     sl->sw->ready_off);
        /* Acquire: p's reads of the previous round's rows happen before
         * its release store of `ready`, hence before our copy. */
        if (atomic_load_explicit(ready, memory_order_acquire) < sl->value)
            continue;
        /* Test hook (fault.h): a forward counts as a put of this rank. A
         * hang blocks this thread (peers time out); an error aborts. */
        if (agmm_fault_before_put(w->rank) != AGMM_OK) {
            char r[AGMM_ABORT_REASON_MAX];
            snprintf(r, sizeof r, "rank %d: %s", w->rank, agmm_thread_error());
            agmm_mpi_abort(w, r);
            sl->todo = 0;
            return 1;
        }
        memcpy(sl->dw->peer[p] + sl->off, sl->dw->local + sl->off, sl->got);
        /* Release after the rows, with a wake for a sleeping reader. */
        agmm_signal_publish(
            (_Atomic uint64_t *)(void *)(sl->sw->peer[p] + sl->sig_off),
            sl->value);
        sl->todo &= ~(1ull << i);
        atomic_fetch_add_explicit(&n->fwd_puts, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&n->fwd_bytes, sl->got, memory_order_relaxed);
    }
    return sl->todo == 0;
}

void agmm_mpi_relay_received(agmm_world_t *w, slot_t *sl, size_t got)
{
    mpi_state_t *s = agmm_mpi_state(w);
    if (!sl->fwd) return;
    mpi_node_t *n = &s->node;
    sl->got = got;
    sl->todo =
        (n->size >= 64 ? ~0ull : (1ull << n->size) - 1) & ~(1ull << n->rank);
    if (forward(w, s, sl)) return;
    if (s->nfwd == s->fwd_cap) {
        int cap = s->fwd_cap ? 2 * s->fwd_cap : 64;
        slot_t **a = realloc(s->fwd, sizeof *a * (size_t)cap);
        if (!a) {
            char r[AGMM_ABORT_REASON_MAX];
            snprintf(r, sizeof r, "rank %d: out of memory forwarding tiles",
                     w->rank);
            agmm_mpi_abort(w, r);
            return;
        }
        s->fwd = a;
        s->fwd_cap = cap;
    }
    s->fwd[s->nfwd++] = sl;
    sl->sw->fwd_slots++;
}

int agmm_mpi_relay_progress(agmm_world_t *w)
{
    mpi_state_t *s = agmm_mpi_state(w);
    for (int i = 0; i < s->nfwd;) {
        slot_t *sl = s->fwd[i];
        if (forward(w, s, sl)) {
            sl->sw->fwd_slots--;
            s->fwd[i] = s->fwd[--s->nfwd];
        } else {
            i++;
        }
    }
    return s->nfwd;
}

void agmm_mpi_relay_ready(const agmm_win_t *sigwin, uint64_t value)
{
    mpi_win_t *mw = sigwin->impl;
    atomic_store_explicit(
        (_Atomic uint64_t *)(void *)(mw->local + mw->ready_off), value,
        memory_order_release);
}

agmm_status_t agmm_mpi_relay_drain(agmm_world_t *w, mpi_win_t *mw,
                                   double deadline)
{
    mpi_state_t *s = agmm_mpi_state(w);
    for (unsigned idle = 0;; idle++) {
        pthread_mutex_lock(&s->lock);
        int left = mw->fwd_slots;
        int src = -1, peer = -1;
        for (int i = 0; left && i < s->nfwd; i++)
            if (s->fwd[i]->sw == mw) {
                const slot_t *sl = s->fwd[i];
                src = sl->src;
                for (int b = 0; b < s->node.size; b++)
                    if (sl->todo & (1ull << b)) {
                        peer = s->node.world_of[b];
                        break;
                    }
                break;
            }
        pthread_mutex_unlock(&s->lock);
        if (!left) return AGMM_OK;
        const char *reason = agmm_mpi_aborted(w);
        if (reason)
            return agmm_error_quiet(
                AGMM_ERR_ABORTED, "aborted while forwarding tiles: %s", reason);
        if (agmm_now() > deadline) {
            agmm_error(AGMM_ERR_TIMEOUT,
                       "timed out forwarding tiles of rank %d to rank %d, "
                       "which did not begin the round (%d tile%s pending)",
                       src, peer, left, left == 1 ? "" : "s");
            char r[AGMM_ABORT_REASON_MAX];
            snprintf(r, sizeof r,
                     "rank %d timed out forwarding tiles of rank %d to rank "
                     "%d, which did not begin the round",
                     w->rank, src, peer);
            agmm_mpi_abort(w, r);
            return AGMM_ERR_TIMEOUT;
        }
        agmm_mpi_backoff(idle);
    }
}

void agmm_mpi_relay_forget(mpi_state_t *s, mpi_win_t *mw)
{
    for (int i = 0; i < s->nfwd;) {
        if (s->fwd[i]->sw == mw) {
            s->fwd[i] = s->fwd[--s->nfwd];
        } else {
            i++;
        }
    }
    mw->fwd_slots = 0;
}
