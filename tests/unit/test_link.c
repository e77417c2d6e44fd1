/* The shared-memory link emulator: a put becomes visible to the peer no
 * earlier than its modelled arrival (bytes * 8 / rate + latency after it was
 * posted, queued behind earlier puts on the same link), its data is intact,
 * and quiet returns only after delivery. Only lower bounds on time are
 * asserted: the machine may be slow, never faster than the model. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "common/log.h"
#include "common/util.h"
#include "transport/shm/link.h"
#include "transport/transport.h"
#include "world/world_ops.h"

#define GBPS       0.2    /* 0.2 bits per ns: 40 ns per byte */
#define LATENCY_US 3000.0 /* 3 ms */
#define BYTES      (256 * 1024)

static uint64_t wire_ns(size_t bytes)
{
    return (uint64_t)(bytes * 8 / GBPS);
}

typedef struct stamp {
    uint64_t posted_ns; /* when rank 0 posted the first put */
    uint64_t fill;
} stamp_t;

static int rank_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    double gbps = 0, lat = 0;
    CHECK(agmm_world_link_emulated(w, &gbps, &lat) == 1, "link not emulated");
    CHECK(gbps == GBPS && lat == LATENCY_US, "settings %g %g", gbps, lat);
    agmm_win_t data, sig;
    if (w->ops->win_alloc(w, 2 * BYTES, &data) != AGMM_OK ||
        w->ops->win_alloc(w, 3 * AGMM_CACHE_LINE, &sig) != AGMM_OK)
        return 1;
    unsigned char *src = malloc(2 * BYTES);
    if (!src) return 1;
    for (size_t i = 0; i < 2 * BYTES; i++)
        src[i] = (unsigned char)(i * 7 + 1);
    if (agmm_world_barrier(w, 0) != AGMM_OK) return 1;

    if (w->rank == 0) {
        stamp_t s = {agmm_now_ns(), 0};
        memcpy(src, &s, sizeof s);
        /* Two puts and a bare signal on the link to rank 1, back to back. */
        CHECK(w->ops->put_signal(w, &data, 1, 0, src, BYTES, &sig, 0, 1) ==
                  AGMM_OK,
              "put 1");
        CHECK(w->ops->put_signal(w, &data, 1, BYTES, src + BYTES, BYTES, &sig,
                                 AGMM_CACHE_LINE, 1) == AGMM_OK,
              "put 2");
        CHECK(w->ops->signal(w, &sig, 1, 2 * AGMM_CACHE_LINE, 1) == AGMM_OK,
              "signal");
        CHECK(w->ops->quiet(w) == AGMM_OK, "quiet");
        uint64_t quiet_ns = agmm_now_ns() - s.posted_ns;
        CHECK(quiet_ns >= 2 * wire_ns(BYTES) + (uint64_t)(LATENCY_US * 1e3),
              "quiet returned %llu ns after posting, before the model's "
              "delivery",
              (unsigned long long)quiet_ns);
    } else {
        agmm_wait_what_t what = {"test put", 0, 0, 0, 0, 0};
        uint64_t seen[3];
        for (int i = 0; i < 3; i++) {
            CHECK(agmm_signal_wait(
                      w, agmm_win_signal(&sig, (size_t)i * AGMM_CACHE_LINE), 1,
                      agmm_deadline(w, 0), &what) == AGMM_OK,
                  "wait %d", i);
            seen[i] = agmm_now_ns();
        }
        stamp_t s;
        memcpy(&s, data.local, sizeof s);
        uint64_t lat_ns = (uint64_t)(LATENCY_US * 1e3);
        uint64_t want[3] = {wire_ns(BYTES) + lat_ns,
                            2 * wire_ns(BYTES) + lat_ns,
                            2 * wire_ns(BYTES) + lat_ns};
        for (int i = 0; i < 3; i++)
            CHECK(seen[i] - s.posted_ns >= want[i],
                  "message %d visible %llu ns after posting, model says "
                  ">= %llu",
                  i, (unsigned long long)(seen[i] - s.posted_ns),
                  (unsigned long long)want[i]);
        CHECK(memcmp(data.local + sizeof s, src + sizeof s,
                     2 * BYTES - sizeof s) == 0,
              "delivered data differs from the source");
    }
    free(src);
    if (agmm_world_barrier(w, 0) != AGMM_OK) return 1;
    w->ops->win_free(w, &sig);
    w->ops->win_free(w, &data);
    fflush(stderr);
    return check_failed_ ? 1 : 0;
}

/* ------------------------------------- the link alone, in this process */

/* A stand-in world: never aborted until abort() is called. */
static char fake_reason[256];
static const char *fake_aborted(agmm_world_t *w)
{
    (void)w;
    return fake_reason[0] ? fake_reason : NULL;
}
static void fake_abort(agmm_world_t *w, const char *reason)
{
    (void)w;
    if (!fake_reason[0])
        snprintf(fake_reason, sizeof fake_reason, "%s", reason);
}
/* The stand-in's control table: only abort and aborted are reached (the
 * link's drain); it moves no data, so it has no data-plane table. */
static const agmm_world_ops_t fake_ctl = {
    .name = "fake", .abort = fake_abort, .aborted = fake_aborted};

typedef struct cell {
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t value;
    _Atomic uint32_t sleepers; /* signal cell layout (signal.c) */
} cell_t;

#define BIG (4 << 20) /* 168 ms on the wire at 0.2 Gbit/s */

typedef struct two {
    agmm_link_t *l;
    cell_t sig_b;
    _Atomic int a_done;
    long b_messages;
} two_t;

/* Thread B: small signals on link 1, one at a time (each waited for by
 * looking at its cell, not with quiet), until thread A's quiet returned. */
static void *thread_b(void *arg)
{
    two_t *t = arg;
    for (uint64_t n = 1; !atomic_load(&t->a_done) && n < 100000; n++) {
        if (agmm_link_post(t->l, 1, NULL, NULL, 0, &t->sig_b.value, n) !=
            AGMM_OK)
            break;
        t->b_messages++;
        while (atomic_load_explicit(&t->sig_b.value, memory_order_acquire) <
                   n &&
               !atomic_load(&t->a_done))
            sched_yield();
    }
    return NULL;
}

/* Quiet is per thread: thread A's quiet must cover A's own put even while
 * thread B's messages (posted after A's quiet began) are delivered; the
 * drain used to count every thread's messages and returned once as many
 * had been delivered as were posted when it started, i.e. as soon as B's
 * later, faster messages arrived, long before A's large put. */
static void test_quiet_is_per_thread(void)
{
    agmm_world_t w = {.ctl = &fake_ctl, .rank = 0, .size = 1, .timeout_s = 30};
    two_t t = {0};
    cell_t sig_a = {0};
    unsigned char *src = malloc(BIG), *dst = calloc(1, BIG);
    CHECK(src && dst, "memory");
    if (!src || !dst) return;
    for (size_t i = 0; i < BIG; i++)
        src[i] = (unsigned char)(i * 13 + 5);
    CHECK(agmm_link_create(2, GBPS, LATENCY_US, &t.l) == AGMM_OK, "link");
    pthread_t b;
    CHECK(agmm_link_post(t.l, 0, dst, src, BIG, &sig_a.value, 1) == AGMM_OK,
          "big put");
    CHECK(pthread_create(&b, NULL, thread_b, &t) == 0, "thread B");
    CHECK(agmm_link_drain(t.l, &w, agmm_now() + 30) == AGMM_OK, "quiet: %s",
          agmm_last_error());
    CHECK(atomic_load_explicit(&sig_a.value, memory_order_acquire) == 1,
          "thread A's quiet returned before its own put was delivered "
          "(thread B had %ld messages delivered meanwhile)",
          t.b_messages);
    CHECK(memcmp(dst, src, BIG) == 0, "thread A's put is not all there");
    atomic_store(&t.a_done, 1);
    pthread_join(b, NULL);

    agmm_link_destroy(t.l);

    /* A drain that times out aborts the world (peers would otherwise wait
     * for these puts until their own timeout). The deadline has passed
     * already and the put arrives after 1000 s of latency (a link of its
     * own, destroyed with the put undelivered): no timing involved. */
    agmm_link_t *slow = NULL;
    CHECK(agmm_link_create(1, GBPS, 1e9, &slow) == AGMM_OK, "slow link");
    agmm_log_set_quiet(1);
    CHECK(agmm_link_post(slow, 0, dst, src, BIG, &sig_a.value, 2) == AGMM_OK,
          "big put 2");
    CHECK(agmm_link_drain(slow, &w, agmm_now() - 1) == AGMM_ERR_TIMEOUT,
          "drain past its deadline");
    CHECK(strstr(fake_reason, "rank 0 timed out waiting for the emulated link"),
          "drain timeout did not abort the world (reason '%s')", fake_reason);
    agmm_log_set_quiet(0);
    agmm_link_destroy(slow);
    free(src);
    free(dst);
}

int main(void)
{
    test_quiet_is_per_thread();

    agmm_launch_opts_t opts = {0};
    opts.nranks = 2;
    opts.timeout_s = 30;
    opts.link_gbps = GBPS;
    opts.link_latency_us = LATENCY_US;
    int code = -1;
    CHECK(agmm_launch(&opts, rank_main, NULL, &code) == AGMM_OK, "launch");
    CHECK(code == 0, "a rank failed its checks (exit %d)", code);

    /* A bad latency is refused before anything starts. */
    opts.link_latency_us = -1;
    agmm_log_set_quiet(1);
    CHECK(agmm_launch(&opts, rank_main, NULL, &code) == AGMM_ERR_INVALID_ARG,
          "negative latency accepted");
    CHECK_DONE("test_link");
}
