/* The worker threads of one round (workers.h). */
#include "ops/common/workers.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "ops/common/plan_internal.h"
#include "place/place.h"
#include "transport/transport.h"

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

agmm_status_t agmm_workers_run(agmm_world_t *w, agmm_worker_t *ws, int n)
{
    trampoline_t tr[n > 0 ? n : 1];
    int started = 1;
    agmm_status_t st = AGMM_OK;
    /* A bound rank (place/bind.c) runs worker i on CPU i mod n of its n, the
     * calling thread (worker 0) included, for the call only; unbound
     * (--bind none, MPI), the threads inherit the caller's affinity. */
    agmm_bind_saved_t saved;
    agmm_bind_self(0, &saved);
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
