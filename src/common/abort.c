/* The abort state machine; see abort.h. */
#include "common/abort.h"

#include <stdio.h>

enum { ABORT_NONE = 0, ABORT_WRITING = 1, ABORT_PUBLISHED = 2 };

int agmm_abort_record(agmm_abort_cell_t *c, const char *reason)
{
    int expected = ABORT_NONE;
    if (!atomic_compare_exchange_strong_explicit(
            &c->state, &expected, ABORT_WRITING, memory_order_acq_rel,
            memory_order_acquire))
        return 0; /* someone else aborted first: their reason stands */
    snprintf(c->reason, sizeof c->reason, "%s",
             reason && *reason ? reason : "a rank aborted without a reason");
    atomic_store_explicit(&c->state, ABORT_PUBLISHED, memory_order_release);
    return 1;
}

const char *agmm_abort_reason(agmm_abort_cell_t *c)
{
    int st = atomic_load_explicit(&c->state, memory_order_acquire);
    if (st == ABORT_NONE) return NULL;
    if (st == ABORT_WRITING) return "another rank is aborting the run";
    return c->reason;
}
