/* The process's worker threads (pool.h).
 *
 * Ownership: `g` is the process's. Its lock is held by the thread whose
 * round uses the pool, from the task's hand-out to the last thread's
 * return; under it that thread alone grows the slots and writes the task
 * (g.fn, g.arg, each slot's cpu_want and spin). A pool thread reads its
 * slot and the task only between its acquire of a new `go` and its
 * release decrement of `left`, so the caller's writes of the next round
 * (after it saw `left` reach 0) never overlap its reads.
 *
 * Memory order: caller: task fields, then `go` raised (seq_cst, a release
 * too) per thread; thread: `go` read (acquire), the task run, `left`
 * decremented (seq_cst read-modify-write, a release too); caller: `left`
 * read as 0 (acquire), so everything the threads wrote is visible to it
 * after agmm_pool_run returns, as after pthread_join. The sleep flags make
 * a Dekker pair with those stores, as the signals' sleepers do
 * (transport/signal.c): the sleeper stores its flag, then re-reads the
 * word; the waker stores the word, then reads the flag, all seq_cst, so
 * one of the two sees the other's store, and FUTEX_WAIT sleeps only
 * while the word still holds the value read. */
#include "world/pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/util.h"
#include "place/place.h"

/* How long a waiting thread spins before it sleeps in the kernel. */
#define SPIN_NS 50000ull

typedef struct {
    /* Raised by the caller to hand this thread a task; own line. */
    _Alignas(AGMM_CACHE_LINE) _Atomic uint32_t go;
    _Atomic uint32_t sleeping; /* the thread waits in futex(2) on go */
    int index;                 /* the worker index it runs: 1, 2, ... */
    int cpu;                   /* pinned to, -1: as inherited; own */
    int cpu_want;              /* the task's (caller, before go) */
    int spin;                  /* the task's (caller, before go) */
    pthread_t thread;
} slot_t;

static struct {
    pthread_mutex_t lock;
    slot_t **slots; /* slots[i - 1]: thread i; a slot never moves */
    int nslots, cap;
    agmm_pool_fn fn;
    void *arg;
    /* Threads of the task still running; own line. */
    _Alignas(AGMM_CACHE_LINE) _Atomic uint32_t left;
    _Atomic uint32_t caller_sleeping;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void futex(_Atomic uint32_t *word, int op, uint32_t val)
{
    /* Private: the pool is one process's. */
    syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

/* Wait until *word != old (acquire): spin first if `spin`, then sleep. */
static uint32_t wait_change(_Atomic uint32_t *word, uint32_t old,
                            _Atomic uint32_t *sleeping, int spin)
{
    uint64_t start = spin ? agmm_now_ns() : 0;
    for (unsigned iter = 0;; iter++) {
        uint32_t v = atomic_load_explicit(word, memory_order_acquire);
        if (v != old) return v;
        if (spin && ((iter & 63) != 0 || agmm_now_ns() - start < SPIN_NS)) {
            agmm_cpu_relax();
            continue;
        }
        atomic_store_explicit(sleeping, 1, memory_order_seq_cst);
        if (atomic_load_explicit(word, memory_order_seq_cst) == old)
            futex(word, FUTEX_WAIT, old);
        atomic_store_explicit(sleeping, 0, memory_order_relaxed);
    }
}

static void wake_if_sleeping(_Atomic uint32_t *word, _Atomic uint32_t *sleeping)
{
    if (atomic_load_explicit(sleeping, memory_order_seq_cst))
        futex(word, FUTEX_WAKE, 1);
}

static void pin(slot_t *s)
{
    if (s->cpu_want < 0 || s->cpu_want == s->cpu) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s->cpu_want, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0)
        s->cpu = s->cpu_want;
}

static void *thread_main(void *arg)
{
    slot_t *s = arg;
    uint32_t seen = 0;
    int spin = 0;
    for (;;) {
        seen = wait_change(&s->go, seen, &s->sleeping, spin);
        spin = s->spin; /* for the wait after this task */
        pin(s);
        g.fn(g.arg, s->index);
        if (atomic_fetch_sub_explicit(&g.left, 1, memory_order_seq_cst) == 1)
            wake_if_sleeping(&g.left, &g.caller_sleeping);
    }
    return NULL;
}

/* A child of fork(2) has none of the threads: it starts with no pool (the
 * parent's lock may have been held by a thread that does not exist here).
 * The slots' memory is the parent's copy, left alone. */
static void child_after_fork(void)
{
    g.slots = NULL;
    g.nslots = g.cap = 0;
    atomic_store_explicit(&g.left, 0, memory_order_relaxed);
    atomic_store_explicit(&g.caller_sleeping, 0, memory_order_relaxed);
    pthread_mutex_init(&g.lock, NULL);
}

static void register_fork(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* Threads 1..want-1 exist (lock held); 0 if one could not be made. */
static int grow(int want)
{
    if (want - 1 > g.cap) {
        int cap = AGMM_MAX(want - 1, 2 * g.cap);
        slot_t **s = realloc(g.slots, sizeof *s * (size_t)cap);
        if (!s) return 0;
        g.slots = s;
        g.cap = cap;
    }
    while (g.nslots < want - 1) {
        int i = g.nslots + 1;
        slot_t *s = agmm_alloc(sizeof *s);
        if (!s) return 0;
        s->index = i;
        s->cpu = agmm_bind_worker_cpu(i);
        s->cpu_want = s->cpu;
        pthread_attr_t attr;
        int attr_ok = pthread_attr_init(&attr) == 0;
        if (attr_ok) agmm_bind_worker_attr(&attr, i);
        int rc =
            pthread_create(&s->thread, attr_ok ? &attr : NULL, thread_main, s);
        if (attr_ok) pthread_attr_destroy(&attr);
        if (rc != 0) {
            agmm_free(s);
            return 0;
        }
        char name[16]; /* the kernel's limit, with the NUL */
        snprintf(name, sizeof name, "agmm-w%d", i % 100000000);
        pthread_setname_np(s->thread, name);
        g.slots[g.nslots++] = s;
    }
    return 1;
}

int agmm_pool_run(int n, agmm_pool_fn fn, void *arg, int spin)
{
    if (n <= 1) {
        if (n == 1) fn(arg, 0);
        return 1;
    }
    pthread_once(&g_once, register_fork);
    if (pthread_mutex_trylock(&g.lock) != 0) return 0;
    if (!grow(n)) {
        pthread_mutex_unlock(&g.lock);
        return 0;
    }
    g.fn = fn;
    g.arg = arg;
    atomic_store_explicit(&g.left, (uint32_t)(n - 1), memory_order_relaxed);
    for (int i = 1; i < n; i++) {
        slot_t *s = g.slots[i - 1];
        s->cpu_want = agmm_bind_worker_cpu(i);
        s->spin = spin;
        uint32_t go = atomic_load_explicit(&s->go, memory_order_relaxed);
        atomic_store_explicit(&s->go, go + 1, memory_order_seq_cst);
        wake_if_sleeping(&s->go, &s->sleeping);
    }
    fn(arg, 0);
    for (uint32_t v;
         (v = atomic_load_explicit(&g.left, memory_order_acquire)) != 0;)
        wait_change(&g.left, v, &g.caller_sleeping, spin);
    pthread_mutex_unlock(&g.lock);
    return 1;
}

int agmm_pool_threads(void)
{
    pthread_mutex_lock(&g.lock);
    int n = g.nslots;
    pthread_mutex_unlock(&g.lock);
    return n;
}
