/* Signal ping-pong on shared memory: how long from one rank raising a
 * signal (the transport's `signal`, a release store into the peer's window)
 * to the peer's waiting thread (agmm_signal_wait, the wait every tile and
 * ack goes through) seeing it.
 *
 * Two ranks forked by agmm_launch, or, started by mpirun (-np 2), the
 * two ranks of an MPI world: on one host their signals and puts go through
 * shared memory too (transport/mpi/mpi_node.c), or through MPI with
 * AGMM_MPI_SHM=0. Rank 0 raises ping = i and waits for pong >= i; rank 1
 * waits for ping >= i and raises pong = i. With BYTES > 0 each raise is a
 * put of BYTES rows with its signal (put_signal, what a tile costs), not a
 * bare signal. A batch of `iters` round trips is timed on rank 0; one-way
 * = batch time / (2 iters). Prints the median, min and max one-way time
 * over the batches.
 *
 * usage: agmm_pingpong [ITERS_PER_BATCH [BATCHES [BYTES]]]   (10000, 31, 0)
 *        mpirun -np 2 agmm_pingpong ...                      (MPI world) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "common/util.h"
#include "transport/transport.h"

typedef struct args {
    int iters, batches;
    size_t bytes;
    const char *world; /* what the ranks are, for the printout */
} args_t;

/* One raise to the peer: a bare signal, or a put of a->bytes with it. */
static agmm_status_t raise_to(agmm_world_t *w, const args_t *a,
                              const agmm_win_t *data, const void *src,
                              const agmm_win_t *sig, int peer, size_t cell,
                              uint64_t v)
{
    if (a->bytes == 0) return agmm_tp_signal(w, sig, peer, cell, v);
    return agmm_tp_put_signal(w, data, peer, 0, src, a->bytes, sig, cell, v);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const args_t *a = arg;
    agmm_win_t sig, data;
    /* Cell 0: ping (raised by rank 0 on rank 1); cell 1: pong. */
    if (agmm_tp_win_alloc(w, 2 * AGMM_CACHE_LINE, &sig) != AGMM_OK) return 1;
    if (agmm_tp_win_alloc(w, a->bytes ? a->bytes : 1, &data) != AGMM_OK)
        return 1;
    int me = w->rank, peer = 1 - me;
    size_t mine = (size_t)me * AGMM_CACHE_LINE;     /* cell I wait on */
    size_t theirs = (size_t)peer * AGMM_CACHE_LINE; /* cell I raise */
    double *us = calloc((size_t)a->batches, sizeof *us);
    unsigned char *src = calloc(1, a->bytes ? a->bytes : 1);
    if (!us || !src) return 1;
    /* MPI: the peer's put lands in a receive posted each round (below). */
    if (a->bytes &&
        agmm_tp_expect(w, &data, peer, 0, a->bytes, &sig, mine, 0) != AGMM_OK)
        return 1;
    agmm_wait_what_t what = {"pingpong", peer, -1, 0, 0, 0};
    uint64_t v = 0;
    int rc = 0;
    if (agmm_world_barrier(w, 0) != AGMM_OK) rc = 1;
    for (int b = 0; b < a->batches && rc == 0; b++) {
        uint64_t t0 = agmm_now_ns();
        for (int i = 0; i < a->iters && rc == 0; i++) {
            v++;
            if (a->bytes && agmm_tp_round_begin(w, &sig, 0, v) != AGMM_OK)
                rc = 1;
            if (me == 0 &&
                raise_to(w, a, &data, src, &sig, peer, theirs, v) != AGMM_OK)
                rc = 1;
            if (agmm_signal_wait(w, agmm_win_signal(&sig, mine), v,
                                 agmm_deadline(w, 0), &what) != AGMM_OK)
                rc = 1;
            if (me == 1 &&
                raise_to(w, a, &data, src, &sig, peer, theirs, v) != AGMM_OK)
                rc = 1;
            if (agmm_tp_quiet(w) != AGMM_OK) rc = 1;
        }
        us[b] = (double)(agmm_now_ns() - t0) * 1e-3 / (2.0 * a->iters);
    }
    if (rc == 0 && me == 0) {
        qsort(us, (size_t)a->batches, sizeof *us, cmp_double);
        char kind[64] = "signal";
        if (a->bytes)
            snprintf(kind, sizeof kind, "put of %zu bytes + signal", a->bytes);
        printf("pingpong: %s, 2 ranks, %s -> agmm_signal_wait: one-way "
               "wake-up median %.3f us (min %.3f, max %.3f) over %d batches of "
               "%d round trips\n",
               a->world, kind, us[a->batches / 2], us[0], us[a->batches - 1],
               a->batches, a->iters);
    }
    free(us);
    free(src);
    if (agmm_world_barrier(w, 0) != AGMM_OK) rc = 1;
    agmm_tp_win_free(w, &data);
    agmm_tp_win_free(w, &sig);
    return rc;
}

int main(int argc, char **argv)
{
    args_t a = {10000, 31, 0, "shm"};
    long long bytes = 0;
    if (argc > 1) a.iters = atoi(argv[1]);
    if (argc > 2) a.batches = atoi(argv[2]);
    if (argc > 3) bytes = atoll(argv[3]);
    if (argc > 4 || a.iters < 1 || a.batches < 1 || bytes < 0 ||
        bytes > (1ll << 30)) {
        fprintf(
            stderr,
            "usage: %s [ITERS_PER_BATCH >= 1 [BATCHES >= 1 [BYTES 0..2^30]]]\n",
            argv[0]);
        return 2;
    }
    a.bytes = (size_t)bytes;
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
        getenv("PMI_SIZE")) { /* started by an MPI launcher */
        const char *off = getenv("AGMM_MPI_SHM");
        a.world = off && !strcmp(off, "0") ? "mpi (AGMM_MPI_SHM=0)"
                                           : "mpi (same host: shared memory)";
        agmm_world_t *w = NULL;
        if (agmm_world_create_mpi(&argc, &argv, 60, &w) != AGMM_OK) return 1;
        int rc = agmm_world_size(w) == 2 ? rank_main(w, &a) : 2;
        if (rc == 2 && agmm_world_rank(w) == 0)
            fprintf(stderr, "agmm_pingpong: mpirun -np 2, not %d\n",
                    agmm_world_size(w));
        agmm_world_destroy(w);
        return rc;
    }
    agmm_launch_opts_t opts = {0};
    opts.nranks = 2;
    opts.timeout_s = 60;
    int code = 1;
    if (agmm_launch(&opts, rank_main, &a, &code) != AGMM_OK) return 1;
    return code;
}
