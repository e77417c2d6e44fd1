/* The shared-memory link emulator: a put becomes visible to the peer no
 * earlier than its modelled arrival (bytes * 8 / rate + latency after it was
 * posted, queued behind earlier puts on the same link), its data is intact,
 * and quiet returns only after delivery. Only lower bounds on time are
 * asserted: the machine may be slow, never faster than the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "check.h"
#include "common/log.h"
#include "common/util.h"
#include "transport/transport.h"

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
        agmm_wait_what_t what = {"test put", 0, 0};
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

int main(void)
{
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
