/* The sanitizer build's own check: a rank with a planted bug of each kind
 * the build's sanitizers look for must fail, and the launcher must report
 * it (non-zero exit code). Without this a sanitizer run that silently
 * stopped looking inside the ranks (forked processes, _exit) would pass.
 *
 * usage: sanitizer_canary address|leak|undefined|thread */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "check.h"

static volatile int sink;

static int heap_overflow(agmm_world_t *w, void *arg)
{
    (void)w;
    (void)arg;
    char *p = malloc(16);
    volatile int i = 16;
    p[i] = 1; /* one past the end */
    sink = p[0];
    free(p);
    return 0;
}

static int leak(agmm_world_t *w, void *arg)
{
    (void)w;
    (void)arg;
    void *volatile p = malloc(1000);
    p = NULL;
    sink = p != NULL;
    return 0;
}

static int signed_overflow(agmm_world_t *w, void *arg)
{
    (void)w;
    (void)arg;
    volatile int big = 0x7fffffff;
    sink = big + 1;
    return 0;
}

/* The planted race: both threads write `racy` many times while both are
 * surely running. One unordered pair of writes is enough in theory, yet
 * CI's TSan stage once saw both ranks exit 0 with a single pair (not
 * reproduced in 500 runs here, loaded or idle). The relaxed flag makes the
 * loops overlap in time without ordering them (relaxed atomics give TSan no
 * happens-before). */
static volatile int racy;
static atomic_int racer_started;
static void *racer(void *arg)
{
    (void)arg;
    atomic_store_explicit(&racer_started, 1, memory_order_relaxed);
    for (int i = 0; i < 100000; i++)
        racy++;
    return NULL;
}

static int data_race(agmm_world_t *w, void *arg)
{
    (void)w;
    (void)arg;
    pthread_t t;
    /* No thread, no planted bug: exit 0 so the canary fails, not passes. */
    if (pthread_create(&t, NULL, racer, NULL) != 0) return 0;
    while (!atomic_load_explicit(&racer_started, memory_order_relaxed)) {
    }
    for (int i = 0; i < 100000; i++)
        racy++;
    pthread_join(t, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *kind;
        agmm_rank_main_fn fn;
    } bugs[] = {{"address", heap_overflow},
                {"leak", leak},
                {"undefined", signed_overflow},
                {"thread", data_race}};
    const char *kind = argc > 1 ? argv[1] : "";
    int found = 0;
    for (size_t i = 0; i < sizeof bugs / sizeof bugs[0]; i++) {
        if (strcmp(kind, bugs[i].kind)) continue;
        found = 1;
        agmm_launch_opts_t o = {0};
        o.nranks = 2;
        o.quiet = 1;
        int code = 0;
        agmm_status_t st = agmm_launch(&o, bugs[i].fn, NULL, &code);
        CHECK(st == AGMM_OK, "launch: %s", agmm_status_str(st));
        CHECK(code != 0,
              "a rank with a planted %s bug exited 0: the sanitizer did not "
              "see it",
              kind);
        printf("planted %s bug: the ranks exited with code %d\n", kind, code);
    }
    CHECK(found, "unknown kind '%s' (address, leak, undefined, thread)", kind);
    CHECK_DONE("sanitizer_canary");
}
