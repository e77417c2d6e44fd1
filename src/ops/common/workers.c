/* The worker threads of one round (workers.h). */
#include "ops/common/workers.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ops/common/plan.h"
#include "ops/common/round.h"
#include "place/place.h"
#include "trace/trace.h"
#include "transport/transport.h"
#include "world/pool.h"

typedef struct {
    agmm_world_t *world;
    agmm_worker_t *self;
} trampoline_t;

static void run_one(agmm_world_t *w, agmm_worker_t *self)
{
    self->status = self->fn(self);
    if (self->status == AGMM_OK) return;
    snprintf(self->error, sizeof self->error, "%s", agmm_thread_error());
    /* At once, not after the join: this rank's other workers (and its
     * peers) may be waiting for what this one would have done. */
    agmm_world_fail(w, self->status, "run its round");
}

static void *thread_main(void *arg)
{
    trampoline_t *t = arg;
    run_one(t->world, t->self);
    return NULL;
}

/* Workers 1..n-1 on threads started for this call, joined before it
 * returns: when the pool is busy (another world's round in this process)
 * or could not make its threads. */
static agmm_status_t run_spawned(agmm_world_t *w, agmm_worker_t *ws, int n)
{
    trampoline_t tr[n > 0 ? n : 1];
    int started = 1;
    agmm_status_t st = AGMM_OK;
    for (int i = 1; i < n; i++) {
        tr[i].world = w;
        tr[i].self = &ws[i];
        pthread_attr_t attr;
        int attr_ok = pthread_attr_init(&attr) == 0;
        if (attr_ok) agmm_bind_worker_attr(&attr, i);
        int rc = pthread_create(&ws[i].thread, attr_ok ? &attr : NULL,
                                thread_main, &tr[i]);
        if (attr_ok) pthread_attr_destroy(&attr);
        if (rc != 0) {
            st = agmm_error(AGMM_ERR_SYSTEM, "could not start worker thread %d",
                            i);
            agmm_world_abort_with(w,
                                  "a rank could not start its worker threads");
            break;
        }
        started++;
    }
    if (n > 0) run_one(w, &ws[0]);
    for (int i = 1; i < started; i++)
        pthread_join(ws[i].thread, NULL);
    return st;
}

typedef struct {
    agmm_world_t *world;
    agmm_worker_t *ws;
} pool_task_t;

/* Worker i on the pool's thread i (world/pool.h). A pool thread outlives
 * the round: its trace lane is cleared after the worker, so no later
 * record of that thread lands in this round's trace. */
static void pool_worker(void *arg, int i)
{
    const pool_task_t *t = arg;
    run_one(t->world, &t->ws[i]);
    if (i > 0) agmm_trace_thread(NULL, AGMM_TRACE_GEMM_WORKER, 0);
}

/* 1 when each of n workers has a CPU of its own: n CPUs in the rank's
 * share (bound), or in the calling thread's affinity (unbound), and no
 * more ranks than cores on the host. */
static int own_cores(const agmm_world_t *w, int n)
{
    if (w->oversubscribed) return 0;
    const agmm_cpuset_t *share = agmm_bind_rank_cpus();
    if (share) return n <= agmm_cpuset_count(share);
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) != 0 || n <= CPU_COUNT(&set);
}

agmm_status_t agmm_workers_run(agmm_world_t *w, agmm_worker_t *ws, int n)
{
    /* A bound rank (place/bind.c) runs worker i on CPU i mod n of its n, the
     * calling thread (worker 0) included, for the call only; unbound
     * (--bind none, MPI), the threads inherit the caller's affinity. The
     * other workers run on the process's pool of threads, kept between
     * rounds (world/pool.h), whose waits spin only when every worker has
     * a core of its own; with the pool busy, on threads of their own.
     * Either way every worker has returned, and its writes are visible
     * here, before this returns. */
    agmm_bind_saved_t saved;
    agmm_bind_self(0, &saved);
    pool_task_t task = {w, ws};
    agmm_status_t st = AGMM_OK;
    if (!agmm_pool_run(n, pool_worker, &task, n > 1 && own_cores(w, n)))
        st = run_spawned(w, ws, n);
    agmm_bind_restore(&saved);
    if (st != AGMM_OK) return st;

    int first = -1;
    for (int i = 0; i < n; i++) {
        if (ws[i].status == AGMM_OK) continue;
        if (first < 0 || (ws[first].status == AGMM_ERR_ABORTED &&
                          ws[i].status != AGMM_ERR_ABORTED))
            first = i;
    }
    if (first < 0) return AGMM_OK;
    /* Timeouts and local errors were printed where they were detected; an
     * abort is printed here, once per rank, with what this rank waited for. */
    if (ws[first].status == AGMM_ERR_ABORTED)
        return agmm_error(AGMM_ERR_ABORTED, "%s", ws[first].error);
    return agmm_error_quiet(ws[first].status, "%s", ws[first].error);
}

agmm_status_t agmm_round_run(agmm_round_t *x, agmm_worker_fn gemm_fn,
                             agmm_worker_fn comm_fn)
{
    int n = x->comm_workers + x->gemm_workers;
    agmm_worker_t *ws = agmm_alloc(sizeof *ws * (size_t)n);
    if (!ws) return agmm_error(AGMM_ERR_NO_MEMORY, "run: out of memory");
    for (int i = 0; i < n; i++) {
        int gemm = i < x->gemm_workers;
        ws[i].fn = gemm ? gemm_fn : comm_fn;
        ws[i].index = gemm ? i : i - x->gemm_workers;
        ws[i].ctx = x;
    }
    agmm_status_t st = agmm_workers_run(x->p->world, ws, n);
    agmm_free(ws);
    return st;
}
