/* The world's control plane: the public agmm_world_* functions (thin,
 * checked wrappers) and the internal ones of world/world.h, the only
 * callers of the world's control table (world_ops.h, w->ctl); and
 * agmm_win_agree, which transport/transport.h declares for the backends'
 * window allocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "world/world.h"

int agmm_world_rank(const agmm_world_t *w)
{
    return w ? w->rank : -1;
}
int agmm_world_size(const agmm_world_t *w)
{
    return w ? w->size : -1;
}

const char *agmm_world_transport_name(const agmm_world_t *w)
{
    return w ? w->ctl->name : "none";
}

void agmm_world_destroy(agmm_world_t *w)
{
    /* Each kind of world destroys itself (mpi_world.c, joined.c); a forked
     * world has no entry: it belongs to the launcher. */
    if (w && w->ctl->destroy) w->ctl->destroy(w);
}

void agmm_world_set_timeout(agmm_world_t *w, double timeout_s)
{
    if (w && timeout_s > 0) w->timeout_s = timeout_s;
}

int agmm_world_link_emulated(const agmm_world_t *w, double *gbps,
                             double *latency_us)
{
    if (gbps) *gbps = 0;
    if (latency_us) *latency_us = 0;
    if (!w || !w->ctl->link) return 0; /* a real link */
    return w->ctl->link(w, gbps, latency_us);
}

/* A collective (barrier, all-gather) completed in an aborted world is not
 * one: every rank that finds the world aborted as it leaves gets
 * AGMM_ERR_ABORTED, whether it arrived last (shm's barrier says so
 * itself) or was woken by the completed count. In shm the abort cell's
 * release store happens-before this check whenever the rank whose arrival
 * completed the count had seen the abort before arriving (its fetch_add
 * and the generation's release carry it), so a late rank entering after
 * the others timed out wakes every waiter into ABORTED, never OK; over
 * MPI the abort is a message on another communicator, seen here if it
 * has arrived. An abort after the collective is seen or not, as by any
 * later call. */
static agmm_status_t completed(agmm_world_t *w, agmm_status_t st,
                               const char *what)
{
    if (st != AGMM_OK) return st;
    const char *reason = agmm_world_aborted(w);
    if (reason)
        return agmm_error_quiet(AGMM_ERR_ABORTED,
                                "aborted during %s of all ranks: %s", what,
                                reason);
    return AGMM_OK;
}

agmm_status_t agmm_world_barrier_until(agmm_world_t *w, double deadline)
{
    return completed(w, w->ctl->barrier(w, deadline), "a barrier");
}

agmm_status_t agmm_world_allgather_until(agmm_world_t *w, const void *in,
                                         void *out, size_t bytes,
                                         double deadline)
{
    return completed(w, w->ctl->allgather(w, in, out, bytes, deadline),
                     "an all-gather");
}

void agmm_world_abort_with(agmm_world_t *w, const char *reason)
{
    w->ctl->abort(w, reason);
}

const char *agmm_world_aborted(agmm_world_t *w)
{
    return w->ctl->aborted(w);
}

uint64_t agmm_world_dropped_messages(agmm_world_t *w)
{
    return w && w->ctl->dropped ? w->ctl->dropped(w) : 0;
}

agmm_status_t agmm_world_barrier(agmm_world_t *w, double timeout_s)
{
    if (!w) return agmm_error(AGMM_ERR_INVALID_ARG, "barrier: world is NULL");
    return agmm_world_barrier_until(w, agmm_deadline(w, timeout_s));
}

agmm_status_t agmm_world_allgather(agmm_world_t *w, const void *in, void *out,
                                   size_t bytes)
{
    if (!w || !in || !out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "allgather: NULL argument");
    if (bytes == 0 || bytes > AGMM_ALLGATHER_MAX)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "allgather: %zu bytes per rank (allowed 1..%d)",
                          bytes, AGMM_ALLGATHER_MAX);
    return agmm_world_allgather_until(w, in, out, bytes, agmm_deadline(w, 0));
}

void agmm_world_abort(agmm_world_t *w, const char *message)
{
    if (!w) return;
    char reason[400];
    snprintf(reason, sizeof reason, "rank %d aborted: %s", w->rank,
             message ? message : "(no reason given)");
    w->ctl->abort(w, reason);
}

agmm_status_t agmm_win_agree(agmm_world_t *w, uint64_t key, size_t bytes)
{
    uint64_t mine[2] = {key, bytes};
    uint64_t *all = malloc(sizeof mine * (size_t)w->size);
    if (!all)
        return agmm_error(AGMM_ERR_NO_MEMORY, "%s: out of memory",
                          w->ctl->name);
    agmm_status_t st = agmm_world_allgather_until(w, mine, all, sizeof mine,
                                                  agmm_deadline(w, 0));
    for (int p = 0; st == AGMM_OK && p < w->size; p++)
        if (all[2 * p] != mine[0] || all[2 * p + 1] != mine[1])
            st = agmm_error(AGMM_ERR_MISMATCH,
                            "%s: window allocation differs between rank %d "
                            "(%llu bytes, key %llu) and this rank (%zu bytes, "
                            "key %llu)",
                            w->ctl->name, p, (unsigned long long)all[2 * p + 1],
                            (unsigned long long)all[2 * p], bytes,
                            (unsigned long long)key);
    free(all);
    return st;
}
