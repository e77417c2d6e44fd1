/* The process's worker threads, kept from one round to the next.
 *
 * A round with n workers runs worker 0 on the calling thread and workers
 * 1..n-1 on other threads. Starting and joining a thread for each of them
 * every round cost 51 us a thread on a paravirtualized guest, more than a
 * whole decode round's exchange (docs/history/, "A round's system
 * calls"), so the threads are made once per process, on first need, and
 * wait between rounds: they spin for 50 us (the next round of a loop of
 * rounds is usually there by then), then sleep in futex(2) until the
 * next. One process is one rank (forked, joined or MPI), so the pool is
 * the rank's; a child forked from a process with a pool starts with none.
 *
 * Thread i is pinned, when it is made, to worker i's CPU of the rank's
 * share (agmm_bind_worker_cpu, place/bind.c), and moves itself if that
 * CPU has changed by a later round; unbound, it keeps the affinity it
 * inherited from the thread that made it. */
#ifndef AGMM_WORLD_POOL_H
#define AGMM_WORLD_POOL_H

typedef void (*agmm_pool_fn)(void *arg, int i);

/* Run fn(arg, i) for every i in [0, n): i = 0 on the calling thread, the
 * others on the pool's threads, and return once every call has returned;
 * what the calls wrote is then visible to the caller, as after a join.
 * Returns 1 when it ran them; 0 when it ran none: the pool is in use by
 * another thread of this process (a round of another world) or a thread
 * could not be made; the caller then starts threads of its own.
 * `spin` 0: the waits (the caller's for the threads, theirs for the next
 * round) sleep at once, for threads that share cores. */
int agmm_pool_run(int n, agmm_pool_fn fn, void *arg, int spin);

/* Threads the pool has made in this process (a test hook). */
int agmm_pool_threads(void);

#endif
