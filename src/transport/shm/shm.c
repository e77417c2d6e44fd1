/* Shared-memory transport: ranks are processes forked by the launcher on one
 * host. Before the fork the launcher maps two shared anonymous regions that
 * every rank inherits at the same address:
 *
 *   - the control block (barrier counters, allgather slots, abort state),
 *   - the symmetric heap: one slice of `slice` bytes per rank, reserved with
 *     MAP_NORESERVE so only pages that are touched use memory.
 *
 * A window is an offset into every slice; rank p's copy of a window at
 * offset o is heap + p * slice + o, so a put is a memcpy into the peer's
 * slice followed by a release store of the signal. Shared anonymous memory
 * has no name: nothing can be left behind in /dev/shm, whatever way the
 * processes end; the kernel frees it with the last process.
 *
 * Each rank runs the same deterministic allocator over its own copy of the
 * heap bookkeeping, so collective allocations return the same offset on every
 * rank; win_alloc checks that with an allgather.
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
#include "transport/shm/link.h"
#include "transport/shm/shm.h"
#include "transport/transport.h"


/* The control block. Each counter written by several processes sits on its
 * own cache line. */
typedef struct shm_ctl {
    /* Barrier: a monotonic arrival counter and the number of completed
     * barriers. The last of P arrivals of barrier g stores g + 1 to
     * `generation` (release); the others wait for it (acquire). */
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t arrived;
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t generation;
    _Atomic uint32_t generation_sleepers; /* signal cell layout (signal.c) */
    /* Abort: shared by every rank (common/abort.h). */
    agmm_abort_cell_t abort;
    /* Allgather slots follow: AGMM_ALLGATHER_MAX bytes per rank. */
    _Alignas(AGMM_CACHE_LINE) unsigned char slots[];
} shm_ctl_t;

struct agmm_shm_shared {
    int nranks;
    shm_ctl_t *ctl;
    size_t ctl_bytes;
    unsigned char *heap;
    size_t slice; /* bytes of heap per rank */
    double link_gbps, link_latency_us; /* link emulator; gbps 0: off */
};

/* A rank's private view. Allocations are kept sorted by offset. */
#define SHM_MAX_BLOCKS 256
typedef struct shm_rank {
    agmm_shm_shared_t *sh;
    uint64_t barriers_done; /* barriers this rank has completed */
    agmm_link_t *link;      /* the link emulator, NULL when off */
    int nblocks;
    struct {
        size_t off, bytes;
    } blocks[SHM_MAX_BLOCKS];
} shm_rank_t;

static shm_rank_t *rank_of(agmm_world_t *w) { return (shm_rank_t *)w->impl; }

static uint64_t meminfo_total(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) break;
        fclose(f);
    }
    if (kb == 0) kb = 4ull << 20; /* 4 GiB if /proc is unreadable */
    return (uint64_t)kb * 1024;
}

agmm_status_t agmm_shm_prepare(int nranks, double link_gbps,
                               double link_latency_us, agmm_shm_shared_t **out)
{
    if (link_gbps > 0 && !(link_latency_us >= 0))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "launcher: link latency %g us (allowed >= 0)",
                          link_latency_us);
    agmm_shm_shared_t *sh = calloc(1, sizeof *sh);
    if (!sh) return agmm_error(AGMM_ERR_NO_MEMORY, "launcher: out of memory");
    sh->nranks = nranks;
    sh->link_gbps = link_gbps > 0 ? link_gbps : 0;
    sh->link_latency_us = link_gbps > 0 ? link_latency_us : 0;
    sh->ctl_bytes = sizeof(shm_ctl_t) + (size_t)nranks * AGMM_ALLGATHER_MAX;
    sh->ctl = mmap(NULL, sh->ctl_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh->ctl == MAP_FAILED) {
        int e = errno;
        free(sh);
        return agmm_error(AGMM_ERR_SYSTEM, "launcher: mmap control block: %s",
                          strerror(e));
    }
    /* One slice per rank as large as the machine's memory: a plan that does
     * not fit is refused before it gets here, and untouched pages cost
     * nothing. Rounded to 2 MiB so slices start on huge-page boundaries. */
    size_t slice = (size_t)meminfo_total();
    slice = (slice + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    sh->slice = slice;
    sh->heap = mmap(NULL, slice * (size_t)nranks, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sh->heap == MAP_FAILED) {
        int e = errno;
        munmap(sh->ctl, sh->ctl_bytes);
        free(sh);
        return agmm_error(AGMM_ERR_SYSTEM,
                          "launcher: mmap %d x %zu MiB symmetric heap: %s",
                          nranks, slice >> 20, strerror(e));
    }
    /* Keep the heap out of core dumps: dumping it reads every page, and
     * reading shared memory allocates it, so one crashing rank with core
     * dumps on would write and allocate nranks x MemTotal bytes. */
    madvise(sh->heap, slice * (size_t)nranks, MADV_DONTDUMP);
    *out = sh;
    return AGMM_OK;
}

void agmm_shm_release(agmm_shm_shared_t *sh)
{
    if (!sh) return;
    munmap(sh->heap, sh->slice * (size_t)sh->nranks);
    munmap(sh->ctl, sh->ctl_bytes);
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
    return agmm_abort_reason(&sh->ctl->abort);
}

/* ------------------------------------- the world's control entries */
/* Registered by world/launch.c as the forked worlds' control table
 * (world/world_ops.h); implemented here over the shared control block. */

void agmm_shm_abort(agmm_world_t *w, const char *reason)
{
    agmm_shm_abort_all(rank_of(w)->sh, reason);
}

const char *agmm_shm_aborted(agmm_world_t *w)
{
    return agmm_shm_abort_reason(rank_of(w)->sh);
}

static unsigned char *slice_of(agmm_shm_shared_t *sh, int rank)
{
    return sh->heap + (size_t)rank * sh->slice;
}

agmm_status_t agmm_shm_barrier(agmm_world_t *w, double deadline)
{
    shm_rank_t *r = rank_of(w);
    shm_ctl_t *ctl = r->sh->ctl;
    uint64_t g = r->barriers_done;
    uint64_t mine = atomic_fetch_add_explicit(&ctl->arrived, 1,
                                              memory_order_acq_rel);
    r->barriers_done = g + 1;
    if (mine == (g + 1) * (uint64_t)w->size - 1) {
        agmm_signal_publish(&ctl->generation, g + 1);
        return AGMM_OK;
    }
    agmm_wait_what_t what = {"barrier", -1, (int64_t)g};
    return agmm_signal_wait(w, &ctl->generation, g + 1, deadline, &what);
}

agmm_status_t agmm_shm_allgather(agmm_world_t *w, const void *in, void *out,
                                 size_t bytes, double deadline)
{
    shm_ctl_t *ctl = rank_of(w)->sh->ctl;
    memcpy(ctl->slots + (size_t)w->rank * AGMM_ALLGATHER_MAX, in, bytes);
    AGMM_CHECK(agmm_shm_barrier(w, deadline)); /* every slot written */
    for (int p = 0; p < w->size; p++)
        memcpy((unsigned char *)out + (size_t)p * bytes,
               ctl->slots + (size_t)p * AGMM_ALLGATHER_MAX, bytes);
    return agmm_shm_barrier(w, deadline); /* every slot read: reusable */
}

static agmm_status_t shm_win_alloc(agmm_world_t *w, size_t bytes,
                                   agmm_win_t *out)
{
    shm_rank_t *r = rank_of(w);
    size_t align = 2u << 20; /* windows start on 2 MiB boundaries */
    size_t need = (bytes + align - 1) & ~(align - 1);
    if (need < bytes) need = bytes; /* overflow: refused below */
    if (r->nblocks == SHM_MAX_BLOCKS)
        return agmm_error(AGMM_ERR_NO_MEMORY, "shm: too many windows (%d)",
                          SHM_MAX_BLOCKS);
    /* First fit over the sorted blocks. */
    size_t off = 0;
    int at = 0;
    for (; at < r->nblocks; at++) {
        if (r->blocks[at].off - off >= need) break;
        off = r->blocks[at].off + r->blocks[at].bytes;
    }
    if (need > r->sh->slice || off > r->sh->slice - need)
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "shm: a %zu MiB window does not fit the %zu MiB "
                          "symmetric heap",
                          bytes >> 20, r->sh->slice >> 20);
    /* Every rank must have made the same sequence of allocations. */
    AGMM_CHECK(agmm_win_agree(w, off, bytes));
    memmove(&r->blocks[at + 1], &r->blocks[at],
            (size_t)(r->nblocks - at) * sizeof r->blocks[0]);
    r->blocks[at].off = off;
    r->blocks[at].bytes = need;
    r->nblocks++;
    out->offset = off;
    out->bytes = bytes;
    out->local = slice_of(r->sh, w->rank) + off;
    out->impl = NULL;
    return AGMM_OK;
}

static void shm_win_free(agmm_world_t *w, agmm_win_t *win)
{
    shm_rank_t *r = rank_of(w);
    for (int i = 0; i < r->nblocks; i++) {
        if (r->blocks[i].off != win->offset) continue;
        /* Give the pages back and leave them zeroed for the next window:
         * MADV_REMOVE frees the shared backing store. Peers may still be
         * touching our slice until the caller's barrier, which the plan
         * does before freeing. */
        madvise(win->local, r->blocks[i].bytes, MADV_REMOVE);
        memmove(&r->blocks[i], &r->blocks[i + 1],
                (size_t)(r->nblocks - i - 1) * sizeof r->blocks[0]);
        r->nblocks--;
        break;
    }
    memset(win, 0, sizeof *win);
}

static agmm_status_t shm_signal(agmm_world_t *w, const agmm_win_t *sigwin,
                                int dst, size_t sig_off, uint64_t value)
{
    shm_rank_t *r = rank_of(w);
    unsigned char *base = slice_of(r->sh, dst) + sigwin->offset;
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
    shm_rank_t *r = rank_of(w);
    unsigned char *base = slice_of(r->sh, dst) + win->offset;
    if (r->link && dst != w->rank) {
        unsigned char *sig = slice_of(r->sh, dst) + sigwin->offset + sig_off;
        return agmm_link_post(r->link, dst, base + off, src, bytes,
                              (_Atomic uint64_t *)(void *)sig, value);
    }
    memcpy(base + off, src, bytes);
    return shm_signal(w, sigwin, dst, sig_off, value);
}

static agmm_status_t shm_quiet(agmm_world_t *w)
{
    shm_rank_t *r = rank_of(w);
    if (!r->link) return AGMM_OK; /* puts are synchronous copies */
    /* Waits for the calling thread's own queued puts and signals, which is
     * what quiet promises (link.c). */
    return agmm_link_drain(r->link, w, agmm_deadline(w, 0));
}

/* ----------------------------------------------------------- vtable */

static const agmm_transport_ops_t shm_ops = {
    .caps = AGMM_TP_CAP_ONE_SIDED,
    .win_alloc = shm_win_alloc,
    .win_free = shm_win_free,
    .put_signal = shm_put_signal,
    .signal = shm_signal,
    .quiet = shm_quiet,
};

agmm_status_t agmm_shm_world_init(agmm_shm_shared_t *sh, int rank,
                                  agmm_world_t *w)
{
    /* The rank's private state lives for the life of the process. */
    static shm_rank_t state;
    memset(&state, 0, sizeof state);
    state.sh = sh;
    w->ops = &shm_ops;
    w->rank = rank;
    w->size = sh->nranks;
    w->impl = &state;
    if (sh->link_gbps > 0 && sh->nranks > 1)
        return agmm_link_create(sh->nranks, sh->link_gbps, sh->link_latency_us,
                                &state.link);
    return AGMM_OK;
}

void agmm_shm_world_fini(agmm_world_t *w)
{
    shm_rank_t *r = rank_of(w);
    agmm_link_destroy(r->link);
    r->link = NULL;
}

int agmm_shm_link(const agmm_world_t *w, double *gbps, double *latency_us)
{
    const shm_rank_t *r = (const shm_rank_t *)w->impl;
    if (gbps) *gbps = r->sh->link_gbps;
    if (latency_us) *latency_us = r->sh->link_latency_us;
    return r->sh->link_gbps > 0;
}
