/* The shm windows: sized by what each plan asks for, nothing reserved up
 * front. A window is one named segment per rank (segment.h), named
 * /agmm:<uid>:<job>:<pid>:w<n>, <pid> the creating rank, <n> the rank's
 * count of windows so far (the same on every rank: windows are collective,
 * allocated in the same order everywhere).
 *
 * win_alloc, collective (the plan's thread of every rank):
 *   1. create and size this rank's segment (zero-filled);
 *   2. allgather (n, bytes, pid, created?): the names of the peers' segments,
 *      and the check that every rank allocates the same window;
 *   3. open and map every peer's segment (owner and mode checked);
 *   4. allgather (mapped?): also the barrier after which no one opens by
 *      name any more;
 *   5. unlink this rank's name. From here on the memory lives only as long
 *      as its mappings: a rank that dies leaves nothing behind.
 * A failure in any step on any rank makes every rank undo and return an
 * error naming the rank (the allgathers carry the outcome). A rank that
 * dies between 1 and 5 leaves its segment named; its pid in the name lets
 * agmm_cleanup and the next join of the job remove it.
 *
 * win_free unmaps every copy (the plan has already waited for its peers'
 * last puts: the protocol's destroy wait), no collective step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/shm/shm_internal.h"

typedef struct win_info {
    uint64_t n, bytes;
    int64_t pid;
    int64_t ok;
} win_info_t;

static void unmap_all(shm_window_t *sw)
{
    for (int p = 0; p < sw->nranks; p++)
        agmm_seg_unmap(&sw->maps[p]);
    free(sw);
}

agmm_status_t agmm_shm_win_alloc(agmm_world_t *w, size_t bytes, agmm_win_t *out)
{
    shm_rank_t *r = agmm_shm_rank_of(w);
    int P = w->size, me = w->rank;
    memset(out, 0, sizeof *out);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t need = bytes ? (bytes + page - 1) & ~(page - 1) : page;
    if (need < bytes)
        return agmm_error(AGMM_ERR_TOO_LARGE, "shm: window of %zu bytes",
                          bytes);
    shm_window_t *sw = calloc(1, sizeof *sw + (size_t)P * sizeof sw->maps[0]);
    win_info_t *all = calloc((size_t)P, sizeof *all);
    if (!sw || !all) {
        free(sw);
        free(all);
        return agmm_error(AGMM_ERR_NO_MEMORY, "shm: out of memory");
    }
    sw->nranks = P;
    uint64_t n = r->next_window++;
    char tag[AGMM_SEG_TAG_MAX + 1], mine[AGMM_SEG_NAME_MAX];
    snprintf(tag, sizeof tag, "w%llu", (unsigned long long)n);

    /* 1. this rank's copy */
    agmm_status_t st = agmm_seg_name(mine, r->sh->job, getpid(), tag);
    if (st == AGMM_OK) st = agmm_seg_create(mine, need, &sw->maps[me], NULL);
    int created = st == AGMM_OK;

    /* 2. everyone's names and sizes */
    win_info_t info = {n, bytes, (int64_t)getpid(), created};
    double deadline = agmm_deadline(w, 0);
    agmm_status_t gst =
        agmm_shm_allgather(w, &info, all, sizeof info, deadline);
    if (gst != AGMM_OK) st = gst;
    for (int p = 0; st == AGMM_OK && p < P; p++) {
        if (!all[p].ok)
            st = agmm_error_quiet(AGMM_ERR_NO_MEMORY,
                                  "shm: rank %d could not create its %zu KiB "
                                  "window",
                                  p, bytes >> 10);
        else if (all[p].n != n || all[p].bytes != bytes)
            st = agmm_error(AGMM_ERR_MISMATCH,
                            "shm: window allocation differs between rank %d "
                            "(%llu bytes, window %llu) and this rank (%zu "
                            "bytes, window %llu)",
                            p, (unsigned long long)all[p].bytes,
                            (unsigned long long)all[p].n, bytes,
                            (unsigned long long)n);
    }

    /* 3. the peers' copies (skipped, but still step 4, after a failure:
     * every rank must take part in the same allgathers) */
    for (int p = 0; st == AGMM_OK && p < P; p++) {
        if (p == me) continue;
        char name[AGMM_SEG_NAME_MAX];
        st = agmm_seg_name(name, r->sh->job, (pid_t)all[p].pid, tag);
        if (st == AGMM_OK) st = agmm_seg_open(name, need, &sw->maps[p], NULL);
    }

    /* 4. everyone mapped everything (or someone failed) */
    if (gst == AGMM_OK) {
        int64_t ok = st == AGMM_OK;
        int64_t *okall = (int64_t *)(void *)all; /* reuse: P x 8 bytes */
        gst = agmm_shm_allgather(w, &ok, okall, sizeof ok, deadline);
        if (gst != AGMM_OK && st == AGMM_OK) st = gst;
        for (int p = 0; st == AGMM_OK && p < P; p++)
            if (!okall[p])
                st = agmm_error_quiet(AGMM_ERR_SYSTEM,
                                      "shm: rank %d could not map the peers' "
                                      "copies of a %zu KiB window",
                                      p, bytes >> 10);
    }

    /* Keep the windows out of core dumps: a crashing rank would dump every
     * rank's copy (docs/reliability.md, finding 6). */
    for (int p = 0; st == AGMM_OK && p < P; p++)
        madvise(sw->maps[p].addr, sw->maps[p].bytes, MADV_DONTDUMP);

    /* 5. nobody opens by name any more (or the window is abandoned) */
    if (created) agmm_seg_unlink(mine);
    free(all);
    if (st != AGMM_OK) {
        unmap_all(sw);
        return st;
    }
    atomic_fetch_add(&r->live_windows, 1);
    out->offset = 0;
    out->bytes = bytes;
    out->local = sw->maps[me].addr;
    out->impl = sw;
    return AGMM_OK;
}

void agmm_shm_win_free(agmm_world_t *w, agmm_win_t *win)
{
    if (win->impl) {
        unmap_all(win->impl);
        atomic_fetch_sub(&agmm_shm_rank_of(w)->live_windows, 1);
    }
    memset(win, 0, sizeof *win);
}
