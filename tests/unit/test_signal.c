/* Signals and waits over the shared-memory transport: a published epoch
 * wakes the waiter and carries the data with it; a missing one times out
 * with rank, peer, index, expected and observed epoch in the message; an
 * abort wakes every waiter; a barrier holds until all ranks arrive, and
 * one that times out names the ranks that did not. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agmm.h"
#include "common/util.h"
#include "rank_check.h"
#include "transport/transport.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

enum { DATA_BYTES = 4096 };

/* Rank 0 puts data + signal epochs 1..3 with pauses; rank 1 waits for each
 * and checks the data that came with it (release/acquire pairing). */
static int publish_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    agmm_win_t data, sig;
    CHECK(w->ops->win_alloc(w, DATA_BYTES, &data) == AGMM_OK, "win data");
    CHECK(w->ops->win_alloc(w, AGMM_CACHE_LINE, &sig) == AGMM_OK, "win sig");
    unsigned char buf[DATA_BYTES];
    for (uint64_t e = 1; e <= 3; e++) {
        if (r == 0) {
            sleep_ms(20);
            memset(buf, (int)e, sizeof buf);
            CHECK(w->ops->put_signal(w, &data, 1, 0, buf, sizeof buf, &sig, 0,
                                     e) == AGMM_OK,
                  "put_signal");
            CHECK(w->ops->quiet(w) == AGMM_OK, "quiet");
        } else {
            agmm_wait_what_t what = {"tile", 0, 0, 0, 0, 0};
            agmm_status_t st = agmm_signal_wait(w, agmm_win_signal(&sig, 0), e,
                                                agmm_now() + 20, &what);
            CHECK(st == AGMM_OK, "wait epoch %llu: %s", (unsigned long long)e,
                  agmm_status_str(st));
            int same = 1;
            for (int i = 0; i < DATA_BYTES; i++)
                same &= data.local[i] == e;
            CHECK(same, "data of epoch %llu arrived with its signal",
                  (unsigned long long)e);
        }
    }
    /* An older epoch is already satisfied (waits are ">="). */
    if (r == 1) {
        agmm_wait_what_t what = {"tile", 0, 0, 0, 0, 0};
        CHECK(agmm_signal_wait(w, agmm_win_signal(&sig, 0), 2, agmm_now(),
                               &what) == AGMM_OK,
              "epoch 3 satisfies a wait for 2");
    }
    CHECK(agmm_world_barrier(w, 20) == AGMM_OK, "barrier");
    w->ops->win_free(w, &sig);
    w->ops->win_free(w, &data);
    return rank_checks_save(r);
}

/* Rank 0 publishes epoch 2 but never 3: rank 1 times out naming what it
 * waited for; rank 0, in a barrier, is woken by the abort. */
static int timeout_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    agmm_win_t sig;
    CHECK(w->ops->win_alloc(w, AGMM_CACHE_LINE, &sig) == AGMM_OK, "win sig");
    /* The signal lands before rank 1 starts its 0.3 s wait (a barrier),
     * however late rank 0 gets its core. */
    if (r == 0) CHECK(w->ops->signal(w, &sig, 1, 0, 2) == AGMM_OK, "signal");
    CHECK(agmm_world_barrier(w, 20) == AGMM_OK, "barrier after the signal");
    if (r == 0) {
        agmm_status_t st = agmm_world_barrier(w, 30);
        CHECK(st == AGMM_ERR_ABORTED, "barrier ends by abort, got %s",
              agmm_status_str(st));
        CHECK(strstr(agmm_last_error(), "rank 1 timed out") != NULL,
              "abort reason names the rank that timed out: '%s'",
              agmm_last_error());
    } else {
        agmm_wait_what_t what = {"tile", 0, 5, 0, 0, 0};
        double t0 = agmm_now();
        agmm_status_t st = agmm_signal_wait(w, agmm_win_signal(&sig, 0), 3,
                                            agmm_now() + 0.3, &what);
        CHECK(st == AGMM_ERR_TIMEOUT, "timeout, got %s", agmm_status_str(st));
        CHECK(agmm_now() - t0 >= 0.3, "did not give up before the deadline");
        const char *msg = agmm_last_error();
        CHECK(strstr(msg, "tile 5 from rank 0") &&
                  strstr(msg, "expected epoch >= 3, observed 2"),
              "message names tile, peer, expected and observed: '%s'", msg);
    }
    return rank_checks_save(r);
}

/* A rows cell ((round << 32) | rows): rank 0 raises round 4 with 7 rows,
 * rank 1 waits for round 5 and its timeout states rounds and rows, rank 0
 * (in a barrier) sees the same words in the abort reason. */
static int rows_timeout_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    agmm_win_t sig;
    CHECK(w->ops->win_alloc(w, AGMM_CACHE_LINE, &sig) == AGMM_OK, "win sig");
    const char *want = "expected round >= 5, observed round 4 of 7 rows";
    if (r == 0)
        CHECK(w->ops->signal(w, &sig, 1, 0, (4ull << 32) | 7) == AGMM_OK,
              "signal");
    CHECK(agmm_world_barrier(w, 20) == AGMM_OK, "barrier after the signal");
    if (r == 0) {
        CHECK(agmm_world_barrier(w, 30) == AGMM_ERR_ABORTED, "aborted");
        CHECK(strstr(agmm_last_error(), want) != NULL, "abort reason: '%s'",
              agmm_last_error());
    } else {
        agmm_wait_what_t what = {"row count of round", 0, 5, 0, 0, 1};
        agmm_status_t st = agmm_signal_wait(
            w, agmm_win_signal(&sig, 0), 5ull << 32, agmm_now() + 0.3, &what);
        CHECK(st == AGMM_ERR_TIMEOUT, "timeout, got %s", agmm_status_str(st));
        CHECK(strstr(agmm_last_error(), "row count of round 5 from rank 0") &&
                  strstr(agmm_last_error(), want),
              "message: '%s'", agmm_last_error());
    }
    return rank_checks_save(r);
}

/* Rank 1 aborts; rank 0, waiting with a long deadline, wakes with
 * AGMM_ERR_ABORTED and the reason. */
static int abort_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    agmm_win_t sig;
    CHECK(w->ops->win_alloc(w, AGMM_CACHE_LINE, &sig) == AGMM_OK, "win sig");
    if (r == 1) {
        sleep_ms(50);
        agmm_world_abort(w, "test abort");
    } else {
        agmm_wait_what_t what = {"tile", 1, 0, 0, 0, 0};
        agmm_status_t st = agmm_signal_wait(w, agmm_win_signal(&sig, 0), 1,
                                            agmm_now() + 60, &what);
        CHECK(st == AGMM_ERR_ABORTED, "abort wakes the waiter, got %s",
              agmm_status_str(st));
        CHECK(strstr(agmm_last_error(), "rank 1 aborted: test abort") != NULL,
              "reason: '%s'", agmm_last_error());
    }
    return rank_checks_save(r);
}

/* Nobody leaves a barrier before the last rank has entered it. */
static int barrier_main(agmm_world_t *w, void *arg)
{
    _Atomic uint64_t *entered = arg; /* shared anonymous memory */
    rank_checks_begin();
    int r = agmm_world_rank(w);
    for (int round = 1; round <= 50; round++) {
        if (r == round % agmm_world_size(w)) sleep_ms(1);
        atomic_fetch_add(entered, 1);
        CHECK(agmm_world_barrier(w, 20) == AGMM_OK, "barrier %d", round);
        uint64_t seen = atomic_load(entered);
        CHECK(seen >= (uint64_t)(round * agmm_world_size(w)),
              "left barrier %d after only %llu arrivals", round,
              (unsigned long long)seen);
        CHECK(agmm_world_barrier(w, 20) == AGMM_OK, "barrier %d b", round);
    }
    return rank_checks_save(r);
}

/* A barrier that times out names the rank that did not arrive: rank 2
 * stays out until the world has aborted before entering it. The first of
 * ranks 0 and 1 to time out aborts the world with "barrier 1 of all ranks
 * (rank 2 did not arrive)" (before the per-rank arrival cells it said
 * only "barrier 1 of all ranks", and a run with one rank hung could not be
 * told from one with another hung). The late rank, entering at last, finds
 * the world aborted. */
static int barrier_late_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    /* All together first, so ranks 0 and 1 enter barrier 1 at once. */
    CHECK(agmm_world_barrier(w, 20) == AGMM_OK, "first barrier");
    if (r == 2) {
        /* Late until the others have timed out (the world aborted), not
         * for a fixed time a stalled rank 0 or 1 could outlast. */
        for (double until = agmm_now() + 20;
             !agmm_world_aborted(w) && agmm_now() < until;)
            sleep_ms(10);
        agmm_status_t st = agmm_world_barrier(w, 20);
        CHECK(st == AGMM_ERR_ABORTED,
              "late rank: barrier ends by abort, got %s", agmm_status_str(st));
        return rank_checks_save(r);
    }
    agmm_status_t st = agmm_world_barrier(w, 1.0);
    /* Rank 2 enters once the first of ranks 0 and 1 has timed out: its
     * arrival completes the count, which wakes the other rank if it is
     * still waiting (a slow machine). A barrier completed in an aborted
     * world is not one (world/world.c), and rank 2 saw the abort
     * before arriving, so that rank leaves with ABORTED, never OK; or it
     * times out itself, seeing every rank arrived. What must hold besides
     * is the first one's reason, which is the world's: it timed out
     * before rank 2 entered. */
    const char *why = agmm_world_aborted(w);
    CHECK(st == AGMM_ERR_TIMEOUT || st == AGMM_ERR_ABORTED,
          "barrier times out or ends by abort, got %s", agmm_status_str(st));
    /* Rank 2, and the other waiting rank only if the machine stalled it
     * past the deadline too. */
    CHECK(why &&
              (strstr(why, "barrier 1 of all ranks (rank 2 did not arrive)") ||
               strstr(why, "barrier 1 of all ranks (ranks 0, 2 did not") ||
               strstr(why, "barrier 1 of all ranks (ranks 1, 2 did not")),
          "the world's reason names the late rank: '%s'", why ? why : "");
    return rank_checks_save(r);
}

/* A barrier whose count completes in an aborted world ends by abort on
 * every rank (world/world.c), and so does a later all-gather: ranks 0 and 1
 * wait in it; rank 2 aborts the world, then arrives last. Whether a waiter sees
 * the abort flag first or the completed count first, it must leave with ABORTED
 * and the world's reason must be rank 2's (before, a waiter woken by the count
 * left with OK while the last arriver got ABORTED). */
static int barrier_aborted_main(agmm_world_t *w, void *arg)
{
    _Atomic uint64_t *entered = arg;
    rank_checks_begin();
    int r = agmm_world_rank(w);
    CHECK(agmm_world_barrier(w, 20) == AGMM_OK, "first barrier");
    if (r == 2) {
        for (double until = agmm_now() + 20;
             atomic_load(entered) < 2 && agmm_now() < until;)
            sleep_ms(1);
        sleep_ms(50); /* most often asleep in the barrier by now */
        agmm_world_abort(w, "rank 2 gave up (test)");
    } else {
        atomic_fetch_add(entered, 1);
    }
    agmm_status_t st = agmm_world_barrier(w, 20);
    CHECK(st == AGMM_ERR_ABORTED, "rank %d: barrier ends by abort, got %s", r,
          agmm_status_str(st));
    /* So does an all-gather in that world, on every rank. */
    uint64_t mine = (uint64_t)r, all[3];
    st = agmm_world_allgather(w, &mine, all, sizeof mine);
    CHECK(st == AGMM_ERR_ABORTED, "rank %d: all-gather ends by abort, got %s",
          r, agmm_status_str(st));
    const char *why = agmm_world_aborted(w);
    CHECK(why && strstr(why, "rank 2 gave up (test)"),
          "rank %d: the world's reason is rank 2's: '%s'", r, why ? why : "");
    return rank_checks_save(r);
}

static void launch(int n, agmm_rank_main_fn fn, void *arg, const char *name)
{
    agmm_launch_opts_t o = {0};
    o.nranks = n;
    o.timeout_s = 20;
    o.quiet = 1;
    int code = -1;
    agmm_status_t st = agmm_launch(&o, fn, arg, &code);
    CHECK(st == AGMM_OK && code == 0, "%s: launch %s, exit %d", name,
          agmm_status_str(st), code);
    rank_checks_collect(n);
}

/* barrier_late_main in a joined world (agmm_world_join: the control block
 * in a named segment), 3 processes forked here. */
static void joined_barrier_late(void)
{
    char job[64];
    snprintf(job, sizeof job, "unit-barrier-late-%ld", (long)getpid());
    pid_t kid[3];
    for (int i = 0; i < 3; i++) {
        kid[i] = fork();
        if (kid[i] == 0) {
            agmm_join_opts_t o = {
                .rank = i, .size = 3, .job = job, .timeout_s = 20};
            agmm_world_t *w = NULL;
            if (agmm_world_join(&o, &w) != AGMM_OK) _exit(4);
            int failed = barrier_late_main(w, NULL);
            agmm_world_destroy(w);
            _exit(failed);
        }
    }
    for (int i = 0; i < 3; i++) {
        int st = -1;
        CHECK(kid[i] > 0 && waitpid(kid[i], &st, 0) == kid[i] &&
                  WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "joined barrier-late: rank %d ended with status %#x", i, st);
    }
    rank_checks_collect(3);
}

int main(void)
{
    rank_checks_init(4);
    launch(2, publish_main, NULL, "publish");
    launch(2, timeout_main, NULL, "timeout");
    launch(2, rows_timeout_main, NULL, "rows-timeout");
    launch(2, abort_main, NULL, "abort");
    _Atomic uint64_t *entered = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    launch(3, barrier_main, (void *)entered, "barrier");
    launch(3, barrier_late_main, NULL, "barrier-late");
    for (int i = 0; i < 3; i++) {
        atomic_store(entered, 0);
        launch(3, barrier_aborted_main, (void *)entered, "barrier-aborted");
    }
    joined_barrier_late();
    CHECK(agmm_status_str(AGMM_ERR_TIMEOUT)[0] == 'A', "status names");
    CHECK_DONE("test_signal");
}
