/* Same-host peers under MPI (mpi_node.c): MPI starts the world and carries
 * the tiles between hosts; ranks that share a host put straight into each
 * other's windows, as the shm transport does (a memcpy into the peer's copy,
 * then a release store of the signal cell in the peer's copy of the signal
 * window, with a futex wake). Per peer, not per world: one plan mixes both
 * kinds of peers, and the protocol above sees one backend with
 * AGMM_TP_CAP_POSTED_RECEIVES (acks at round start, receives declared for
 * the peers on other hosts only).
 *
 * Which peers share a host: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), the
 * MPI library's own notion of a node (OpenMPI: the ranks of one daemon).
 * AGMM_MPI_SHM=0 turns the layer off (every peer over MPI, as before).
 *
 * Windows: with same-host peers, a window's copy on this rank is a named
 * segment (transport/shm/segment.h, /agmm:<uid>:mpi:<pid>:m<id>) created
 * O_EXCL 0600, opened by the same-host peers, unlinked once all of them
 * mapped it: nothing is left in /dev/shm after that, however the ranks end.
 *
 * Threads: setup, window alloc/free on the plan's thread; put/signal from
 * any worker thread (they only read the window's peer table, written before
 * the window is handed out); counters are relaxed atomics. */
#ifndef AGMM_TRANSPORT_MPI_NODE_H
#define AGMM_TRANSPORT_MPI_NODE_H

#include "transport/mpi/mpi_internal.h"

/* Collective over MPI_COMM_WORLD: find the same-host peers. */
agmm_status_t agmm_mpi_node_init(agmm_world_t *w, mpi_state_t *s);
void agmm_mpi_node_fini(mpi_state_t *s);

/* 1 if `peer` is another rank on this host (its windows are mapped here). */
static inline int agmm_mpi_same_host(const mpi_state_t *s, int peer)
{
    return s->node.node_of && s->node.node_of[peer] >= 0;
}

/* Collective (the plan's thread of every rank): the window's memory on this
 * rank (a named segment when the host has other ranks, else the heap),
 * zero-filled, and the same-host peers' copies mapped into mw->peer[].
 * Returns AGMM_OK on this rank; a failure on any rank of the host is
 * returned on every rank of the host (the caller then fails the world's
 * agreement, so every rank of every host fails the allocation together). */
agmm_status_t agmm_mpi_node_win_alloc(agmm_world_t *w, mpi_win_t *mw,
                                      size_t bytes);
/* Unmap (or free) the window's memory and the peers' copies. */
void agmm_mpi_node_win_free(mpi_state_t *s, mpi_win_t *mw);

/* The put and the signal to a same-host peer: the copy and the release
 * store, complete on return (quiet has nothing to wait for). */
void agmm_mpi_node_put(mpi_state_t *s, const agmm_win_t *win, int dst,
                       size_t off, const void *src, size_t bytes,
                       const agmm_win_t *sigwin, size_t sig_off,
                       uint64_t value);
void agmm_mpi_node_signal(mpi_state_t *s, const agmm_win_t *sigwin, int dst,
                          size_t sig_off, uint64_t value);

/* AGMM_MPI_COUNTERS=1: one line per rank at the end, on stderr, with the
 * tiles and signals sent to same-host peers (shm) and over MPI. */
void agmm_mpi_node_report(agmm_world_t *w, mpi_state_t *s);

#endif
