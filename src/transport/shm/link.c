/* The link emulator: see link.h for the model. */
#include "transport/shm/link.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

typedef struct msg {
    struct msg *next;
    uint64_t arrival_ns; /* agmm_now_ns() at which it becomes visible */
    void *dst;
    const void *src;
    size_t bytes;
    _Atomic uint64_t *sig;
    uint64_t value;
    uint64_t owner; /* thread_id() of the thread that posted it */
} msg_t;

typedef struct queue {
    msg_t *head, *tail;
    uint64_t wire_free_ns; /* when the last queued message leaves the wire */
} queue_t;

/* Everything below `lock` is guarded by it. The delivery thread copies a
 * message with the lock released; `copying` names the poster of that
 * message meanwhile, so drain() of a thread waits exactly until none of
 * its own messages is queued or being copied (quiet is per thread: other
 * threads' messages are theirs to wait for). */
struct agmm_link {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a message was posted, or stop */
    pthread_cond_t done; /* a message was delivered */
    pthread_t thread;
    int nlinks;
    double ns_per_byte;
    uint64_t latency_ns;
    int stop;
    uint64_t copying; /* owner of the message being copied, 0: none */
    queue_t *queues;
};

/* A process-wide number per posting thread (never 0, never reused). */
static _Atomic uint64_t next_thread_id = 1;
static _Thread_local uint64_t my_thread_id;

static uint64_t thread_id(void)
{
    if (!my_thread_id)
        my_thread_id =
            atomic_fetch_add_explicit(&next_thread_id, 1, memory_order_relaxed);
    return my_thread_id;
}

/* Messages of `owner` not yet delivered (lock held). */
static uint64_t undelivered(const agmm_link_t *l, uint64_t owner)
{
    uint64_t n = l->copying == owner;
    for (int i = 0; i < l->nlinks; i++)
        for (const msg_t *m = l->queues[i].head; m; m = m->next)
            n += m->owner == owner;
    return n;
}

static void abs_time(uint64_t ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* The queued message with the earliest arrival (heads only: each queue is
 * in arrival order), or -1. */
static int earliest(const agmm_link_t *l)
{
    int best = -1;
    for (int i = 0; i < l->nlinks; i++)
        if (l->queues[i].head &&
            (best < 0 ||
             l->queues[i].head->arrival_ns < l->queues[best].head->arrival_ns))
            best = i;
    return best;
}

static void *delivery_main(void *arg)
{
    agmm_link_t *l = arg;
    /* Wake up at the arrival time, not up to 50 us after it. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    pthread_mutex_lock(&l->lock);
    while (!l->stop) {
        int q = earliest(l);
        if (q < 0) {
            pthread_cond_wait(&l->work, &l->lock);
            continue;
        }
        msg_t *m = l->queues[q].head;
        if (agmm_now_ns() < m->arrival_ns) {
            struct timespec ts;
            abs_time(m->arrival_ns, &ts);
            pthread_cond_timedwait(&l->work, &l->lock, &ts);
            continue; /* an earlier message may have been posted meanwhile */
        }
        l->queues[q].head = m->next;
        if (!m->next) l->queues[q].tail = NULL;
        l->copying = m->owner;
        pthread_mutex_unlock(&l->lock);
        if (m->bytes) memcpy(m->dst, m->src, m->bytes);
        /* Release: the copy above is visible to whoever acquires value
         * (and a peer sleeping on the cell is woken). */
        agmm_signal_publish(m->sig, m->value);
        free(m);
        pthread_mutex_lock(&l->lock);
        l->copying = 0;
        pthread_cond_broadcast(&l->done);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

static int init_cond(pthread_cond_t *c)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0) return -1;
    int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (rc == 0) rc = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

agmm_status_t agmm_link_create(int nlinks, double gbps, double latency_us,
                               agmm_link_t **out)
{
    *out = NULL;
    if (nlinks < 1 || !(gbps > 0) || !(latency_us >= 0))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "link emulator: %d links of %g Gbit/s, %g us "
                          "(allowed: >= 1 link, > 0 Gbit/s, >= 0 us)",
                          nlinks, gbps, latency_us);
    agmm_link_t *l = calloc(1, sizeof *l);
    if (!l)
        return agmm_error(AGMM_ERR_NO_MEMORY, "link emulator: out of memory");
    l->queues = calloc((size_t)nlinks, sizeof *l->queues);
    l->nlinks = nlinks;
    l->ns_per_byte = 8.0 / gbps; /* gbps bits per ns */
    l->latency_ns = (uint64_t)(latency_us * 1e3 + 0.5);
    if (!l->queues || pthread_mutex_init(&l->lock, NULL) != 0) {
        free(l->queues);
        free(l);
        return agmm_error(AGMM_ERR_NO_MEMORY, "link emulator: out of memory");
    }
    if (init_cond(&l->work) != 0 || init_cond(&l->done) != 0 ||
        pthread_create(&l->thread, NULL, delivery_main, l) != 0) {
        free(l->queues);
        free(l);
        return agmm_error(AGMM_ERR_SYSTEM,
                          "link emulator: could not start the delivery thread");
    }
    *out = l;
    return AGMM_OK;
}

agmm_status_t agmm_link_post(agmm_link_t *l, int link, void *dst,
                             const void *src, size_t bytes,
                             _Atomic uint64_t *sig, uint64_t value)
{
    msg_t *m = malloc(sizeof *m);
    if (!m)
        return agmm_error(AGMM_ERR_NO_MEMORY, "link emulator: out of memory");
    *m = (msg_t){NULL, 0, dst, src, bytes, sig, value, thread_id()};
    pthread_mutex_lock(&l->lock);
    queue_t *q = &l->queues[link];
    uint64_t now = agmm_now_ns();
    uint64_t start = q->wire_free_ns > now ? q->wire_free_ns : now;
    q->wire_free_ns = start + (uint64_t)((double)bytes * l->ns_per_byte + 0.5);
    m->arrival_ns = q->wire_free_ns + l->latency_ns;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    pthread_cond_signal(&l->work);
    pthread_mutex_unlock(&l->lock);
    return AGMM_OK;
}

agmm_status_t agmm_link_drain(agmm_link_t *l, agmm_world_t *w, double deadline)
{
    agmm_status_t st = AGMM_OK;
    uint64_t me = thread_id(), left = 0;
    pthread_mutex_lock(&l->lock);
    while ((left = undelivered(l, me)) > 0) {
        /* Re-check abort and deadline every millisecond. */
        struct timespec ts;
        abs_time(agmm_now_ns() + 1000000ull, &ts);
        pthread_cond_timedwait(&l->done, &l->lock, &ts);
        if ((left = undelivered(l, me)) == 0) break;
        const char *reason = agmm_world_aborted(w);
        if (reason) {
            st = agmm_error_quiet(AGMM_ERR_ABORTED,
                                  "aborted while the emulated link delivered "
                                  "%llu queued puts: %s",
                                  (unsigned long long)left, reason);
            break;
        }
        if (agmm_now() > deadline) {
            st = AGMM_ERR_TIMEOUT;
            break;
        }
    }
    pthread_mutex_unlock(&l->lock);
    if (st == AGMM_ERR_TIMEOUT) {
        /* Like every timeout: say it once and abort the world, so peers
         * waiting for these puts are told at once. */
        char msg[160], reason[200];
        snprintf(msg, sizeof msg,
                 "timed out waiting for the emulated link to deliver %llu "
                 "queued puts",
                 (unsigned long long)left);
        agmm_error(AGMM_ERR_TIMEOUT, "%s", msg);
        snprintf(reason, sizeof reason, "rank %d %s", w->rank, msg);
        agmm_world_abort_with(w, reason);
    }
    return st;
}

void agmm_link_destroy(agmm_link_t *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->lock);
    l->stop = 1;
    pthread_cond_signal(&l->work);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    for (int i = 0; i < l->nlinks; i++)
        for (msg_t *m = l->queues[i].head, *n; m; m = n) {
            n = m->next;
            free(m);
        }
    pthread_cond_destroy(&l->work);
    pthread_cond_destroy(&l->done);
    pthread_mutex_destroy(&l->lock);
    free(l->queues);
    free(l);
}
