/* A live plan misused on one rank, or called from a second thread while it
 * runs: the misusing rank gets its status at once, and its peer, which
 * called correctly, is told at once too (its round ends with
 * AGMM_ERR_ABORTED and a reason naming the rank and the argument) instead
 * of waiting out the world's timeout; calls concurrent with a run are
 * refused with AGMM_ERR_BAD_STATE. Ranks come from agmm_launch(). (Bad
 * input that every rank passes alike: test_api.c.) */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agmm_ext.h"
#include "api_desc.h"
#include "check.h"
#include "common/log.h"
#include "ops/common/plan.h" /* agmm_plan_busy */

/* ------------------------------------- one rank misuses a live plan */

/* How rank 1 misuses its run; rank 0 runs correctly and must be told at
 * once: its round ends with AGMM_ERR_ABORTED and a reason naming rank 1
 * and the argument. The world's timeout is 600 s, so a peer left waiting
 * for rank 1 would run into CTest's timeout instead. */
typedef enum { NO_WEIGHT, C_NULL, A_NULL, BAD_SCHEDULE, NMISUSE } misuse_t;
static const struct {
    const char *what, *reason;
    agmm_status_t want;
} misuses[NMISUSE] = {
    {"run before set_weight", "rank 1 called run with no weight",
     AGMM_ERR_BAD_STATE},
    {"run with c NULL", "rank 1 called run with c NULL", AGMM_ERR_INVALID_ARG},
    {"run with a_local NULL", "rank 1 called run with a_local NULL",
     AGMM_ERR_INVALID_ARG},
    {"run with schedule 7", "rank 1 called run with an invalid schedule",
     AGMM_ERR_INVALID_ARG},
};

static int lone_misuse_main(agmm_world_t *w, void *arg)
{
    misuse_t m = *(const misuse_t *)arg;
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    good_desc(&d);
    agmm_plan_t *p = NULL;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 20;
    uint16_t a16[5 * 7] = {0}, w16[7 * 6] = {0};
    float c[8 * 6];
    if ((r == 0 || m != NO_WEIGHT) && agmm_plan_set_weight(p, w16) != AGMM_OK)
        return 21;
    agmm_status_t st;
    if (r == 0)
        st = agmm_plan_run(p, AGMM_SCHEDULE_FUSED, a16, c);
    else
        st = agmm_plan_run(
            p, m == BAD_SCHEDULE ? (agmm_schedule_t)7 : AGMM_SCHEDULE_FUSED,
            m == A_NULL ? NULL : a16, m == C_NULL ? NULL : c);
    int code = 0;
    if (r == 1 && st != misuses[m].want) code = 22;
    if (r == 0 && (st != AGMM_ERR_ABORTED ||
                   !strstr(agmm_last_error(), misuses[m].reason))) {
        fprintf(stderr,
                "%s: rank 0 got %s: '%s', want AGMM_ERR_ABORTED naming '%s'\n",
                misuses[m].what, agmm_status_str(st), agmm_last_error(),
                misuses[m].reason);
        code = 23;
    }
    /* In an aborted world destroy does not wait for anything; it frees. */
    (void)agmm_plan_destroy(p);
    return code;
}

/* ------------------------------------ concurrent calls on one plan */

typedef struct bg_run {
    agmm_plan_t *p;
    const void *a;
    float *c;
    agmm_status_t st;
} bg_run_t;

static void *bg_run_main(void *arg)
{
    bg_run_t *b = arg;
    b->st = agmm_plan_run(b->p, AGMM_SCHEDULE_FUSED, b->a, b->c);
    return NULL;
}

/* Rank 0 runs a round on a second thread; the round cannot end before
 * rank 1 runs too, which rank 1 does only after the barrier below, i.e.
 * after rank 0's checks. Meanwhile set_weight, run and destroy on the
 * same plan are refused with AGMM_ERR_BAD_STATE (no timing involved). */
static int concurrent_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    agmm_log_set_quiet(1);
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    good_desc(&d);
    agmm_plan_t *p = NULL;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 30;
    uint16_t a16[5 * 7] = {0}, w16[7 * 6] = {0};
    float c[8 * 6], c2[8 * 6];
    if (agmm_plan_set_weight(p, w16) != AGMM_OK) return 31;
    if (r == 1) {
        if (agmm_world_barrier(w, 0) != AGMM_OK) return 32;
        if (agmm_plan_run(p, AGMM_SCHEDULE_FUSED, a16, c) != AGMM_OK) return 33;
        return agmm_plan_destroy(p) == AGMM_OK ? 0 : 34;
    }
    bg_run_t b = {p, a16, c, AGMM_ERR_SYSTEM};
    pthread_t t;
    if (pthread_create(&t, NULL, bg_run_main, &b) != 0) return 35;
    while (!agmm_plan_busy(p))
        sched_yield(); /* the run has started */
    int code = 0;
    if (agmm_plan_set_weight(p, w16) != AGMM_ERR_BAD_STATE) code = 36;
    if (agmm_plan_run(p, AGMM_SCHEDULE_FUSED, a16, c2) != AGMM_ERR_BAD_STATE)
        code = 37;
    if (agmm_plan_destroy(p) != AGMM_ERR_BAD_STATE) code = 38;
    if (code) agmm_world_abort(w, "concurrent calls were not refused");
    if (agmm_world_barrier(w, 0) != AGMM_OK && !code) code = 39;
    pthread_join(t, NULL);
    if (b.st != AGMM_OK && !code) code = 40;
    if (agmm_plan_destroy(p) != AGMM_OK && !code) code = 41;
    return code;
}

int main(void)
{
    agmm_log_set_quiet(1);
    agmm_launch_opts_t o = {0};
    o.nranks = NR;
    o.quiet = 1;
    int code = -1;
    o.timeout_s = 600; /* waiting it out would be a CTest timeout */
    for (misuse_t m = 0; m < NMISUSE; m++) {
        code = -1;
        CHECK(agmm_launch(&o, lone_misuse_main, &m, &code) == AGMM_OK,
              "launch");
        CHECK(code == 0, "%s on rank 1 only: exit code %d", misuses[m].what,
              code);
    }
    o.timeout_s = 60;
    code = -1;
    CHECK(agmm_launch(&o, concurrent_main, NULL, &code) == AGMM_OK, "launch");
    CHECK(code == 0, "calls concurrent with a run: exit code %d", code);
    CHECK_DONE("test_api_misuse");
}
