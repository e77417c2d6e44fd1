/* Gathering every rank's events on rank 0, on one clock.
 *
 * Protocol (collective, any transport):
 *   1. each rank flattens its buffers into one array (rank and lane filled
 *      in, times moved to rank 0's clock) and allgathers {count, dropped,
 *      ok}; if any rank failed locally, all return an error here.
 *   2. a window of sum(count) events plus one signal line per rank is
 *      allocated collectively (same size everywhere; on shm only rank 0's
 *      pages are touched);
 *   3. rank r > 0 puts its array at its prefix offset in rank 0's window
 *      and raises signal r to 1 (release); rank 0 waits for every signal
 *      (acquire, with the world's timeout and abort) and copies the data;
 *   4. a barrier (no put is in flight), then the window is freed. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "ops/plan_internal.h"
#include "trace/trace.h"
#include "transport/transport.h"

#define HOST_BYTES 64

agmm_status_t agmm_trace_clock_offset(agmm_world_t *w, int64_t *offset_ns)
{
    *offset_ns = 0;
    char host[HOST_BYTES];
    memset(host, 0, sizeof host);
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    char *all = malloc((size_t)w->size * HOST_BYTES);
    if (!all) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    agmm_status_t st =
        w->ops->allgather(w, host, all, HOST_BYTES, agmm_deadline(w, 0));
    int same = 1;
    for (int r = 0; st == AGMM_OK && r < w->size; r++)
        same &= host[0] != '\0' && strcmp(all + (size_t)r * HOST_BYTES, all) == 0;
    free(all);
    AGMM_CHECK(st);
    if (same) return AGMM_OK; /* one CLOCK_MONOTONIC for the whole world */

    /* Some rank is on another host: read the clocks right after a
     * barrier, and move every rank not on rank 0's host onto rank 0's. */
    AGMM_CHECK(w->ops->barrier(w, agmm_deadline(w, 0)));
    uint64_t now = agmm_now_ns();
    uint64_t *clocks = malloc(sizeof(uint64_t) * (size_t)w->size);
    if (!clocks) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    st = w->ops->allgather(w, &now, clocks, sizeof now, agmm_deadline(w, 0));
    if (st == AGMM_OK) *offset_ns = (int64_t)(clocks[0] - now);
    free(clocks);
    return st;
}

typedef struct gather_hdr {
    uint64_t count, dropped;
    int64_t ok;
} gather_hdr_t;

/* This rank's events in one array, on rank 0's clock. */
static agmm_tev_t *flatten(const agmm_trace_t *t, int64_t offset,
                           gather_hdr_t *h)
{
    h->count = h->dropped = 0;
    for (int i = 0; i < t->nbufs; i++) {
        h->count += t->bufs[i].n;
        h->dropped += t->bufs[i].dropped;
    }
    agmm_tev_t *ev = malloc(sizeof *ev * (h->count ? h->count : 1));
    if (!ev) return NULL;
    size_t k = 0;
    for (int i = 0; i < t->nbufs; i++)
        for (size_t j = 0; j < t->bufs[i].n; j++, k++) {
            ev[k] = t->bufs[i].ev[j];
            ev[k].t0 += (uint64_t)offset;
            ev[k].t1 += (uint64_t)offset;
            ev[k].rank = (int16_t)t->rank;
            ev[k].lane = (int16_t)i;
        }
    return ev;
}

/* Steps 2-4 with the counts agreed. */
static agmm_status_t exchange(agmm_trace_t *t, const agmm_tev_t *mine,
                              const gather_hdr_t *hdr)
{
    agmm_world_t *w = t->world;
    int P = w->size;
    size_t total = 0, at = 0;
    for (int r = 0; r < P; r++) total += hdr[r].count;
    for (int r = 0; r < t->rank; r++) at += hdr[r].count;
    size_t data = total * sizeof(agmm_tev_t);
    data = (data + AGMM_CACHE_LINE - 1) / AGMM_CACHE_LINE * AGMM_CACHE_LINE;
    agmm_win_t win;
    AGMM_CHECK(w->ops->win_alloc(w, data + (size_t)P * AGMM_CACHE_LINE, &win));

    agmm_status_t st = AGMM_OK;
    size_t mine_bytes = hdr[t->rank].count * sizeof(agmm_tev_t);
    /* A two-sided transport (MPI) receives into posted receives: rank 0
     * declares and posts one per sender (see transport.h). */
    for (int r = 1, off = 0; t->rank == 0 && w->ops->expect && r < P; r++) {
        off += (int)hdr[r - 1].count;
        st = w->ops->expect(w, &win, r, (size_t)off * sizeof(agmm_tev_t),
                            hdr[r].count * sizeof(agmm_tev_t), &win,
                            data + (size_t)r * AGMM_CACHE_LINE, 0);
        if (st == AGMM_OK && r == P - 1) st = w->ops->round_begin(w, &win, 0, 1);
        if (st != AGMM_OK) break;
    }
    if (st != AGMM_OK) {
        /* fall through to the barrier and free below */
    } else if (t->rank != 0) {
        st = w->ops->put_signal(w, &win, 0, at * sizeof(agmm_tev_t), mine,
                                mine_bytes, &win,
                                data + (size_t)t->rank * AGMM_CACHE_LINE, 1);
        if (st == AGMM_OK) st = w->ops->quiet(w);
    } else {
        t->all = malloc(sizeof(agmm_tev_t) * (total ? total : 1));
        if (!t->all) st = agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
        for (int r = 1; st == AGMM_OK && r < P; r++) {
            agmm_wait_what_t what = {"trace events", r, -1};
            st = agmm_signal_wait(
                w, agmm_win_signal(&win, data + (size_t)r * AGMM_CACHE_LINE), 1,
                agmm_deadline(w, 0), &what);
        }
        if (st == AGMM_OK) {
            memcpy(t->all, win.local, total * sizeof(agmm_tev_t));
            memcpy(t->all, mine, mine_bytes); /* rank 0's own, at offset 0 */
            t->nall = total;
            for (int r = 0; r < P; r++) t->dropped += hdr[r].dropped;
        }
    }
    /* No put may be in flight when the window goes. After a failure the
     * world is aborted and the barrier returns at once. */
    agmm_status_t st2 = w->ops->barrier(w, agmm_deadline(w, 0));
    w->ops->win_free(w, &win);
    return st != AGMM_OK ? st : st2;
}

agmm_status_t agmm_trace_gather(agmm_trace_t *t)
{
    if (!t) return agmm_error(AGMM_ERR_INVALID_ARG, "trace_gather: NULL trace");
    if (t->gathered)
        return agmm_error(AGMM_ERR_BAD_STATE, "trace_gather: already gathered");
    /* Stop recording: the plan runs untraced from here on. */
    if (t->plan && agmm_plan_is_live(t->plan) && t->plan->trace == t)
        t->plan->trace = NULL;
    t->plan = NULL;
    agmm_trace_self = NULL;

    agmm_world_t *w = t->world;
    int64_t offset = 0;
    AGMM_CHECK(agmm_trace_clock_offset(w, &offset));
    gather_hdr_t mine;
    agmm_tev_t *ev = flatten(t, offset, &mine);
    mine.ok = ev != NULL;
    if (!ev) mine.count = 0;
    gather_hdr_t *hdr = malloc(sizeof *hdr * (size_t)w->size);
    agmm_status_t st = hdr ? w->ops->allgather(w, &mine, hdr, sizeof mine,
                                               agmm_deadline(w, 0))
                           : AGMM_ERR_NO_MEMORY;
    for (int r = 0; st == AGMM_OK && r < w->size; r++)
        if (!hdr[r].ok)
            st = agmm_error(AGMM_ERR_NO_MEMORY,
                            "trace: rank %d is out of memory for its events", r);
    if (st == AGMM_OK) st = exchange(t, ev, hdr);
    free(hdr);
    free(ev);
    if (!hdr && st == AGMM_ERR_NO_MEMORY)
        return agmm_error(st, "trace: out of memory");
    AGMM_CHECK(st);
    t->gathered = 1;
    return t->rank == 0 ? agmm_trace_summarize(t) : AGMM_OK;
}
