/* The abort cell (common/abort.c): a reader that finds the first aborter
 * between its claim and its publish waits for the reason instead of
 * reporting the placeholder, however long the writer is off the CPU
 * (under TSan on a loaded CI machine a progress thread stayed there past
 * the 0.2 s the wait once had, and rank 0's final message became "another
 * rank is aborting the run"); the wait is bounded (a shared cell's writer
 * may have been killed in between); the first reason stands. The writer
 * here is a thread that claims the cell by hand and publishes 0.5 s
 * later. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "common/abort.h"

static void claim(agmm_abort_cell_t *c)
{
    memset(c, 0, sizeof *c);
    atomic_store(&c->state, AGMM_ABORT_WRITING);
}

static void *slow_writer(void *arg)
{
    agmm_abort_cell_t *c = arg;
    struct timespec ts = {0, 500000000L};
    nanosleep(&ts, NULL);
    strcpy(c->reason, "rank 1 aborted: slow writer");
    atomic_store_explicit(&c->state, AGMM_ABORT_PUBLISHED,
                          memory_order_release);
    return NULL;
}

int main(void)
{
    static agmm_abort_cell_t c;

    CHECK(agmm_abort_reason(&c, AGMM_ABORT_WAIT_LOCAL_S) == NULL,
          "a fresh cell is not aborted");

    /* A writer slower than the old 0.2 s: the reader gets its words. */
    claim(&c);
    pthread_t t;
    if (pthread_create(&t, NULL, slow_writer, &c) != 0) {
        CHECK(0, "pthread_create");
        CHECK_DONE("test_abort_cell");
    }
    double t0 = agmm_now();
    const char *r = agmm_abort_reason(&c, AGMM_ABORT_WAIT_LOCAL_S);
    double waited = agmm_now() - t0;
    pthread_join(t, NULL);
    CHECK(r && strcmp(r, "rank 1 aborted: slow writer") == 0,
          "the reader waits for a slow writer's reason, got '%s'",
          r ? r : "(null)");
    CHECK(waited >= 0.3, "it waited for the publish (%.3f s)", waited);

    /* A writer that never publishes: a placeholder after the bound. */
    claim(&c);
    t0 = agmm_now();
    r = agmm_abort_reason(&c, 0.05);
    waited = agmm_now() - t0;
    CHECK(r && strstr(r, "aborting") != NULL,
          "a writer that never publishes gives the placeholder, got '%s'",
          r ? r : "(null)");
    CHECK(waited >= 0.05 && waited < AGMM_ABORT_WAIT_SHARED_S,
          "the wait is bounded by the caller's 0.05 s (%.3f s)", waited);

    /* The first reason stands; an empty one gets a placeholder. */
    memset(&c, 0, sizeof c);
    CHECK(agmm_abort_record(&c, "first") == 1, "the first abort records");
    CHECK(agmm_abort_record(&c, "second") == 0, "a second does not");
    r = agmm_abort_reason(&c, 0);
    CHECK(r && strcmp(r, "first") == 0, "the first stands, got '%s'",
          r ? r : "(null)");
    memset(&c, 0, sizeof c);
    agmm_abort_record(&c, "");
    r = agmm_abort_reason(&c, 0);
    CHECK(r && *r, "an empty reason becomes a placeholder");

    CHECK_DONE("test_abort_cell");
}
