/* Signal ping-pong on shared memory: how long from one rank raising a
 * signal (the transport's `signal`, a release store into the peer's window)
 * to the peer's waiting thread (agmm_signal_wait, the wait every tile and
 * ack goes through) seeing it.
 *
 * Two ranks forked by agmm_launch. Rank 0 raises ping = i and waits for
 * pong >= i; rank 1 waits for ping >= i and raises pong = i. A batch of
 * `iters` round trips is timed on rank 0; one-way = batch time / (2 iters).
 * Prints the median, min and max one-way time over the batches.
 *
 * usage: agmm_pingpong [ITERS_PER_BATCH [BATCHES]]   (10000, 31) */
#include <stdio.h>
#include <stdlib.h>

#include "agmm.h"
#include "common/util.h"
#include "transport/transport.h"

typedef struct args {
    int iters, batches;
} args_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int rank_main(agmm_world_t *w, void *arg)
{
    const args_t *a = arg;
    agmm_win_t sig;
    /* Cell 0: ping (raised by rank 0 on rank 1); cell 1: pong. */
    if (w->ops->win_alloc(w, 2 * AGMM_CACHE_LINE, &sig) != AGMM_OK) return 1;
    int me = w->rank, peer = 1 - me;
    size_t mine = (size_t)me * AGMM_CACHE_LINE;     /* cell I wait on */
    size_t theirs = (size_t)peer * AGMM_CACHE_LINE; /* cell I raise */
    double *us = calloc((size_t)a->batches, sizeof *us);
    if (!us) return 1;
    agmm_wait_what_t what = {"pingpong", peer, -1};
    uint64_t v = 0;
    int rc = 0;
    if (agmm_world_barrier(w, 0) != AGMM_OK) rc = 1;
    for (int b = 0; b < a->batches && rc == 0; b++) {
        uint64_t t0 = agmm_now_ns();
        for (int i = 0; i < a->iters && rc == 0; i++) {
            v++;
            if (me == 0 && w->ops->signal(w, &sig, peer, theirs, v) != AGMM_OK)
                rc = 1;
            if (agmm_signal_wait(w, agmm_win_signal(&sig, mine), v,
                                 agmm_deadline(w, 0), &what) != AGMM_OK)
                rc = 1;
            if (me == 1 && w->ops->signal(w, &sig, peer, theirs, v) != AGMM_OK)
                rc = 1;
        }
        us[b] = (double)(agmm_now_ns() - t0) * 1e-3 / (2.0 * a->iters);
    }
    if (rc == 0 && me == 0) {
        qsort(us, (size_t)a->batches, sizeof *us, cmp_double);
        printf("pingpong: shm, 2 ranks, signal -> agmm_signal_wait: one-way "
               "wake-up median %.3f us (min %.3f, max %.3f) over %d batches "
               "of %d round trips\n",
               us[a->batches / 2], us[0], us[a->batches - 1], a->batches,
               a->iters);
    }
    free(us);
    if (agmm_world_barrier(w, 0) != AGMM_OK) rc = 1;
    w->ops->win_free(w, &sig);
    return rc;
}

int main(int argc, char **argv)
{
    args_t a = {10000, 31};
    if (argc > 1) a.iters = atoi(argv[1]);
    if (argc > 2) a.batches = atoi(argv[2]);
    if (argc > 3 || a.iters < 1 || a.batches < 1) {
        fprintf(stderr, "usage: %s [ITERS_PER_BATCH >= 1 [BATCHES >= 1]]\n",
                argv[0]);
        return 2;
    }
    agmm_launch_opts_t opts = {0};
    opts.nranks = 2;
    opts.timeout_s = 60;
    int code = 1;
    if (agmm_launch(&opts, rank_main, &a, &code) != AGMM_OK) return 1;
    return code;
}
