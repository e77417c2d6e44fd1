/* Joined worlds: `size` processes started by anyone on one host (a shell
 * loop, torchrun, a serving engine) make one world by name. The control
 * segment's layout and garbage rules are in join.h; this file is the
 * rendezvous (agmm_world_join), joined.c the world it makes.
 *
 * Rendezvous (agmm_world_join), each rank:
 *   1. remove this user's leftovers of the job whose processes are gone
 *      (agmm_cleanup), then create the control segment (O_EXCL); the one
 *      that creates it initialises it and publishes the magic;
 *   2. or open the existing one (owner and mode checked) and judge it:
 *      garbage (no live holder: a crashed run's) -> remove it, back to 1;
 *      another size -> AGMM_ERR_MISMATCH here and, through the abort cell,
 *      on every rank already waiting; formed, aborted, or this rank's slot
 *      taken by a live process -> AGMM_ERR_BAD_STATE naming that pid;
 *   3. take the slot (CAS pid 0 -> own pid, state JOINED), count it, and
 *      wait until every rank has, polling in short slices: the abort cell
 *      (someone failed), the joined ranks' processes (one died: abort
 *      naming it) and the deadline (abort naming the ranks that never
 *      came). The first rank to fail records the reason; the others return
 *      it with the status in hdr.fail_status.
 *
 * A failed rendezvous after step 3 leaves as agmm_world_destroy does
 * (agmm_join_leave, joined.c): mark the slot LEFT, then, if no other slot
 * holds the segment, remove it (the reap protocol of join.h: exactly one
 * remover). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "transport/shm/segment.h"
#include "transport/shm/shm.h"
#include "world/join.h"
#include "world/world.h"

#define WATCH_NS 10000000ull /* joined ranks' liveness: every 10 ms */
#define POLL_NS  2000000L    /* rendezvous slices */

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------- rendezvous */

typedef struct rdv {
    const agmm_join_opts_t *o;
    double deadline;
    char name[AGMM_SEG_NAME_MAX];
    agmm_seg_t seg;
    agmm_join_hdr_t *h;
    int took_slot;
    double stuck_since; /* first seen `reaped` set on a live name; 0: not */
} rdv_t;

/* Abort the forming world: the reason goes into the shm control block's
 * abort cell, the status into hdr.fail_status (first one wins). */
static void abort_forming(rdv_t *r, agmm_status_t st, const char *reason)
{
    agmm_shm_shared_t *sh = NULL;
    int32_t zero = 0;
    atomic_compare_exchange_strong(&r->h->fail_status, &zero, (int32_t)st);
    if (agmm_shm_attach((char *)r->seg.addr + r->h->ctl_off, r->h->size,
                        r->o->job, &sh) == AGMM_OK) {
        agmm_shm_abort_all(sh, reason);
        agmm_shm_release(sh);
    }
}

static const char *forming_aborted(rdv_t *r)
{
    agmm_shm_shared_t *sh = NULL;
    if (agmm_shm_attach((char *)r->seg.addr + r->h->ctl_off, r->h->size,
                        r->o->job, &sh) != AGMM_OK)
        return NULL;
    const char *reason = agmm_shm_abort_reason(sh);
    agmm_shm_release(sh); /* the reason lives in the segment */
    return reason;
}

/* Create and publish the control segment. */
static agmm_status_t create_ctl(rdv_t *r, int *exists)
{
    size_t ctl_off;
    size_t bytes = agmm_join_seg_bytes(r->o->size, &ctl_off);
    AGMM_CHECK(agmm_seg_create(r->name, bytes, &r->seg, exists));
    agmm_join_hdr_t *h = r->seg.addr;
    atomic_store(&h->creator_pid, (int32_t)getpid());
    h->version = AGMM_JOIN_VERSION;
    h->size = r->o->size;
    h->ctl_off = ctl_off;
    h->bytes = bytes;
    atomic_store(&h->slots[r->o->rank].pid, (int32_t)getpid());
    atomic_store(&h->slots[r->o->rank].state, AGMM_SLOT_JOINED);
    atomic_store(&h->joined, 1);
    atomic_store_explicit(&h->magic, AGMM_JOIN_MAGIC, memory_order_release);
    r->h = h;
    r->took_slot = 1;
    return AGMM_OK;
}

/* Outcome of looking at an existing control segment. */
enum { JUDGE_JOINED, JUDGE_RETRY, JUDGE_FAIL };

static int judge(rdv_t *r, agmm_status_t *st)
{
    const agmm_join_opts_t *o = r->o;
    int missing = 0;
    *st = agmm_seg_open(r->name, sizeof(agmm_join_hdr_t), &r->seg, &missing);
    if (*st != AGMM_OK) {
        if (missing == 1) return JUDGE_RETRY; /* removed meanwhile */
        if (missing == 2) { /* not sized yet: its creator is at work */
            if (agmm_join_seg_age(r->name) > AGMM_JOIN_INIT_GRACE_S)
                agmm_seg_unlink(r->name);
            sleep_ns(POLL_NS);
            return JUDGE_RETRY;
        }
        return JUDGE_FAIL;
    }
    agmm_join_hdr_t *h = r->seg.addr;
    if (!agmm_join_hdr_valid(h, r->seg.bytes)) {
        agmm_join_reap(h, r->seg.bytes, r->name, agmm_join_seg_age(r->name));
        agmm_seg_unmap(&r->seg);
        sleep_ns(POLL_NS);
        return JUDGE_RETRY;
    }
    int hr = -1;
    pid_t hp = 0;
    if (atomic_load(&h->reaped)) {
        /* Being removed: the remover unlinks right after its CAS. A flag
         * that stays with nobody holding the segment is a remover that
         * died in between: finish its work. */
        if (r->stuck_since == 0) r->stuck_since = agmm_now();
        if (agmm_now() - r->stuck_since > AGMM_JOIN_INIT_GRACE_S &&
            !agmm_join_holder(h, NULL, NULL))
            agmm_seg_unlink(r->name);
        agmm_seg_unmap(&r->seg);
        sleep_ns(POLL_NS);
        return JUDGE_RETRY;
    }
    r->stuck_since = 0;
    if (agmm_join_reap(h, r->seg.bytes, r->name, 0)) {
        agmm_seg_unmap(&r->seg); /* a crashed run's: gone now */
        return JUDGE_RETRY;
    }
    r->h = h;
    if (atomic_load(&h->formed) || forming_aborted(r)) {
        agmm_join_holder(h, &hr, &hp);
        *st = agmm_error(AGMM_ERR_BAD_STATE,
                         "job '%s' is in use by another run (pid %ld, its rank "
                         "%d%s): wait for it to end or use another job name",
                         o->job, (long)hp, hr,
                         atomic_load(&h->formed) ? ""
                                                 : ", ending after a failure");
        return JUDGE_FAIL;
    }
    if (h->size != o->size) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "job '%s': rank %d (pid %ld) was started with world size %d, "
                 "the ranks already there with %d",
                 o->job, o->rank, (long)getpid(), o->size, h->size);
        abort_forming(r, AGMM_ERR_MISMATCH, msg);
        *st = agmm_error(AGMM_ERR_MISMATCH, "%s", msg);
        return JUDGE_FAIL;
    }
    agmm_join_slot_t *s = &h->slots[o->rank];
    int32_t zero = 0;
    if (!atomic_compare_exchange_strong(&s->pid, &zero, (int32_t)getpid())) {
        *st = agmm_error(AGMM_ERR_BAD_STATE,
                         "job '%s': rank %d is taken by pid %ld (%s): is "
                         "another run using this job name?",
                         o->job, o->rank, (long)zero,
                         agmm_seg_pid_alive(zero) ? "alive" : "gone");
        return JUDGE_FAIL;
    }
    atomic_store(&s->state, AGMM_SLOT_JOINED);
    r->took_slot = 1;
    if (atomic_load(&h->reaped)) { /* being removed as garbage: start over */
        atomic_store(&s->state, AGMM_SLOT_LEFT);
        r->took_slot = 0;
        r->h = NULL;
        agmm_seg_unmap(&r->seg);
        return JUDGE_RETRY;
    }
    atomic_fetch_add(&h->joined, 1);
    return JUDGE_JOINED;
}

/* "2, 3" for the ranks whose slots are still empty. */
static void list_missing(const agmm_join_hdr_t *h, char *buf, size_t len,
                         int want_empty)
{
    size_t used = 0;
    int listed = 0;
    buf[0] = 0;
    for (int p = 0; p < h->size && used + 16 < len; p++) {
        int empty = atomic_load(&h->slots[p].pid) == 0;
        if (empty != want_empty) continue;
        if (listed == 24) {
            used += (size_t)snprintf(buf + used, len - used, ", ...");
            break;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%d",
                                 listed ? ", " : "", p);
        listed++;
    }
    if (!listed) snprintf(buf, len, "none");
}

static agmm_status_t wait_all(rdv_t *r)
{
    agmm_join_hdr_t *h = r->h;
    uint64_t next_watch = 0;
    for (;;) {
        if (atomic_load(&h->joined) >= h->size) {
            atomic_store(&h->formed, 1);
            return AGMM_OK;
        }
        const char *reason = forming_aborted(r);
        if (reason) {
            int32_t fs = atomic_load(&h->fail_status);
            return agmm_error_quiet(fs ? (agmm_status_t)fs : AGMM_ERR_ABORTED,
                                    "%s", reason);
        }
        uint64_t now = agmm_now_ns();
        if (now >= next_watch) {
            next_watch = now + WATCH_NS;
            for (int p = 0; p < h->size; p++) {
                pid_t pid = atomic_load(&h->slots[p].pid);
                if (p == r->o->rank || pid == 0 ||
                    atomic_load(&h->slots[p].state) != AGMM_SLOT_JOINED ||
                    agmm_seg_pid_alive(pid))
                    continue;
                char msg[300];
                snprintf(msg, sizeof msg,
                         "job '%s': rank %d (pid %ld) ended before every rank "
                         "had joined",
                         r->o->job, p, (long)pid);
                abort_forming(r, AGMM_ERR_ABORTED, msg);
                return agmm_error(AGMM_ERR_ABORTED, "%s", msg);
            }
        }
        if (agmm_now() >= r->deadline) {
            char missing[200], there[200], msg[500];
            list_missing(h, missing, sizeof missing, 1);
            list_missing(h, there, sizeof there, 0);
            snprintf(msg, sizeof msg,
                     "job '%s': rank(s) %s did not join within %g s (joined: "
                     "%s)",
                     r->o->job, missing,
                     r->o->timeout_s > 0 ? r->o->timeout_s : 60.0, there);
            abort_forming(r, AGMM_ERR_TIMEOUT, msg);
            /* Another rank may have failed first: report the first reason. */
            const char *first = forming_aborted(r);
            int32_t fs = atomic_load(&h->fail_status);
            return agmm_error(fs ? (agmm_status_t)fs : AGMM_ERR_TIMEOUT, "%s",
                              first ? first : msg);
        }
        sleep_ns(POLL_NS);
    }
}

static agmm_status_t rendezvous(rdv_t *r)
{
    agmm_status_t st = agmm_cleanup(r->o->job, NULL);
    if (st != AGMM_OK) return st;
    AGMM_CHECK(agmm_seg_name(r->name, r->o->job, 0, "ctl"));
    for (;;) {
        if (agmm_now() >= r->deadline)
            return agmm_error(AGMM_ERR_TIMEOUT,
                              "job '%s': could not settle control segment %s "
                              "before the timeout",
                              r->o->job, r->name);
        int exists = 0;
        st = create_ctl(r, &exists);
        if (st == AGMM_OK) break;
        if (!exists) return st;
        int j = judge(r, &st);
        if (j == JUDGE_JOINED) break;
        if (j == JUDGE_FAIL) {
            agmm_seg_unmap(&r->seg);
            return st;
        }
    }
    st = wait_all(r);
    if (st != AGMM_OK) {
        agmm_join_leave(r->h, r->seg.bytes, r->name, r->o->rank);
        agmm_seg_unmap(&r->seg);
    }
    return st;
}

agmm_status_t agmm_world_join(const agmm_join_opts_t *opts, agmm_world_t **out)
{
    if (out) *out = NULL;
    if (!opts || !out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "world_join: NULL argument");
    if (opts->size < 1 || opts->size > AGMM_JOIN_MAX_RANKS)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "world_join: size %d (allowed 1..%d)", opts->size,
                          AGMM_JOIN_MAX_RANKS);
    if (opts->rank < 0 || opts->rank >= opts->size)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "world_join: rank %d (allowed 0..%d)", opts->rank,
                          opts->size - 1);
    AGMM_CHECK(agmm_seg_check_job(opts->job, "world_join"));

    agmm_log_set_rank(opts->rank);
    agmm_world_threads(AGMM_WORLD_JOINED);
    rdv_t r = {.o = opts};
    r.deadline = agmm_now() + (opts->timeout_s > 0 ? opts->timeout_s : 60.0);
    AGMM_CHECK(rendezvous(&r));

    agmm_status_t st = agmm_joined_world_new(opts, &r.seg, r.h, out);
    if (st != AGMM_OK) {
        char msg[400];
        snprintf(msg, sizeof msg, "rank %d could not set up its world: %s",
                 opts->rank, agmm_last_error());
        abort_forming(&r, st, msg);
        agmm_join_leave(r.h, r.seg.bytes, r.name, opts->rank);
        agmm_seg_unmap(&r.seg);
    }
    return st;
}
