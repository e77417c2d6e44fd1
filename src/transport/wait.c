/* Signal waits shared by every backend: the signal is always a cell in this
 * rank's own memory (a peer or a progress thread raises it). */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "transport/transport.h"

double agmm_deadline(const agmm_world_t *w, double timeout_s)
{
    if (timeout_s <= 0) timeout_s = w->timeout_s > 0 ? w->timeout_s : 60.0;
    return agmm_now() + timeout_s;
}

/* Back-off schedule: spin (with the CPU's pause hint) for a few microseconds,
 * which is where a peer on another core is usually caught; then yield the
 * core (ranks may oversubscribe the cores, and the peer we wait for may need
 * this one); after a millisecond, sleep in 20 us steps. */
#define SPIN_NS 20000ull
#define YIELD_NS 1000000ull
#define SLEEP_NS 20000L

/* "tile 3 from rank 1", "shard from rank 2", "barrier 7 of all ranks". */
static void describe(const agmm_wait_what_t *what, char *buf, size_t len)
{
    if (what->peer < 0)
        snprintf(buf, len, "%s %lld of all ranks", what->kind,
                 (long long)what->index);
    else if (what->index < 0)
        snprintf(buf, len, "%s from rank %d", what->kind, what->peer);
    else
        snprintf(buf, len, "%s %lld from rank %d", what->kind,
                 (long long)what->index, what->peer);
}

agmm_status_t agmm_signal_wait(agmm_world_t *w, const _Atomic uint64_t *sig,
                               uint64_t at_least, double deadline,
                               const agmm_wait_what_t *what)
{
    uint64_t seen = atomic_load_explicit(sig, memory_order_acquire);
    if (seen >= at_least) return AGMM_OK;

    uint64_t start = agmm_now_ns();
    unsigned iter = 0;
    for (;;) {
        if (w->ops->progress) w->ops->progress(w);
        seen = atomic_load_explicit(sig, memory_order_acquire);
        if (seen >= at_least) return AGMM_OK;
        if ((++iter & 63) != 0 && agmm_now_ns() - start < SPIN_NS) {
            agmm_cpu_relax();
            continue;
        }
        const char *reason = w->ops->aborted(w);
        if (reason) {
            char waited[96];
            describe(what, waited, sizeof waited);
            return agmm_error_quiet(AGMM_ERR_ABORTED,
                                    "aborted while waiting for %s (expected "
                                    "epoch >= %llu, observed %llu): %s",
                                    waited, (unsigned long long)at_least,
                                    (unsigned long long)seen, reason);
        }
        uint64_t now = agmm_now_ns();
        if ((double)now * 1e-9 > deadline) {
            char waited[96], msg[300];
            describe(what, waited, sizeof waited);
            snprintf(msg, sizeof msg,
                     "timed out waiting for %s (expected epoch >= %llu, "
                     "observed %llu)",
                     waited, (unsigned long long)at_least,
                     (unsigned long long)seen);
            agmm_error(AGMM_ERR_TIMEOUT, "%s", msg);
            char reason[340];
            snprintf(reason, sizeof reason, "rank %d %s", w->rank, msg);
            w->ops->abort(w, reason);
            return AGMM_ERR_TIMEOUT;
        }
        if (now - start < SPIN_NS) {
            agmm_cpu_relax();
        } else if (now - start < YIELD_NS) {
            sched_yield();
        } else {
            struct timespec ts = {0, SLEEP_NS};
            nanosleep(&ts, NULL);
        }
    }
}
