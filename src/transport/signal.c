/* Signals: publish and wait, shared by every backend. The signal waited on
 * is always a cell in this rank's own memory (a peer process or a progress
 * thread raises it).
 *
 * A cell is the first 16 bytes of its own cache line:
 *   offset 0: _Atomic uint64_t epoch    (one writer; only ever raised)
 *   offset 8: _Atomic uint32_t sleepers (waiters blocked in the kernel)
 *
 * Waiting spins briefly, then yields, then blocks in futex(2) on the low 32
 * bits of the epoch (little-endian). The publisher makes a futex wake call
 * only when someone sleeps. No wake-up is lost: the waiter increments
 * `sleepers` and then re-reads the epoch, the publisher stores the epoch and
 * then reads `sleepers`, both with sequentially consistent fences between,
 * so at least one of them sees the other's write; and FUTEX_WAIT itself
 * refuses to sleep if the word no longer holds the value the waiter read. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/abort.h"
#include "common/log.h"
#include "common/util.h"
#include "transport/transport.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the futex word is the low half of the 64-bit epoch: little-endian only"
#endif

static _Atomic uint32_t *sleepers_of(const _Atomic uint64_t *sig)
{
    return (_Atomic uint32_t *)(void *)((char *)(uintptr_t)sig + 8);
}

static long futex(const void *addr, int op, uint32_t val,
                  const struct timespec *timeout)
{
    /* Not FUTEX_PRIVATE: cells live in memory shared between processes. */
    return syscall(SYS_futex, addr, op, val, timeout, NULL, 0);
}

/* Wake-up system calls made by this process (a test hook: a publisher
 * that wakes nobody while a waiter sleeps is the bug it catches). */
static _Atomic uint64_t wakes;

uint64_t agmm_signal_wake_count(void)
{
    return atomic_load_explicit(&wakes, memory_order_relaxed);
}

void agmm_signal_publish(_Atomic uint64_t *sig, uint64_t value)
{
    /* Release: whatever this thread wrote before (the tile) is visible to a
     * waiter whose acquire load returns `value`. */
    atomic_store_explicit(sig, value, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(sleepers_of(sig), memory_order_relaxed) > 0) {
        atomic_fetch_add_explicit(&wakes, 1, memory_order_relaxed);
        futex(sig, FUTEX_WAKE, INT_MAX, NULL);
    }
}

/* Back-off schedule: spin with the CPU's pause hint for 20 us, where a peer
 * on another core is usually caught; then yield the core until 1 ms (ranks
 * may oversubscribe the cores, and the peer we wait for may need this one);
 * then sleep in the kernel until woken, at most 20 ms at a time so the abort
 * flag and the deadline are looked at. With more ranks than cores, skip the
 * spinning and most of the yielding. */
#define SPIN_NS          20000ull
#define YIELD_NS         1000000ull
#define YIELD_OVERSUB_NS 50000ull
#define SLEEP_MAX_NS     20000000ull

/* "tile 3 from rank 1", "shard from rank 2", "barrier 7 of all ranks",
 * "tile 3 from rank 0 (forwarded by rank 2)". */
static void describe(const agmm_wait_what_t *what, char *buf, size_t len)
{
    if (what->via_set && what->peer >= 0 && what->index >= 0)
        snprintf(buf, len, "%s %lld from rank %d (forwarded by rank %d)",
                 what->kind, (long long)what->index, what->peer, what->via);
    else if (what->peer < 0)
        snprintf(buf, len, "%s %lld of all ranks", what->kind,
                 (long long)what->index);
    else if (what->index < 0)
        snprintf(buf, len, "%s from rank %d", what->kind, what->peer);
    else
        snprintf(buf, len, "%s %lld from rank %d", what->kind,
                 (long long)what->index, what->peer);
}

/* "expected epoch >= E, observed S", or for a rows cell the rounds and
 * the rows it holds. */
static void expected(const agmm_wait_what_t *what, uint64_t at_least,
                     uint64_t seen, char *buf, size_t len)
{
    if (what->rows_cell)
        snprintf(buf, len,
                 "expected round >= %llu, observed round %llu of %llu rows",
                 (unsigned long long)(at_least >> 32),
                 (unsigned long long)(seen >> 32),
                 (unsigned long long)(seen & 0xffffffffu));
    else
        snprintf(buf, len, "expected epoch >= %llu, observed %llu",
                 (unsigned long long)at_least, (unsigned long long)seen);
}

/* Block until the epoch changes from `seen`, a wake, or `ns` pass. */
static void sleep_on(const _Atomic uint64_t *sig, uint64_t seen, uint64_t ns)
{
    _Atomic uint32_t *sleepers = sleepers_of(sig);
    atomic_fetch_add_explicit(sleepers, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(sig, memory_order_relaxed) == seen) {
        struct timespec ts = {(time_t)(ns / 1000000000ull),
                              (long)(ns % 1000000000ull)};
        futex(sig, FUTEX_WAIT, (uint32_t)seen, &ts);
    }
    atomic_fetch_sub_explicit(sleepers, 1, memory_order_relaxed);
}

agmm_status_t agmm_signal_wait(agmm_world_t *w, const _Atomic uint64_t *sig,
                               uint64_t at_least, double deadline,
                               const agmm_wait_what_t *what)
{
    return agmm_signal_wait_late(w, sig, at_least, deadline, what, NULL);
}

agmm_status_t agmm_signal_wait_late(agmm_world_t *w,
                                    const _Atomic uint64_t *sig,
                                    uint64_t at_least, double deadline,
                                    const agmm_wait_what_t *what,
                                    agmm_late_fn late_fn)
{
    uint64_t seen = atomic_load_explicit(sig, memory_order_acquire);
    if (seen >= at_least) return AGMM_OK;

    uint64_t start = agmm_now_ns();
    uint64_t spin_ns = w->oversubscribed ? 0 : SPIN_NS;
    uint64_t yield_ns = w->oversubscribed ? YIELD_OVERSUB_NS : YIELD_NS;
    unsigned iter = 0;
    for (;;) {
        seen = atomic_load_explicit(sig, memory_order_acquire);
        if (seen >= at_least) return AGMM_OK;
        if ((++iter & 63) != 0 && agmm_now_ns() - start < spin_ns) {
            agmm_cpu_relax();
            continue;
        }
        const char *reason = agmm_world_aborted(w);
        if (reason) {
            char waited[96], exp[96];
            describe(what, waited, sizeof waited);
            expected(what, at_least, seen, exp, sizeof exp);
            return agmm_error_quiet(AGMM_ERR_ABORTED,
                                    "aborted while waiting for %s (%s): %s",
                                    waited, exp, reason);
        }
        uint64_t now = agmm_now_ns();
        double left = deadline - (double)now * 1e-9;
        if (left < 0) {
            char waited[96], late[200] = "", self[100] = "", exp[96];
            /* room for all four parts at their longest, and the words */
            char msg[sizeof waited + sizeof late + sizeof self + sizeof exp +
                     32];
            describe(what, waited, sizeof waited);
            expected(what, at_least, seen, exp, sizeof exp);
            if (late_fn) late_fn(w, late, sizeof late);
            if (w->ops->stall_note) w->ops->stall_note(w, self, sizeof self);
            snprintf(msg, sizeof msg, "timed out waiting for %s%s (%s)%s",
                     waited, late, exp, self);
            agmm_error(AGMM_ERR_TIMEOUT, "%s", msg);
            char reason_buf[AGMM_ABORT_REASON_MAX];
            snprintf(reason_buf, sizeof reason_buf, "rank %d %.360s", w->rank,
                     msg);
            agmm_world_abort_with(w, reason_buf);
            return AGMM_ERR_TIMEOUT;
        }
        if (now - start < spin_ns) {
            agmm_cpu_relax();
        } else if (now - start < yield_ns) {
            sched_yield();
        } else {
            uint64_t ns = (uint64_t)(left * 1e9) + 1000;
            sleep_on(sig, seen, ns < SLEEP_MAX_NS ? ns : SLEEP_MAX_NS);
        }
    }
}
