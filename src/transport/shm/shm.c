/* Shared-memory transport: ranks are processes on one host, forked by the
 * embedded launcher (world/launch.c) or started by anyone and joined by
 * name (world/join.c). Both share two kinds of memory:
 *
 *   - the control block (barrier counter and per-rank arrival cells,
 *     allgather slots, abort state):
 *     a shared anonymous mapping the forked ranks inherit from the
 *     launcher, or a part of a joined world's named control segment;
 *   - the windows: every window is one named segment per rank, each sized
 *     by what the plan asked for, created by its rank and mapped by every
 *     peer, then unlinked (window.c). No heap is reserved up front.
 *
 * A put is a memcpy into the peer's copy of the window (mapped in this
 * process) followed by a release store of the signal; the same for forked
 * and joined ranks.
 *
 * With the link emulator on (agmm_launch_opts_t.link_gbps > 0), puts and
 * signals to peers go through link.c instead: queued per peer and delivered
 * by the rank's delivery thread at their modelled arrival; quiet waits for
 * the queues to drain. Barriers and allgathers (control data) are not
 * paced. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/abort.h"
#include "common/log.h"
#include "common/util.h"
#include "transport/shm/shm_internal.h"
#include "transport/transport.h"

/* The control block. All zero is its initial state (a fresh mapping or
 * segment needs no initialisation). Each counter written by several processes
 * sits on its own cache line. */
struct shm_ctl {
    /* Barrier: a monotonic arrival counter and the number of completed
     * barriers. The last of P arrivals of barrier g stores g + 1 to
     * `generation` (release); the others wait for it (acquire). */
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t arrived;
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t generation;
    _Atomic uint32_t generation_sleepers; /* signal cell layout (signal.c) */
    /* Abort: shared by every rank (common/abort.h). */
    agmm_abort_cell_t abort;
    /* Allgather slots follow: AGMM_ALLGATHER_MAX bytes per rank; then one
     * arrival cell per rank (arrival_of), which only names the late ranks
     * when a barrier times out: the counter above decides completion. */
    _Alignas(AGMM_CACHE_LINE) unsigned char slots[];
};
typedef struct shm_ctl shm_ctl_t;

/* Rank p's arrival cell: the number of barriers p has entered. Written
 * only by rank p (release, before its arrival is counted), read by a rank
 * whose barrier timed out (acquire). One cache line each: a rank entering
 * a barrier does not take the line its peers are writing. */
static _Atomic uint64_t *arrival_of(shm_ctl_t *ctl, int nranks, int p)
{
    unsigned char *base = ctl->slots + (size_t)nranks * AGMM_ALLGATHER_MAX;
    return (_Atomic uint64_t *)(void *)(base + (size_t)p * AGMM_CACHE_LINE);
}

size_t agmm_shm_ctl_bytes(int nranks)
{
    return sizeof(shm_ctl_t) +
           (size_t)nranks * (AGMM_ALLGATHER_MAX + AGMM_CACHE_LINE);
}

static agmm_status_t shared_new(int nranks, const char *job, double link_gbps,
                                double link_latency_us, agmm_shm_shared_t **out)
{
    if (link_gbps > 0 && !(link_latency_us >= 0))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "launcher: link latency %g us (allowed >= 0)",
                          link_latency_us);
    agmm_shm_shared_t *sh = calloc(1, sizeof *sh);
    if (!sh) return agmm_error(AGMM_ERR_NO_MEMORY, "shm: out of memory");
    sh->nranks = nranks;
    snprintf(sh->job, sizeof sh->job, "%s", job);
    sh->link_gbps = link_gbps > 0 ? link_gbps : 0;
    sh->link_latency_us = link_gbps > 0 ? link_latency_us : 0;
    sh->ctl_bytes = agmm_shm_ctl_bytes(nranks);
    *out = sh;
    return AGMM_OK;
}

agmm_status_t agmm_shm_prepare(int nranks, double link_gbps,
                               double link_latency_us, agmm_shm_shared_t **out)
{
    /* The windows' segments are named after the launcher's pid: unique on
     * the host while the launcher lives. */
    char job[AGMM_SEG_JOB_MAX + 1];
    snprintf(job, sizeof job, "fork-%ld", (long)getpid());
    agmm_shm_shared_t *sh = NULL;
    AGMM_CHECK(shared_new(nranks, job, link_gbps, link_latency_us, &sh));
    sh->ctl = mmap(NULL, sh->ctl_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh->ctl == MAP_FAILED) {
        int e = errno;
        free(sh);
        return agmm_error(AGMM_ERR_SYSTEM, "launcher: mmap control block: %s",
                          strerror(e));
    }
    sh->owns_ctl = 1;
    *out = sh;
    return AGMM_OK;
}

agmm_status_t agmm_shm_attach(void *ctl, int nranks, const char *job,
                              agmm_shm_shared_t **out)
{
    agmm_shm_shared_t *sh = NULL;
    AGMM_CHECK(shared_new(nranks, job, 0, 0, &sh));
    sh->ctl = ctl;
    *out = sh;
    return AGMM_OK;
}

void agmm_shm_release(agmm_shm_shared_t *sh)
{
    if (!sh) return;
    if (sh->owns_ctl) munmap(sh->ctl, sh->ctl_bytes);
    free(sh);
}

/* The cell is in the shared control block: recording it is delivering
 * it to every rank (and to the launcher). */
void agmm_shm_abort_all(agmm_shm_shared_t *sh, const char *reason)
{
    agmm_abort_record(&sh->ctl->abort, reason);
}

const char *agmm_shm_abort_reason(agmm_shm_shared_t *sh)
{
    return agmm_abort_reason(&sh->ctl->abort, AGMM_ABORT_WAIT_SHARED_S);
}

/* ------------------------------------- the world's control entries */
/* Registered by world/launch.c as the forked worlds' control table
 * (world/world_ops.h); implemented here over the shared control block. */

void agmm_shm_abort(agmm_world_t *w, const char *reason)
{
    agmm_shm_abort_all(agmm_shm_rank_of(w)->sh, reason);
}

const char *agmm_shm_aborted(agmm_world_t *w)
{
    return agmm_shm_abort_reason(agmm_shm_rank_of(w)->sh);
}

/* " (ranks 1, 3 did not arrive)": the peers whose arrival cell is below
 * the barrier this rank is waiting in (barriers_done, already counted).
 * Memory order: a peer counted before this rank (earlier in `arrived`'s
 * modification order) is never named: this rank's acq_rel fetch_add read
 * from that peer's release fetch_add, so the peer's cell store, sequenced
 * before it, happens-before this acquire load. A peer counted after this
 * rank but long before the deadline is seen too in practice (coherence);
 * one that arrives while this runs may be named or not. The text is a
 * diagnosis: the barrier's outcome does not depend on it. */
static void late_ranks(agmm_world_t *w, char *buf, size_t cap)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    char list[160] = "";
    size_t len = 0;
    int n = 0;
    for (int q = 0; q < w->size; q++) {
        uint64_t a = atomic_load_explicit(arrival_of(r->sh->ctl, w->size, q),
                                          memory_order_acquire);
        if (q == w->rank || a >= r->barriers_done) continue;
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d",
                                    n ? ", " : "", q);
        n++;
    }
    if (n)
        snprintf(buf, cap, " (rank%s %s did not arrive)", n > 1 ? "s" : "",
                 list);
    else
        snprintf(buf, cap, " (every rank arrived as it timed out)");
}

/* A barrier; `kind` names it in a timeout ("barrier", "all-gather"). */
static agmm_status_t barrier_as(agmm_world_t *w, double deadline,
                                const char *kind)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    shm_ctl_t *ctl = r->sh->ctl;
    uint64_t g = r->barriers_done;
    /* First say "I entered barrier g" in this rank's own cell, then count
     * the arrival: a peer that times out after the count reads g + 1. */
    atomic_store_explicit(arrival_of(ctl, w->size, w->rank), g + 1,
                          memory_order_release);
    uint64_t mine =
        atomic_fetch_add_explicit(&ctl->arrived, 1, memory_order_acq_rel);
    r->barriers_done = g + 1;
    if (mine == (g + 1) * (uint64_t)w->size - 1) {
        agmm_signal_publish(&ctl->generation, g + 1);
        /* Last to arrive, but the others may have left by a timeout (which
         * aborts the world): that is not a completed barrier. */
        const char *reason = agmm_world_aborted(w);
        if (reason)
            return agmm_error_quiet(AGMM_ERR_ABORTED,
                                    "aborted while entering %s %llu of all "
                                    "ranks: %s",
                                    kind, (unsigned long long)g, reason);
        return AGMM_OK;
    }
    agmm_wait_what_t what = {kind, -1, (int64_t)g, 0, 0, 0};
    return agmm_signal_wait_late(w, &ctl->generation, g + 1, deadline, &what,
                                 late_ranks);
}

agmm_status_t agmm_shm_barrier(agmm_world_t *w, double deadline)
{
    return barrier_as(w, deadline, "barrier");
}

agmm_status_t agmm_shm_allgather(agmm_world_t *w, const void *in, void *out,
                                 size_t bytes, double deadline)
{
    shm_ctl_t *ctl = agmm_shm_rank_of(w)->sh->ctl;
    memcpy(ctl->slots + (size_t)w->rank * AGMM_ALLGATHER_MAX, in, bytes);
    /* every slot written */
    AGMM_CHECK(barrier_as(w, deadline, "all-gather barrier"));
    for (int p = 0; p < w->size; p++)
        memcpy((unsigned char *)out + (size_t)p * bytes,
               ctl->slots + (size_t)p * AGMM_ALLGATHER_MAX, bytes);
    /* every slot read: reusable */
    return barrier_as(w, deadline, "all-gather barrier");
}

static agmm_status_t shm_signal(agmm_world_t *w, const agmm_win_t *sigwin,
                                int dst, size_t sig_off, uint64_t value)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    unsigned char *base = agmm_shm_peer_base(sigwin, dst);
    if (r->link && dst != w->rank)
        return agmm_link_post(r->link, dst, NULL, NULL, 0,
                              (_Atomic uint64_t *)(void *)(base + sig_off),
                              value);
    agmm_signal_publish((_Atomic uint64_t *)(void *)(base + sig_off), value);
    return AGMM_OK;
}

static agmm_status_t shm_put_signal(agmm_world_t *w, const agmm_win_t *win,
                                    int dst, size_t off, const void *src,
                                    size_t bytes, const agmm_win_t *sigwin,
                                    size_t sig_off, uint64_t value)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    unsigned char *base = agmm_shm_peer_base(win, dst);
    if (r->link && dst != w->rank) {
        unsigned char *sig = agmm_shm_peer_base(sigwin, dst) + sig_off;
        return agmm_link_post(r->link, dst, base + off, src, bytes,
                              (_Atomic uint64_t *)(void *)sig, value);
    }
    memcpy(base + off, src, bytes);
    return shm_signal(w, sigwin, dst, sig_off, value);
}

static agmm_status_t shm_quiet(agmm_world_t *w)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    if (!r->link) return AGMM_OK; /* puts are synchronous copies */
    /* Waits for the calling thread's own queued puts and signals, which is
     * what quiet promises (link.c). */
    return agmm_link_drain(r->link, w, agmm_deadline(w, 0));
}

/* ----------------------------------------------------------- vtable */

static const agmm_transport_ops_t shm_ops = {
    .caps = AGMM_TP_CAP_ONE_SIDED,
    .win_alloc = agmm_shm_win_alloc,
    .win_free = agmm_shm_win_free,
    .put_signal = shm_put_signal,
    .signal = shm_signal,
    .quiet = shm_quiet,
};

agmm_status_t agmm_shm_world_init(agmm_shm_shared_t *sh, int rank,
                                  agmm_world_t *w)
{
    shm_rank_t *state = calloc(1, sizeof *state);
    if (!state) return agmm_error(AGMM_ERR_NO_MEMORY, "shm: out of memory");
    state->sh = sh;
    w->ops = &shm_ops;
    w->rank = rank;
    w->size = sh->nranks;
    w->impl = state;
    if (sh->link_gbps > 0 && sh->nranks > 1)
        return agmm_link_create(sh->nranks, sh->link_gbps, sh->link_latency_us,
                                &state->link);
    return AGMM_OK;
}

void agmm_shm_world_fini(agmm_world_t *w)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    if (!r) return;
    agmm_link_destroy(r->link);
    free(r);
    w->impl = NULL;
}

const char *agmm_shm_job(const agmm_shm_shared_t *sh)
{
    return sh->job;
}

int agmm_shm_live_windows(agmm_world_t *w)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    return r ? atomic_load(&r->live_windows) : 0;
}

int agmm_shm_link(const agmm_world_t *w, double *gbps, double *latency_us)
{
    const shm_rank_t *r = (const shm_rank_t *)w->impl;
    if (gbps) *gbps = r->sh->link_gbps;
    if (latency_us) *latency_us = r->sh->link_latency_us;
    return r->sh->link_gbps > 0;
}
