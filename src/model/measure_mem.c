/* The copy and reduce rates of agmm_model_measure (measure.h), timed as a
 * round on shared memory moves a partial tile: the putter memcpys the tile
 * from its own buffer (hot: its GEMM just wrote it) into the owner's
 * window, the owner then sums it into its C (agmm_rs_reduce,
 * src/ops/gemm_rs/tiles.c: c[i] += u[i] in fp32, the same loop here so the
 * compiler treats both alike). The tile the owner reads was written by
 * another process, on another core when there are two: its lines come from
 * that core's cache, not the owner's, and the putter's stores into the
 * window must first take the lines the owner read in the round before.
 * Timing a copy and a sum over buffers hot in the timing thread's own cache
 * (as before) measured neither, and the model's gemm-rs and gemm-ar rounds
 * on shared memory came out 12-55% fast.
 *
 * So, with two CPUs in this thread's affinity mask: two threads, each
 * pinned to one of them (the first two of the mask), alternate strictly
 * over one window-sized buffer: the putter copies its source into the
 * window (timed: copy_gbs) and publishes the iteration; the owner sums the
 * window into its own C (timed: reduce_gbs) and acknowledges it; the
 * putter copies the next only after that. Each keeps its best timed
 * iteration (the first is untimed). With one CPU the calling thread does
 * both in turn: every rank then shares that core, and its caches, in a
 * real round too, so the tile is read from where the copy left it (the
 * same fallback, less faithful, when a thread cannot start). Evicting the last
 * level cache between them instead would need more than the measurement's
 * memory cap (this host's L3: 300 MiB) and model no round that runs here.
 *
 * Threads: the caller starts both and joins both before returning; the
 * two share the buffers and two counters, `put` (putter to owner: the
 * iteration now in the window, release/acquire orders the window's bytes
 * before it) and `ack` (owner to putter: the iteration summed, release/
 * acquire orders the owner's reads before the next copy's writes). Each
 * writes its own best time, which the caller reads after the join. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "model/measure.h"

enum { MIN_ITERS = 3, MAX_ITERS = 200, STOP = INT_MIN };

typedef struct pair {
    float *src, *win, *c;    /* putter's source, the window, owner's C */
    size_t count;            /* floats in each */
    double end;              /* no iteration starts past it after MIN_ITERS */
    atomic_int put;          /* the iteration in the window, STOP: done */
    atomic_int ack;          /* the iteration summed */
    double copy_s, reduce_s; /* best seconds, each by its thread */
} pair_t;

/* Until *x != old (want 0) or == old (want 1); yields now and then (the
 * host may be shared). Returns *x. */
static int wait_for(atomic_int *x, int old, int want)
{
    int v;
    for (unsigned spins = 1;
         ((v = atomic_load_explicit(x, memory_order_acquire)) == old) != want;
         spins++)
        if (spins % 64 == 0) sched_yield();
    return v;
}

static void sum_into(float *c, const float *u, size_t count)
{
    for (size_t i = 0; i < count; i++)
        c[i] += u[i];
}

static void *putter(void *arg)
{
    pair_t *q = arg;
    for (size_t j = 0; j < q->count; j++) /* as its GEMM wrote it */
        q->src[j] = 1.0f;
    double best = INFINITY;
    for (int i = 0;; i++) {
        (void)wait_for(&q->ack, i - 1, 1); /* the window read */
        if (i >= MAX_ITERS || (i >= MIN_ITERS && agmm_now() > q->end)) break;
        double t0 = agmm_now();
        memcpy(q->win, q->src, q->count * sizeof(float));
        double s = agmm_now() - t0;
        if (i > 0 && s < best) best = s;
        atomic_store_explicit(&q->put, i, memory_order_release);
    }
    q->copy_s = best;
    atomic_store_explicit(&q->put, STOP, memory_order_release);
    return NULL;
}

static void *owner(void *arg)
{
    pair_t *q = arg;
    double best = INFINITY;
    for (int last = -1;;) {
        int i = wait_for(&q->put, last, 0);
        if (i == STOP) break;
        last = i;
        double t0 = agmm_now();
        sum_into(q->c, q->win, q->count);
        double s = agmm_now() - t0;
        if (i > 0 && s < best) best = s;
        atomic_store_explicit(&q->ack, i, memory_order_release);
    }
    q->reduce_s = best;
    return NULL;
}

/* The first two CPUs this thread may use; 0 when it may use fewer. */
static int two_cpus(int cpu[2])
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    int n = 0;
    for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
        if (CPU_ISSET(i, &set)) cpu[n++] = i;
    return n == 2;
}

static int start_pinned(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    if (rc == 0) rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

/* Both threads on two CPUs; 0 when both ran. */
static int run_pair(pair_t *q, const int cpu[2])
{
    pthread_t own, put;
    if (start_pinned(&own, cpu[1], owner, q) != 0) return -1;
    if (start_pinned(&put, cpu[0], putter, q) != 0) {
        atomic_store_explicit(&q->put, STOP, memory_order_release);
        pthread_join(own, NULL);
        return -1;
    }
    pthread_join(put, NULL);
    pthread_join(own, NULL);
    return 0;
}

/* The calling thread as putter and owner in turn. */
static void run_alone(pair_t *q)
{
    for (size_t j = 0; j < q->count; j++)
        q->src[j] = 1.0f;
    q->copy_s = q->reduce_s = INFINITY;
    for (int i = 0; i < MAX_ITERS && (i < MIN_ITERS || agmm_now() <= q->end);
         i++) {
        double t0 = agmm_now();
        memcpy(q->win, q->src, q->count * sizeof(float));
        double t1 = agmm_now();
        sum_into(q->c, q->win, q->count);
        double t2 = agmm_now();
        if (i > 0 && t1 - t0 < q->copy_s) q->copy_s = t1 - t0;
        if (i > 0 && t2 - t1 < q->reduce_s) q->reduce_s = t2 - t1;
    }
}

agmm_status_t agmm_model_measure_memory(size_t bytes, double slice,
                                        double *copy_gbs, double *reduce_gbs,
                                        int *cpus)
{
    pair_t q;
    memset(&q, 0, sizeof q);
    q.count = AGMM_MAX(bytes / sizeof(float), (size_t)1024);
    q.src = agmm_alloc(q.count * sizeof(float));
    q.win = agmm_alloc(q.count * sizeof(float));
    q.c = agmm_alloc(q.count * sizeof(float));
    if (!q.src || !q.win || !q.c) {
        agmm_free(q.src);
        agmm_free(q.win);
        agmm_free(q.c);
        return agmm_error(AGMM_ERR_NO_MEMORY, "model: out of memory");
    }
    memset(q.win, 0, q.count * sizeof(float)); /* every page touched */
    memset(q.c, 0, q.count * sizeof(float));
    atomic_init(&q.put, -1);
    atomic_init(&q.ack, -1);
    q.end = agmm_now() + slice;
    int cpu[2];
    *cpus = two_cpus(cpu) && run_pair(&q, cpu) == 0 ? 2 : 1;
    if (*cpus == 1) run_alone(&q);
    agmm_free(q.src);
    agmm_free(q.win);
    agmm_free(q.c);
    double b = (double)(q.count * sizeof(float));
    *copy_gbs = b / AGMM_MAX(q.copy_s, 1e-9) * 1e-9;
    *reduce_gbs = b / AGMM_MAX(q.reduce_s, 1e-9) * 1e-9;
    return AGMM_OK;
}
