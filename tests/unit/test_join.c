/* Joined worlds and named segments, in one process: argument checks of
 * agmm_world_join / agmm_world_from_env / agmm_cleanup, a one-rank joined
 * world running a plan, and the segment module's security and naming
 * rules (segment.h): O_EXCL, owner and mode checks, names that split one
 * way only. The multi-process cases are tests/e2e/joined.sh. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agmm_ext.h"
#include "check.h"
#include "transport/shm/segment.h"
#include "world/join.h"

static int seg_exists(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    return access(path, F_OK) == 0;
}

static void test_join_args(void)
{
    agmm_world_t *w = (agmm_world_t *)1;
    agmm_join_opts_t o = {.rank = 0, .size = 2, .job = "ok"};
    CHECK(agmm_world_join(NULL, &w) == AGMM_ERR_INVALID_ARG && w == NULL,
          "NULL opts");
    o.size = 0;
    CHECK(agmm_world_join(&o, &w) == AGMM_ERR_INVALID_ARG, "size 0");
    o.size = 2;
    o.rank = 2;
    CHECK(agmm_world_join(&o, &w) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "rank 2 (allowed 0..1)"),
          "rank out of range: %s", agmm_last_error());
    o.rank = 0;
    const char *bad[] = {
        "a/b", "",       "..",
        "x:y", "sp ace", "0123456789012345678901234567890123456789012345678"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.job = bad[i];
        CHECK(agmm_world_join(&o, &w) == AGMM_ERR_INVALID_ARG,
              "job '%s' refused", bad[i]);
    }
    o.job = NULL;
    CHECK(agmm_world_join(&o, &w) == AGMM_ERR_INVALID_ARG, "NULL job");
    CHECK(agmm_cleanup("a/b", NULL) == AGMM_ERR_INVALID_ARG, "cleanup bad job");
}

static void test_from_env(void)
{
    agmm_world_t *w;
    unsetenv("AGMM_RANK");
    unsetenv("RANK");
    CHECK(agmm_world_from_env(1, &w) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "AGMM_RANK is not set"),
          "nothing set: %s", agmm_last_error());
    setenv("AGMM_RANK", "0", 1);
    setenv("AGMM_WORLD_SIZE", "2x", 1);
    CHECK(agmm_world_from_env(1, &w) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "AGMM_WORLD_SIZE='2x'"),
          "bad size named: %s", agmm_last_error());
    setenv("AGMM_WORLD_SIZE", "2", 1);
    setenv("AGMM_RANK", "2", 1);
    CHECK(agmm_world_from_env(1, &w) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "AGMM_RANK='2'"),
          "rank out of range named: %s", agmm_last_error());
    unsetenv("AGMM_RANK");
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "4", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    CHECK(agmm_world_from_env(1, &w) == AGMM_ERR_UNSUPPORTED &&
              strstr(agmm_last_error(), "one host"),
          "two hosts refused: %s", agmm_last_error());
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("LOCAL_WORLD_SIZE");
    unsetenv("AGMM_WORLD_SIZE");
}

/* A world of one joined rank: a real plan and round, then nothing left. */
static void test_one_rank(void)
{
    char job[64], ctl[AGMM_SEG_NAME_MAX];
    snprintf(job, sizeof job, "unit-one-%ld", (long)getpid());
    agmm_seg_name(ctl, job, 0, "ctl");
    agmm_join_opts_t o = {.rank = 0, .size = 1, .job = job, .timeout_s = 10};
    agmm_world_t *w = NULL;
    CHECK(agmm_world_join(&o, &w) == AGMM_OK, "join: %s", agmm_last_error());
    if (!w) return;
    CHECK(!strcmp(agmm_world_transport_name(w), "shm"), "transport shm");
    CHECK(agmm_world_rank(w) == 0 && agmm_world_size(w) == 1, "rank/size");
    CHECK(seg_exists(ctl), "control segment while joined");

    enum { M = 5, K = 3, N = 4 };
    float a[M * K], wt[K * N], c[M * N], want[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (float)(i % 5 - 2);
    for (int i = 0; i < K * N; i++)
        wt[i] = (float)(i % 3 - 1);
    int64_t rows[1] = {M};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = 1;
    d.m_local = rows;
    d.k = K;
    d.n = N;
    d.tile_m = 2;
    d.dtype = AGMM_DTYPE_FP32;
    agmm_plan_t *p = NULL;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_OK, "plan: %s",
          agmm_last_error());
    if (p) {
        CHECK(agmm_plan_set_weight(p, wt) == AGMM_OK, "weight");
        CHECK(agmm_plan_run(p, AGMM_SCHEDULE_FUSED, a, c) == AGMM_OK, "run");
        const void *sh[1] = {a};
        agmm_reference(1, sh, rows, K, N, AGMM_DTYPE_FP32, wt, want);
        CHECK(memcmp(c, want, sizeof c) == 0, "C matches the reference");
        CHECK(agmm_plan_destroy(p) == AGMM_OK, "plan destroy");
    }
    agmm_world_destroy(w);
    CHECK(!seg_exists(ctl), "control segment removed by the last rank");
}

static void test_segments(void)
{
    char job[64], name[AGMM_SEG_NAME_MAX];
    snprintf(job, sizeof job, "unit-seg-%ld", (long)getpid());
    CHECK(agmm_seg_name(name, job, getpid(), "w7") == AGMM_OK, "name");
    agmm_seg_name_t n;
    CHECK(agmm_seg_parse(name, &n) && n.uid == geteuid() &&
              !strcmp(n.job, job) && n.pid == getpid() && !strcmp(n.tag, "w7"),
          "parse round trip of %s", name);
    CHECK(!agmm_seg_parse("agmm:1:a:b:2:ctl", &n),
          "job with ':' splits one way");
    CHECK(!agmm_seg_parse("agmm:x:a:2:ctl", &n), "bad uid");
    CHECK(!agmm_seg_parse("vader_segment.1", &n), "not ours");
    CHECK(agmm_seg_name(name, "a/b", 1, "w") != AGMM_OK,
          "'/' in a job refused");

    agmm_seg_t s1, s2;
    int exists = 0, missing = 0;
    agmm_seg_name(name, job, getpid(), "w7");
    CHECK(agmm_seg_create(name, 5000, &s1, &exists) == AGMM_OK, "create");
    struct stat sb;
    char path[256];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600 &&
              sb.st_uid == geteuid(),
          "mode 0600, ours");
    CHECK(agmm_seg_create(name, 5000, &s2, &exists) == AGMM_ERR_BAD_STATE &&
              exists == 1,
          "O_EXCL: a second create says it exists");
    CHECK(agmm_seg_open(name, 5000, &s2, &missing) == AGMM_OK &&
              s2.bytes == 5000,
          "open maps all of it");
    if (s1.addr && s2.addr) {
        ((char *)s1.addr)[4999] = 42;
        CHECK(((char *)s2.addr)[4999] == 42, "one memory");
    }
    agmm_seg_unmap(&s2);
    /* A wider mode is refused (another user could have written it). */
    chmod(path, 0644);
    CHECK(agmm_seg_open(name, 1, &s2, &missing) == AGMM_ERR_SYSTEM &&
              strstr(agmm_last_error(), "refusing"),
          "mode 0644 refused: %s", agmm_last_error());
    CHECK(agmm_seg_unlink(name) == 0, "unlink");
    CHECK(agmm_seg_open(name, 1, &s2, &missing) == AGMM_ERR_BAD_STATE &&
              missing == 1,
          "gone: missing");
    agmm_seg_unmap(&s1);
    CHECK(agmm_seg_pid_alive(getpid()) && !agmm_seg_pid_alive(0),
          "liveness of self / pid 0");
}

/* A child that has exited is never alive, also while its parent reaps it
 * (its /proc entry vanishes between kill(pid, 0) and the read of its
 * stat): the race that once kept a survivor from removing a control
 * segment. One thread reaps, the other asks, many times. */
typedef struct {
    pid_t pid;
    atomic_int done;
} reaper_t;

static void *reap(void *arg)
{
    reaper_t *r = arg;
    waitpid(r->pid, NULL, 0);
    atomic_store(&r->done, 1);
    return NULL;
}

static void test_pid_alive_while_reaped(void)
{
    int wrong = 0;
    for (int i = 0; i < 300 && !wrong; i++) {
        reaper_t r = {.pid = fork()};
        if (r.pid == 0) _exit(0);
        if (r.pid < 0) {
            CHECK(0, "fork: %s", strerror(errno));
            return;
        }
        siginfo_t si;
        waitid(P_PID, (id_t)r.pid, &si, WEXITED | WNOWAIT); /* a zombie now */
        pthread_t t;
        pthread_create(&t, NULL, reap, &r);
        for (int k = 0; k < 100000 && !atomic_load(&r.done); k++)
            wrong += agmm_seg_pid_alive(r.pid);
        wrong += agmm_seg_pid_alive(r.pid);
        pthread_join(t, NULL);
    }
    CHECK(!wrong, "an exited child seen alive %d time(s) while reaped", wrong);
}

/* A rank that dies while the others wait for the last one: the waiting
 * rank fails at once (not at its timeout), naming the dead rank. */
static void test_death_while_forming(void)
{
    char job[64], ctl[AGMM_SEG_NAME_MAX];
    snprintf(job, sizeof job, "unit-form-%ld", (long)getpid());
    agmm_seg_name(ctl, job, 0, "ctl");
    pid_t kid[2];
    for (int i = 0; i < 2; i++) {
        kid[i] = fork();
        if (kid[i] == 0) {
            agmm_join_opts_t o = {
                .rank = i, .size = 3, .job = job, .timeout_s = 60};
            agmm_world_t *w;
            agmm_status_t st = agmm_world_join(&o, &w);
            _exit(st == AGMM_ERR_ABORTED &&
                          strstr(agmm_last_error(),
                                 "ended before every rank had joined")
                      ? 3
                      : 4);
        }
    }
    /* Both children have taken their slots (rank 2 never comes). */
    int joined = 0;
    for (int t = 0; t < 3000 && joined < 2; t++) {
        agmm_seg_t s;
        int missing;
        joined = 0;
        if (agmm_seg_open(ctl, sizeof(agmm_join_hdr_t), &s, &missing) ==
            AGMM_OK) {
            agmm_join_hdr_t *h = s.addr;
            if (agmm_join_hdr_valid(h, s.bytes))
                joined = atomic_load(&h->joined);
            agmm_seg_unmap(&s);
        }
        if (joined < 2) usleep(10000);
    }
    CHECK(joined == 2, "both children joined (%d)", joined);
    kill(kid[1], SIGKILL);
    int st0 = 0, st1 = 0;
    waitpid(kid[1], &st1, 0);
    waitpid(kid[0], &st0, 0);
    CHECK(WIFSIGNALED(st1), "rank 1 killed");
    CHECK(WIFEXITED(st0) && WEXITSTATUS(st0) == 3,
          "rank 0 failed naming the dead rank (status %d)", st0);
    CHECK(!seg_exists(ctl), "control segment removed by the survivor");
}

int main(void)
{
    test_pid_alive_while_reaped();
    test_death_while_forming();
    test_join_args();
    test_from_env();
    test_one_rank();
    test_segments();
    CHECK_DONE("test_join");
}
