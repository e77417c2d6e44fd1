/* Relaying across hosts (mpi_relay.c: the design, threads and memory
 * order): one copy of an all-gather tile per remote host, forwarded there
 * through shared memory. */
#ifndef AGMM_TRANSPORT_MPI_RELAY_H
#define AGMM_TRANSPORT_MPI_RELAY_H

#include "transport/mpi/mpi_internal.h"

/* Is q the rank that receives src's tiles for q's host? */
int agmm_mpi_is_relay(const mpi_state_t *s, int src, int q);
/* Does dst get src's puts into `win` forwarded (so src skips it)? */
int agmm_mpi_relayed(const mpi_state_t *s, const agmm_win_t *win, int src,
                     int dst);

/* The vtable's replicate and put_direct (transport.h). */
agmm_status_t agmm_mpi_replicate(agmm_world_t *w, const agmm_win_t *win);
int agmm_mpi_put_direct(agmm_world_t *w, const agmm_win_t *win, int dst);
int agmm_mpi_forwarder(agmm_world_t *w, const agmm_win_t *win, int src);

/* expect(): mark a declared receive as one this rank forwards (when it
 * relays for its host). */
void agmm_mpi_relay_slot(mpi_state_t *s, slot_t *sl, const agmm_win_t *win,
                         const agmm_win_t *sigwin, size_t off, size_t sig_off);
/* Progress thread, lock held: the receive of `sl` completed with `got`
 * bytes (its own cell is raised): forward it, or queue what must wait. */
void agmm_mpi_relay_received(agmm_world_t *w, slot_t *sl, size_t got);
/* Progress thread, lock held: retry the queued forwards; returns how many
 * slots still wait. */
int agmm_mpi_relay_progress(agmm_world_t *w);
/* round_begin: this rank has begun round `value` of the plan whose signal
 * window is `sigwin` (release; relays may forward its rows now). */
void agmm_mpi_relay_ready(const agmm_win_t *sigwin, uint64_t value);
/* round_begin and window free (plan thread): wait until none of the
 * signal window's forwards is pending, with the deadline and the abort. */
agmm_status_t agmm_mpi_relay_drain(agmm_world_t *w, mpi_win_t *mw,
                                   double deadline);
/* Window free, lock held: drop the window's queued forwards. */
void agmm_mpi_relay_forget(mpi_state_t *s, mpi_win_t *mw);

#endif
