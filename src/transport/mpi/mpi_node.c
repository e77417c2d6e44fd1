/* Same-host peers under MPI: see mpi_node.h for the design. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/param.h"
#include "transport/mpi/mpi_node.h"

/* Job part of the window segments' names: the pid in the name already makes
 * them unique per process (segment.h). */
#define NODE_JOB "mpi"

/* An OpenMPI MCA parameter as mpirun hands it to the ranks (--mca NAME V
 * becomes OMPI_MCA_NAME=V in their environment), or its row's default. */
static long mca_param(agmm_param_id_t id)
{
    long x;
    return agmm_param_long(id, &x) == 1 && x >= 0 ? x
                                                  : agmm_param_default_int(id);
}

/* Rank 0, when the world spans hosts: mpirun ends a job that lost a host
 * only through its out-of-band TCP keepalive (docs/mpi.md, "Failures
 * across hosts"); with OpenMPI's defaults (300 s + 20 s x 9) a cut host
 * keeps mpirun waiting for ~15 min after agmm's own timeout fired. Say so
 * once, with the settings that work. */
static void check_keepalive(agmm_world_t *w, int hosts)
{
    if (w->rank != 0 || hosts < 2) return;
    long t = mca_param(AGMM_PARAM_EXT_OMPI_KEEPALIVE_TIME);
    long i = mca_param(AGMM_PARAM_EXT_OMPI_KEEPALIVE_INTVL);
    long p = mca_param(AGMM_PARAM_EXT_OMPI_KEEPALIVE_PROBES);
    double lost = (double)t + (double)i * (double)p;
    if (lost < w->timeout_s) return;
    agmm_warn("%d hosts, and mpirun notices a lost host only after %.0f s "
              "(oob_tcp_keepalive_time %ld + intvl %ld x probes %ld), not "
              "within --timeout %.0f s: a cut or dead host would keep mpirun "
              "from exiting; run mpirun with --mca oob_tcp_keepalive_time 1 "
              "--mca oob_tcp_keepalive_intvl 1 --mca "
              "oob_tcp_keepalive_probes 3 (docs/mpi.md, \"Failures across "
              "hosts\")",
              hosts, lost, t, i, p, w->timeout_s);
}

/* The host's ranks: MPI_COMM_TYPE_SHARED, or, with the test hook
 * AGMM_TEST_MPI_HOST_SIZE=k (the same on every rank), "hosts" of k
 * consecutive world ranks, so that one machine can test what several
 * hosts do (tiles between the groups go through MPI, inside a group
 * through shared memory, relayed as across hosts). */
static agmm_status_t split_hosts(agmm_world_t *w, MPI_Comm *out)
{
    int per = (int)agmm_param_int(AGMM_PARAM_TEST_MPI_HOST_SIZE);
    if (per > 0)
        MPI_TRY(MPI_Comm_split(MPI_COMM_WORLD, w->rank / per, w->rank, out),
                "MPI_Comm_split (test hosts)");
    else
        MPI_TRY(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                    w->rank, MPI_INFO_NULL, out),
                "MPI_Comm_split_type");
    return AGMM_OK;
}

/* Every rank's place on its host (hidx, hsize), and whether this world
 * relays (mpi_relay.c): only with several hosts, AGMM_MPI_RELAY not 0,
 * and every host able to forward (its shared-memory layer on, or a single
 * rank there); collective over the world, so every rank decides alike. */
static agmm_status_t place_ranks(agmm_world_t *w, mpi_node_t *n, int on,
                                 int node_rank, int node_size)
{
    n->hidx = malloc(sizeof(int) * 2 * (size_t)w->size);
    int *all = n->hidx;
    if (!all) return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    n->hsize = all + w->size;
    int mine[2] = {node_rank, node_size};
    int *pairs = malloc(sizeof(int) * 2 * (size_t)w->size);
    if (!pairs) return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    int rc = MPI_Allgather(mine, 2, MPI_INT, pairs, 2, MPI_INT, MPI_COMM_WORLD);
    for (int q = 0; rc == MPI_SUCCESS && q < w->size; q++) {
        n->hidx[q] = pairs[2 * q];
        n->hsize[q] = pairs[2 * q + 1];
    }
    free(pairs);
    MPI_TRY(rc, "MPI_Allgather (hosts' ranks)");
    int want = agmm_param_bool(AGMM_PARAM_MPI_RELAY) && n->hosts > 1 &&
               (on || node_size == 1) && node_size <= 64;
    MPI_TRY(
        MPI_Allreduce(&want, &n->relay, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD),
        "MPI_Allreduce (relay)");
    return AGMM_OK;
}

agmm_status_t agmm_mpi_node_init(agmm_world_t *w, mpi_state_t *s)
{
    mpi_node_t *n = &s->node;
    n->comm = MPI_COMM_NULL;
    n->size = 1;
    /* Collective over the world whatever AGMM_MPI_SHM says, so that a rank
     * started with another environment cannot hang the others here. */
    AGMM_CHECK(split_hosts(w, &n->comm));
    MPI_Comm_set_errhandler(n->comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(n->comm, &n->size);
    MPI_Comm_rank(n->comm, &n->rank);
    int leader = n->rank == 0, hosts = 0;
    MPI_TRY(MPI_Allreduce(&leader, &hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce (hosts)");
    n->hosts = hosts;
    /* test hosts are one machine */
    if (!agmm_param_is_set(AGMM_PARAM_TEST_MPI_HOST_SIZE))
        check_keepalive(w, hosts);
    /* On only if every rank of the host wants it: a pair that disagreed
     * would put through shared memory into a receive posted over MPI. */
    int want = agmm_param_bool(AGMM_PARAM_MPI_SHM), all = 0;
    MPI_TRY(MPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, n->comm),
            "MPI_Allreduce (same-host ranks)");
    int node_rank = n->rank, node_size = n->size, on = n->size > 1 && all;
    if (on) { /* all freed by agmm_mpi_node_fini */
        n->world_of = malloc(sizeof(int) * (size_t)n->size);
        int *node_of = malloc(sizeof(int) * (size_t)w->size);
        n->scratch = calloc(2 * (size_t)n->size, sizeof(int64_t));
        if (!n->world_of || !node_of || !n->scratch) {
            free(node_of);
            return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
        }
        MPI_TRY(MPI_Allgather(&w->rank, 1, MPI_INT, n->world_of, 1, MPI_INT,
                              n->comm),
                "MPI_Allgather (same-host ranks)");
        for (int q = 0; q < w->size; q++)
            node_of[q] = -1;
        for (int i = 0; i < n->size; i++)
            if (i != n->rank) node_of[n->world_of[i]] = i;
        n->node_of = node_of; /* on from here */
    } else {
        n->size = 1;
        n->rank = 0;
        MPI_Comm_free(&n->comm);
    }
    return place_ranks(w, n, on, node_rank, node_size);
}

void agmm_mpi_node_fini(mpi_state_t *s)
{
    mpi_node_t *n = &s->node;
    if (n->comm != MPI_COMM_NULL) MPI_Comm_free(&n->comm);
    free(n->node_of);
    free(n->world_of);
    free(n->scratch);
    free(n->hidx); /* hsize lives in the same block */
    n->hidx = n->hsize = NULL;
    n->node_of = n->world_of = NULL;
    n->scratch = NULL;
}

/* Collective over the host's ranks, with the world's timeout and abort. */
static agmm_status_t node_allgather(agmm_world_t *w, const void *in, void *out,
                                    size_t bytes)
{
    MPI_Request req;
    MPI_TRY(MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE,
                           agmm_mpi_state(w)->node.comm, &req),
            "MPI_Iallgather (same-host ranks)");
    return agmm_mpi_wait_reqs(w, &req, 1, agmm_deadline(w, 0),
                              "an all-gather among the ranks of this host");
}

static void unmap_all(mpi_node_t *n, mpi_win_t *mw)
{
    if (mw->maps)
        for (int i = 0; i < n->size; i++)
            agmm_seg_unmap(&mw->maps[i]);
    free(mw->maps);
    free(mw->peer);
    mw->maps = NULL;
    mw->peer = NULL;
}

agmm_status_t agmm_mpi_node_win_alloc(agmm_world_t *w, mpi_win_t *mw,
                                      size_t bytes)
{
    mpi_state_t *s = agmm_mpi_state(w);
    mpi_node_t *n = &s->node;
    /* The ready cell (mpi_internal.h) on a cache line of its own past the
     * window's bytes. */
    mw->ready_off =
        (bytes + AGMM_CACHE_LINE - 1) & ~(size_t)(AGMM_CACHE_LINE - 1);
    size_t total = mw->ready_off + AGMM_CACHE_LINE;
    if (!n->node_of) {                 /* no same-host peers: private memory */
        mw->local = agmm_alloc(total); /* zeroed */
        return mw->local ? AGMM_OK
                         : agmm_error(AGMM_ERR_NO_MEMORY,
                                      "MPI: out of memory for a %zu-byte "
                                      "window",
                                      bytes);
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t need = (total + page - 1) & ~(page - 1);
    int64_t info[2] = {(int64_t)getpid(), 0}, *all = n->scratch;
    mw->maps = calloc((size_t)n->size, sizeof *mw->maps);
    mw->peer = calloc((size_t)w->size, sizeof *mw->peer);
    agmm_status_t st = mw->maps && mw->peer && need >= total
                           ? AGMM_OK
                           : agmm_error(AGMM_ERR_NO_MEMORY,
                                        "MPI: out of memory for a %zu-byte "
                                        "window",
                                        bytes);
    /* 1. this rank's copy: a segment of its own, zero-filled */
    char tag[AGMM_SEG_TAG_MAX + 1], mine[AGMM_SEG_NAME_MAX];
    snprintf(tag, sizeof tag, "m%llu", (unsigned long long)mw->id);
    if (st == AGMM_OK) st = agmm_seg_name(mine, NODE_JOB, getpid(), tag);
    if (st == AGMM_OK) {
        int exists = 0;
        st = agmm_seg_create(mine, need, &mw->maps[n->rank], &exists);
        if (exists) {
            /* Our pid and window id: a leftover of a dead process that had
             * this pid (this process makes each name once). Replace it. */
            agmm_seg_unlink(mine);
            st = agmm_seg_create(mine, need, &mw->maps[n->rank], NULL);
        }
    }
    int created = st == AGMM_OK;
    info[1] = created;
    /* 2. the host's pids (the names) and who created its copy. Every rank
     * of the host takes part in both all-gathers, whatever failed, so
     * none waits for another; `all` is only read if they passed. */
    agmm_status_t gst = node_allgather(w, info, all, sizeof info);
    if (gst != AGMM_OK && st == AGMM_OK) st = gst;
    /* 3. the peers' copies */
    for (int i = 0; st == AGMM_OK && i < n->size; i++) {
        if (i == n->rank) continue;
        if (!all[2 * i + 1]) {
            st = agmm_error_quiet(AGMM_ERR_NO_MEMORY,
                                  "MPI: rank %d could not create its copy of a "
                                  "%zu KiB window",
                                  n->world_of[i], bytes >> 10);
            break;
        }
        char name[AGMM_SEG_NAME_MAX];
        st = agmm_seg_name(name, NODE_JOB, (pid_t)all[2 * i], tag);
        if (st == AGMM_OK) st = agmm_seg_open(name, need, &mw->maps[i], NULL);
        if (st == AGMM_OK) mw->peer[n->world_of[i]] = mw->maps[i].addr;
    }
    /* 4. everyone of the host mapped every copy: after this no one opens
     * a name any more */
    if (gst == AGMM_OK) {
        int64_t ok[2] = {st == AGMM_OK, 0};
        gst = node_allgather(w, ok, all, sizeof ok);
        if (gst != AGMM_OK && st == AGMM_OK) st = gst;
        for (int i = 0; st == AGMM_OK && i < n->size; i++)
            if (!all[2 * i])
                st = agmm_error_quiet(AGMM_ERR_SYSTEM,
                                      "MPI: rank %d could not map its "
                                      "same-host peers' copies of a window",
                                      n->world_of[i]);
    }
    /* 5. the names go: the memory lives as long as its mappings */
    if (created) agmm_seg_unlink(mine);
    if (st != AGMM_OK) {
        unmap_all(n, mw);
        return st;
    }
    mw->local = mw->maps[n->rank].addr;
    return AGMM_OK;
}

void agmm_mpi_node_win_free(mpi_state_t *s, mpi_win_t *mw)
{
    if (mw->maps)
        unmap_all(&s->node, mw);
    else
        agmm_free(mw->local);
    mw->local = NULL;
}

void agmm_mpi_node_put(mpi_state_t *s, const agmm_win_t *win, int dst,
                       size_t off, const void *src, size_t bytes,
                       const agmm_win_t *sigwin, size_t sig_off, uint64_t value)
{
    const mpi_win_t *dw = win->impl, *sw = sigwin->impl;
    memcpy(dw->peer[dst] + off, src, bytes);
    /* Release after the rows: a reader whose acquire load sees `value`
     * sees them (signal.c); it also wakes a reader asleep on the cell
     * (a futex on a shared mapping: the peer's own address of it). */
    agmm_signal_publish((_Atomic uint64_t *)(void *)(sw->peer[dst] + sig_off),
                        value);
    atomic_fetch_add_explicit(&s->node.shm_puts, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->node.shm_bytes, bytes, memory_order_relaxed);
}

void agmm_mpi_node_signal(mpi_state_t *s, const agmm_win_t *sigwin, int dst,
                          size_t sig_off, uint64_t value)
{
    const mpi_win_t *sw = sigwin->impl;
    agmm_signal_publish((_Atomic uint64_t *)(void *)(sw->peer[dst] + sig_off),
                        value);
    atomic_fetch_add_explicit(&s->node.shm_signals, 1, memory_order_relaxed);
}

void agmm_mpi_node_report(agmm_world_t *w, mpi_state_t *s)
{
    if (!agmm_param_bool(AGMM_PARAM_MPI_COUNTERS)) return;
    mpi_node_t *n = &s->node;
#define LD(x)                                                                  \
    (unsigned long long)atomic_load_explicit(&n->x, memory_order_relaxed)
    agmm_log_line(
        "agmm: rank %d: counters: %d ranks on this host, %d hosts; shm: "
        "%llu tile puts, %llu bytes, %llu signals; mpi: %llu tile puts, "
        "%llu bytes, %llu signals; relay %s: %llu tiles forwarded, %llu "
        "bytes\n",
        w->rank, n->size, n->hosts, LD(shm_puts), LD(shm_bytes),
        LD(shm_signals), LD(mpi_puts), LD(mpi_bytes), LD(mpi_signals),
        n->relay ? "on" : "off", LD(fwd_puts), LD(fwd_bytes));
#undef LD
}
