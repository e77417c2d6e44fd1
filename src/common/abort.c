/* The abort state machine; see abort.h. */
#include "common/abort.h"

#include <stdio.h>
#include <time.h>

int agmm_abort_record(agmm_abort_cell_t *c, const char *reason)
{
    int expected = AGMM_ABORT_NONE;
    if (!atomic_compare_exchange_strong_explicit(
            &c->state, &expected, AGMM_ABORT_WRITING, memory_order_acq_rel,
            memory_order_acquire))
        return 0; /* someone else aborted first: their reason stands */
    snprintf(c->reason, sizeof c->reason, "%s",
             reason && *reason ? reason : "a rank aborted without a reason");
    atomic_store_explicit(&c->state, AGMM_ABORT_PUBLISHED,
                          memory_order_release);
    return 1;
}

const char *agmm_abort_reason(agmm_abort_cell_t *c, double max_wait_s)
{
    int st = atomic_load_explicit(&c->state, memory_order_acquire);
    if (st == AGMM_ABORT_NONE) return NULL;
    /* The first aborter is between its CAS and its publish (a snprintf):
     * wait for its reason rather than report the placeholder, which would
     * become the final message of every rank that looked in that window.
     * The window is a snprintf, but the writer can be off the CPU for a
     * long time: under TSan on a loaded 2-core CI machine a reader gave up
     * after the 0.2 s this wait once had, with the writer (its own rank's
     * progress thread) still in that window ("rank 0: aborted during a
     * barrier: another rank is aborting the run").
     * Bounded by the caller (abort.h): a writer in another process may
     * have been killed in between. */
    for (double end = agmm_now() + max_wait_s;
         st == AGMM_ABORT_WRITING && agmm_now() < end;) {
        struct timespec ts = {0, 20000L};
        nanosleep(&ts, NULL);
        st = atomic_load_explicit(&c->state, memory_order_acquire);
    }
    if (st == AGMM_ABORT_WRITING) return "another rank is aborting the run";
    return c->reason;
}
