/* The process's worker threads (world/pool.h), alone:
 *
 *   - every index of a run runs once, index 0 on the caller and the others
 *     each on a thread of its own, and what they wrote is seen by the
 *     caller when the run returns, whether the threads were spinning or
 *     asleep when it started;
 *   - the threads are made once and kept: later runs use the same ones;
 *   - a second thread's run while the pool is in use is refused (0), not
 *     mixed into the running one, and the pool serves it afterwards;
 *   - a child of fork(2) starts with no threads and makes its own;
 *   - a bound rank's thread i runs on CPU i mod n of the share, and moves
 *     when the share changes.
 * Under TSan (the CI's stage) a missing acquire or release shows up as a
 * race on the plain counters. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "place/place.h"
#include "world/pool.h"

#define MAXN 8

typedef struct {
    long count[MAXN];       /* plain: written by index i's thread only */
    pthread_t who[MAXN];    /* the thread that ran index i, last run */
    int cpu[MAXN];          /* its CPU, last run */
    long payload[MAXN][16]; /* written by the worker, read by the caller */
    long round;
} work_t;

static void task(void *arg, int i)
{
    work_t *w = arg;
    w->count[i]++;
    w->who[i] = pthread_self();
    w->cpu[i] = sched_getcpu();
    for (int j = 0; j < 16; j++)
        w->payload[i][j] = w->round * 100 + i * 16 + j;
}

/* Runs of n = 1..MAXN, `reps` each: every index once per run, on distinct
 * threads, the caller's index 0, the payload complete after the run.
 * With `gap_us`, each run follows a pause longer than the threads' spin:
 * they are asleep in the kernel when the run hands them their task. */
static void check_runs(int gap_us, int spin, int reps)
{
    static work_t w;
    memset(&w, 0, sizeof w);
    long expect[MAXN] = {0};
    for (int rep = 0; rep < reps; rep++) {
        for (int n = 1; n <= MAXN; n++) {
            w.round = rep * MAXN + n;
            if (gap_us) usleep((useconds_t)gap_us);
            int ran = agmm_pool_run(n, task, &w, spin);
            CHECK(ran == 1, "run of %d (gap %d us, spin %d) refused", n, gap_us,
                  spin);
            for (int i = 0; i < n; i++) {
                expect[i]++;
                for (int j = 0; j < 16; j++)
                    CHECK(w.payload[i][j] == w.round * 100 + i * 16 + j,
                          "index %d of run %ld: payload %d not seen", i,
                          w.round, j);
            }
            CHECK(pthread_equal(w.who[0], pthread_self()),
                  "index 0 ran on another thread");
            for (int i = 1; i < n; i++)
                for (int k = 0; k < i; k++)
                    CHECK(!pthread_equal(w.who[i], w.who[k]),
                          "indices %d and %d on one thread", k, i);
        }
    }
    for (int i = 0; i < MAXN; i++)
        CHECK(w.count[i] == expect[i], "index %d ran %ld times, not %ld", i,
              w.count[i], expect[i]);
}

/* The same threads in a later run. */
static void check_kept(void)
{
    static work_t a, b;
    CHECK(agmm_pool_run(4, task, &a, 1) == 1, "first run refused");
    CHECK(agmm_pool_run(4, task, &b, 1) == 1, "second run refused");
    for (int i = 1; i < 4; i++)
        CHECK(pthread_equal(a.who[i], b.who[i]),
              "index %d on a new thread in the next run", i);
    CHECK(agmm_pool_threads() == MAXN - 1, "%d threads made, not %d",
          agmm_pool_threads(), MAXN - 1);
}

/* A run that holds the pool until told to let go, from another thread. */
static _Atomic int hold_in, hold_go;
static void holding_task(void *arg, int i)
{
    (void)arg;
    if (i != 0) return;
    atomic_store(&hold_in, 1);
    while (!atomic_load(&hold_go))
        sched_yield();
}
static void *holder(void *arg)
{
    (void)arg;
    agmm_pool_run(3, holding_task, NULL, 1);
    return NULL;
}

static void check_busy(void)
{
    static work_t w;
    pthread_t t;
    atomic_store(&hold_in, 0);
    atomic_store(&hold_go, 0);
    pthread_create(&t, NULL, holder, NULL);
    while (!atomic_load(&hold_in))
        sched_yield();
    memset(&w, 0, sizeof w);
    CHECK(agmm_pool_run(3, task, &w, 1) == 0, "a run while in use accepted");
    CHECK(w.count[0] == 0 && w.count[1] == 0, "a refused run ran something");
    atomic_store(&hold_go, 1);
    pthread_join(t, NULL);
    CHECK(agmm_pool_run(3, task, &w, 1) == 1, "the pool refused after use");
    CHECK(w.count[0] == 1 && w.count[1] == 1 && w.count[2] == 1,
          "a run after the busy one: %ld %ld %ld", w.count[0], w.count[1],
          w.count[2]);
}

/* Under ThreadSanitizer (the CI's stage): a child of this multi-threaded
 * process makes threads, as a rank's would, which TSan refuses by default
 * (it cannot vouch for the locks other threads held at the fork; the
 * pool's own lock is made anew in the child). */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}

static void check_fork(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        static work_t w;
        int before = agmm_pool_threads();
        int ran = agmm_pool_run(5, task, &w, 1);
        int ok = before == 0 && ran == 1 && agmm_pool_threads() == 4 &&
                 w.count[4] == 1;
        if (!ok)
            fprintf(stderr, "child: %d threads before, ran %d, %d after\n",
                    before, ran, agmm_pool_threads());
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0,
          "a forked child could not use a pool of its own (status %d)", status);
}

/* Thread i on share[i mod n]; after the share changes, on the new one. */
static void check_binding(void)
{
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) return;
    int cpus[2], n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &mine)) cpus[n++] = c;
    static work_t w;
    for (int flip = 0; flip < 2; flip++) {
        agmm_cpuset_t share;
        memset(&share, 0, sizeof share);
        int first = cpus[flip % n], second = cpus[(flip + 1) % n];
        agmm_cpuset_add(&share, first);
        if (n > 1) agmm_cpuset_add(&share, second);
        agmm_bind_adopt(&share);
        for (int rep = 0; rep < 20; rep++) {
            CHECK(agmm_pool_run(4, task, &w, 1) == 1, "bound run refused");
            for (int i = 1; i < 4; i++) {
                int want = agmm_bind_worker_cpu(i);
                CHECK(w.cpu[i] == want,
                      "share %d,%d: index %d on CPU %d, not %d", first, second,
                      i, w.cpu[i], want);
            }
        }
    }
    printf("binding checked over %d CPU(s)\n", n);
}

int main(void)
{
    check_runs(0, 1, 200);
    check_runs(200, 1, 10);
    check_runs(0, 0, 100);
    check_kept();
    check_busy();
    check_fork();
    check_binding(); /* last: it binds this process */
    CHECK_DONE("test_pool");
}
