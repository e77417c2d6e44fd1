/* Plans re-created in one MPI world (issue 15), run under mpirun:
 *
 *   test_recreate ITERATIONS [delay]   the re-creation loop
 *   test_recreate abort-message        an abort's reason reaches the peer
 *   test_recreate baseline-wake        the MPI baseline wakes a sleeper
 *   test_recreate barrier-late         a timed-out barrier names the late rank
 *
 * The loop: ITERATIONS times create a plan of a new shape (uneven and
 * empty shards, tile_m 1, every dtype, 0 or 1 comm workers), run a few
 * rounds (fused and baseline in sequences such as F B F, B B B), check
 * every round of every rank against agmm_reference, destroy the plan. An
 * ack of the last round that is still in flight when a plan is destroyed
 * must neither abort the next plan nor land in its signals (the bug:
 * "got a signal ... for cell 512 of window 1, which it does not have", or
 * a row computed before its data arrived). `delay` slows the progress
 * thread's handling of every ack (AGMM_TEST_CTL_DELAY_US, an mpi.c test
 * hook) by 20 ms and makes one rank late into create, rounds (30 ms) and
 * some destroys, which is how the stale ack landed in the next plan's tile
 * cell before the tile's data. At the end no
 * control message may have been dropped: teardown waits for every ack.
 *
 * Exit 0 on every rank when everything matched. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agmm_ext.h"
#include "world/world.h"

#define MAXR 8

static int rank_, size_;

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Small integers times powers of two: exact in fp16, bf16 and fp32, and so
 * are the sums of the GEMM, so results compare tightly. */
static float val(int it, int round, int src, int64_t i)
{
    uint64_t x = (uint64_t)i * 2654435761u + (uint64_t)it * 97 +
                 (uint64_t)round * 31 + (uint64_t)src * 7;
    return (float)((int)(x % 7) - 3) * 0.5f;
}

typedef struct shape {
    int64_t m[MAXR];
    int64_t k, n, tile_m, tile_n;
    agmm_dtype_t dtype;
    int comm, gemm;
    const char *rounds; /* "FBF": one schedule per round */
} shape_t;

static void make_shape(int it, shape_t *s)
{
    static const char *const seqs[] = {"BBB", "FBF", "FF", "BF",
                                       "FB",  "F",   "B",  "FFB"};
    static const int64_t tms[] = {1, 2, 3, 16};
    memset(s, 0, sizeof *s);
    int pat = it % 5;
    for (int r = 0; r < size_; r++) {
        switch (pat) {
        case 0:
            s->m[r] = 1;
            break; /* the plan A */
        /* The plan B, except that rank 0's shard has 2P + 1 rows:
         * plan A's ack cell of rank 1 (cell 2P + 1) is then B's tile 0 of
         * rank 1, the first tile rank 0 waits for from rank 1. */
        case 1:
            s->m[r] = r == 0 ? 2 * size_ + 1 : 16;
            break;
        case 2:
            s->m[r] = r == it % size_ ? 0 : 5;
            break; /* one empty */
        case 3:
            s->m[r] = r == 0 ? 0 : 1 + 3 * r;
            break;
        default:
            s->m[r] = (it + 3 * r) % 9;
            break; /* may be empty */
        }
    }
    int64_t sum = 0;
    for (int r = 0; r < size_; r++)
        sum += s->m[r];
    if (sum == 0) s->m[size_ - 1] = 2;
    s->k = pat < 2 ? 8 : 5 + it % 13;
    s->n = pat < 2 ? 8 : 3 + (it * 5) % 17;
    s->tile_m = pat < 2 ? 1 : tms[(it / 5) % 4];
    s->tile_n = 1 + it % 8;
    s->dtype = (agmm_dtype_t)((it / 3) % 3);
    s->comm = (it / 2) % 2;
    s->gemm = 1 + (it / 4) % 2;
    s->rounds = pat == 0 ? "BBB" : seqs[(it / 5 + it) % 8];
}

static int check_round(int it, int round, const shape_t *s, const float *c,
                       const void *const *shards, const void *w16, float *ref,
                       int64_t M)
{
    if (agmm_reference(size_, shards, s->m, s->k, s->n, s->dtype, w16, ref) !=
        AGMM_OK) {
        fprintf(stderr, "rank %d: reference failed: %s\n", rank_,
                agmm_last_error());
        return 1;
    }
    for (int64_t i = 0; i < M * s->n; i++)
        if (fabsf(c[i] - ref[i]) > 1e-3f * (1.0f + fabsf(ref[i]))) {
            fprintf(stderr,
                    "test_recreate: rank %d: iteration %d round %d (%c): row "
                    "%lld col %lld is %g, want %g\n",
                    rank_, it, round + 1, s->rounds[round],
                    (long long)(i / s->n), (long long)(i % s->n), c[i], ref[i]);
            return 1;
        }
    return 0;
}

/* One plan: create, its rounds, destroy. 0 when all matched. */
static int one_plan(agmm_world_t *w, int it, int delay)
{
    shape_t s;
    make_shape(it, &s);
    /* The rank that lags this time. A stale ack of plan A from rank q
     * lands, with the progress thread delayed, in plan B's signal window
     * at A's ack cell, which in B (more tiles) is a tile cell of some
     * source: when that source is late, the tile "arrives" before its
     * data (iterations 0 -> 1, patterns 0 -> 1: on rank 0, rank 1's ack
     * of A is B's tile 0 of rank 1, and rank 1 is late). */
    int late = delay && rank_ == (it / 5 + 1) % size_;
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = size_;
    d.m_local = s.m;
    d.k = s.k;
    d.n = s.n;
    d.tile_m = s.tile_m;
    d.tile_n = s.tile_n;
    d.dtype = s.dtype;
    d.comm_workers = s.comm;
    d.gemm_workers = s.gemm;
    if (late) nap_ms(3);
    agmm_plan_t *p = NULL;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) {
        fprintf(stderr, "test_recreate: rank %d: iteration %d: create: %s\n",
                rank_, it, agmm_last_error());
        return 1;
    }
    int64_t M = 0;
    for (int r = 0; r < size_; r++)
        M += s.m[r];
    size_t es = agmm_dtype_size(s.dtype);
    float *f = malloc(sizeof(float) * (size_t)(M * s.k + s.k * s.n));
    unsigned char *all = malloc(es * (size_t)(M * s.k) + 1);
    unsigned char *w16 = malloc(es * (size_t)(s.k * s.n));
    float *c = malloc(sizeof(float) * (size_t)(M * s.n));
    float *ref = malloc(sizeof(float) * (size_t)(M * s.n));
    int bad = !f || !all || !w16 || !c || !ref;
    for (int64_t i = 0; !bad && i < s.k * s.n; i++)
        f[i] = val(it, -1, 0, i) * 0.5f;
    if (!bad) {
        agmm_convert_from_fp32(s.dtype, f, w16, (size_t)(s.k * s.n));
        bad = agmm_plan_set_weight(p, w16) != AGMM_OK;
    }
    for (int round = 0; !bad && s.rounds[round]; round++) {
        const void *shards[MAXR];
        int64_t row = 0;
        for (int src = 0; src < size_; src++) {
            for (int64_t i = 0; i < s.m[src] * s.k; i++)
                f[row * s.k + i] = val(it, round, src, i);
            shards[src] = all + es * (size_t)(row * s.k);
            row += s.m[src];
        }
        agmm_convert_from_fp32(s.dtype, f, all, (size_t)(M * s.k));
        for (int64_t i = 0; i < M * s.n; i++)
            c[i] = NAN;
        agmm_schedule_t sch = s.rounds[round] == 'F' ? AGMM_SCHEDULE_FUSED
                                                     : AGMM_SCHEDULE_BASELINE;
        /* Longer than the ack delay below: a stale ack lands first. */
        if (late) nap_ms(30);
        if (agmm_plan_run(p, sch, shards[rank_], c) != AGMM_OK) {
            fprintf(stderr,
                    "test_recreate: rank %d: iteration %d round %d: %s\n",
                    rank_, it, round + 1, agmm_last_error());
            bad = 1;
            break;
        }
        bad = check_round(it, round, &s, c, shards, w16, ref, M);
    }
    /* A failed rank stops here: tell the peers at once. */
    if (bad) agmm_world_abort(w, "test_recreate: a round failed its check");
    if (late && it % 5 == 2) nap_ms(3);
    if (agmm_plan_destroy(p) != AGMM_OK) {
        fprintf(stderr, "test_recreate: rank %d: iteration %d: destroy: %s\n",
                rank_, it, agmm_last_error());
        bad = 1;
    }
    free(f);
    free(all);
    free(w16);
    free(c);
    free(ref);
    return bad;
}

/* Rank 1 aborts while rank 0 waits in a barrier: rank 0's line must carry
 * the reason (it printed "agmm: rank 0: " and nothing else). */
static int abort_message(agmm_world_t *w)
{
    if (rank_ == 1) {
        agmm_world_abort(w, "test_recreate: planted abort");
        return 1;
    }
    if (rank_ == 0) {
        agmm_status_t st = agmm_world_barrier(w, 600);
        return st == AGMM_ERR_ABORTED ? 2 : 3;
    }
    return 1;
}

/* A barrier that times out names the rank that did not arrive: the last
 * rank never enters it (it sleeps past the others' 2 s timeout); every
 * other rank must fail with a timeout or an abort, and the message of the
 * first to time out says "rank <last> did not arrive" (mpi_e2e.sh checks
 * it). Exit 2 when this rank failed as it should. */
static int barrier_late(agmm_world_t *w)
{
    /* All together first, so ranks 0 and 1 enter the timed barrier at once
     * (a rank that started late would otherwise be named too). */
    if (agmm_world_barrier(w, 60) != AGMM_OK) return 3;
    if (rank_ == size_ - 1) {
        struct timespec ts = {6, 0};
        nanosleep(&ts, NULL); /* the job ends meanwhile (MPI_Abort) */
        return 1;
    }
    agmm_status_t st = agmm_world_barrier(w, 2);
    return st == AGMM_ERR_TIMEOUT || st == AGMM_ERR_ABORTED ? 2 : 3;
}

/* The MPI baseline raises its bulk signals itself after MPI_Iallgatherv.
 * Rank 1 joins each round late, so rank 0's GEMM worker sleeps in the
 * kernel on a bulk cell meanwhile: raising it must wake it (a futex wake
 * call), not leave it to its 20 ms re-check. Over several rounds at least
 * one wake-up must have been made (the worker may be between two sleeps at
 * the moment of one publish, not at all of them). */
static int baseline_wake(agmm_world_t *w)
{
    int64_t m[MAXR];
    for (int r = 0; r < size_; r++)
        m[r] = 64;
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = size_;
    d.m_local = m;
    d.k = d.n = 64;
    d.dtype = AGMM_DTYPE_FP32;
    d.comm_workers = 1;
    d.gemm_workers = 1;
    agmm_plan_t *p = NULL;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 1;
    float *a = calloc(64 * 64, sizeof(float));
    float *wt = calloc(64 * 64, sizeof(float));
    float *c = calloc((size_t)(64 * size_) * 64, sizeof(float));
    int bad = !a || !wt || !c || agmm_plan_set_weight(p, wt) != AGMM_OK;
    uint64_t before = agmm_signal_wake_count();
    for (int round = 0; !bad && round < 4; round++) {
        if (rank_ == 1) nap_ms(100); /* rank 0 sleeps on its bulk cells */
        bad = agmm_plan_run(p, AGMM_SCHEDULE_BASELINE, a, c) != AGMM_OK;
    }
    uint64_t wakes = agmm_signal_wake_count() - before;
    if (!bad && rank_ == 0 && wakes == 0) {
        fprintf(stderr,
                "test_recreate: rank 0: 4 baseline rounds with its GEMM worker "
                "asleep on a bulk cell made no futex wake-up\n");
        bad = 1;
    }
    bad |= agmm_plan_destroy(p) != AGMM_OK;
    free(a);
    free(wt);
    free(c);
    return bad;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "20";
    int delay = argc > 2 && !strcmp(argv[2], "delay");
    if (delay) setenv("AGMM_TEST_CTL_DELAY_US", "20000", 1);
    agmm_world_t *w = NULL;
    if (agmm_world_create_mpi(&argc, &argv, 60, &w) != AGMM_OK) {
        fprintf(stderr, "test_recreate: no MPI world: %s\n", agmm_last_error());
        return 1;
    }
    rank_ = agmm_world_rank(w);
    size_ = agmm_world_size(w);
    int bad = 0;
    if (size_ > MAXR) {
        fprintf(stderr, "test_recreate: at most %d ranks\n", MAXR);
        bad = 1;
    } else if (!strcmp(mode, "abort-message")) {
        bad = abort_message(w);
    } else if (!strcmp(mode, "barrier-late")) {
        bad = barrier_late(w);
    } else if (!strcmp(mode, "baseline-wake")) {
        bad = baseline_wake(w);
    } else {
        int iters = atoi(mode);
        for (int it = 0; !bad && it < iters; it++)
            bad = one_plan(w, it, delay);
        uint64_t dropped = agmm_world_dropped_messages(w);
        if (!bad && dropped != 0) {
            fprintf(stderr,
                    "test_recreate: rank %d: %llu control messages arrived "
                    "after their plan was destroyed\n",
                    rank_, (unsigned long long)dropped);
            bad = 1;
        }
        if (!bad && rank_ == 0)
            printf("test_recreate: %d plans on %d ranks%s: PASS\n", iters,
                   size_, delay ? " (delayed)" : "");
    }
    if (bad) agmm_world_abort(w, "test_recreate failed");
    agmm_world_destroy(w);
    return bad;
}
