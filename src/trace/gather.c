/* Gathering every rank's events on rank 0, on one clock.
 *
 * Protocol (collective, any transport):
 *   1. each rank flattens its buffers into one array (rank and lane filled
 *      in, times moved to rank 0's clock) and allgathers {count, dropped,
 *      ok}; if any rank failed locally, all return an error here.
 *   2. the arrays go to rank 0 with the world's variable-size gather
 *      (agmm_world_gatherv, world/gatherv.c: a window, puts with signals,
 *      a barrier). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "trace/trace.h"
#include "world/world.h"

#define HOST_BYTES 64

agmm_status_t agmm_trace_clock_offset(agmm_world_t *w, int64_t *offset_ns)
{
    *offset_ns = 0;
    char host[HOST_BYTES];
    memset(host, 0, sizeof host);
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    char *all = malloc((size_t)w->size * HOST_BYTES);
    if (!all) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    agmm_status_t st = agmm_world_allgather_until(w, host, all, HOST_BYTES,
                                                  agmm_deadline(w, 0));
    int same = 1;
    for (int r = 0; st == AGMM_OK && r < w->size; r++)
        same &=
            host[0] != '\0' && strcmp(all + (size_t)r * HOST_BYTES, all) == 0;
    free(all);
    AGMM_CHECK(st);
    if (same) return AGMM_OK; /* one CLOCK_MONOTONIC for the whole world */

    /* Some rank is on another host: read the clocks right after a
     * barrier, and move every rank not on rank 0's host onto rank 0's. */
    AGMM_CHECK(agmm_world_barrier_until(w, agmm_deadline(w, 0)));
    uint64_t now = agmm_now_ns();
    uint64_t *clocks = malloc(sizeof(uint64_t) * (size_t)w->size);
    if (!clocks) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    st = agmm_world_allgather_until(w, &now, clocks, sizeof now,
                                    agmm_deadline(w, 0));
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

/* Step 2 with the counts agreed: the world's variable-size gather. */
static agmm_status_t exchange(agmm_trace_t *t, const agmm_tev_t *mine,
                              const gather_hdr_t *hdr)
{
    agmm_world_t *w = t->world;
    int P = w->size;
    size_t total = 0;
    size_t *bytes = malloc(sizeof *bytes * (size_t)P);
    if (!bytes) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    for (int r = 0; r < P; r++) {
        total += hdr[r].count;
        bytes[r] = hdr[r].count * sizeof(agmm_tev_t);
    }
    if (t->rank == 0) t->all = malloc(sizeof(agmm_tev_t) * (total ? total : 1));
    agmm_status_t st =
        agmm_world_gatherv(w, mine, bytes, t->all, "trace events");
    free(bytes);
    if (st == AGMM_ERR_NO_MEMORY && t->rank == 0 && !t->all)
        return agmm_error(st, "trace: out of memory");
    if (st == AGMM_OK && t->rank == 0) {
        t->nall = total;
        for (int r = 0; r < P; r++)
            t->dropped += hdr[r].dropped;
    }
    return st;
}

agmm_status_t agmm_trace_gather(agmm_trace_t *t)
{
    if (!t) return agmm_error(AGMM_ERR_INVALID_ARG, "trace_gather: NULL trace");
    if (t->gathered)
        return agmm_error(AGMM_ERR_BAD_STATE, "trace_gather: already gathered");
    /* Stop recording: the plan runs untraced from here on. */
    agmm_trace_detach(t);

    agmm_world_t *w = t->world;
    int64_t offset = 0;
    AGMM_CHECK(agmm_trace_clock_offset(w, &offset));
    gather_hdr_t mine;
    agmm_tev_t *ev = flatten(t, offset, &mine);
    mine.ok = ev != NULL;
    if (!ev) mine.count = 0;
    gather_hdr_t *hdr = malloc(sizeof *hdr * (size_t)w->size);
    agmm_status_t st =
        hdr ? agmm_world_allgather_until(w, &mine, hdr, sizeof mine,
                                         agmm_deadline(w, 0))
            : AGMM_ERR_NO_MEMORY;
    for (int r = 0; st == AGMM_OK && r < w->size; r++)
        if (!hdr[r].ok)
            st =
                agmm_error(AGMM_ERR_NO_MEMORY,
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
