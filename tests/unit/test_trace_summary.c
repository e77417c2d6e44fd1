/* The per-round summary's definitions (docs/tracing.md) on hand-made
 * events: waits and busy time summed over GEMM lanes only, comm busy time
 * as the union of puts (overlapping puts of two comm threads count once),
 * hidden time as the overlap of that union with GEMM/convert work. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "trace/trace.h"

static agmm_tev_t ev(int kind, uint64_t t0_us, uint64_t t1_us, int rank,
                     int lane, uint32_t round)
{
    agmm_tev_t e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.t0 = t0_us * 1000;
    e.t1 = t1_us * 1000;
    e.rank = (int16_t)rank;
    e.lane = (int16_t)lane;
    e.round = round;
    e.sched = AGMM_SCHEDULE_BASELINE;
    return e;
}

static int near(double a, double b)
{
    return fabs(a - b) < 1e-6;
}

int main(void)
{
    /* Rank 0, round 1; 2 GEMM lanes (0, 1) and 2 comm lanes (2, 3). */
    agmm_tev_t e[] = {
        ev(AGMM_TEV_ROUND, 0, 100, 0, 0, 1),
        ev(AGMM_TEV_PUT, 10, 30, 0, 2, 1),     /* union of puts: */
        ev(AGMM_TEV_PUT, 20, 40, 0, 3, 1),     /*   [10, 40) */
        ev(AGMM_TEV_PUT, 60, 70, 0, 2, 1),     /*   [60, 70)  -> 40 us */
        ev(AGMM_TEV_GEMM, 0, 15, 0, 0, 1),     /* compute: [0, 15) */
        ev(AGMM_TEV_CONVERT, 35, 50, 0, 1, 1), /* [35, 50), [65, 90) */
        ev(AGMM_TEV_GEMM, 65, 90, 0, 0, 1),    /* overlap 5 + 5 + 5 */
        ev(AGMM_TEV_WAIT, 15, 25, 0, 0, 1),    /* GEMM lane wait: 10 */
        ev(AGMM_TEV_WAIT, 50, 53, 0, 1, 1),    /* GEMM lane wait: 3 */
        ev(AGMM_TEV_WAIT, 0, 9, 0, 2, 1),      /* comm lane: not counted */
        ev(AGMM_TEV_PUT, 0, 99, 1, 2, 1),      /* other rank: ignored */
        ev(AGMM_TEV_GEMM, 0, 99, 0, 0, 2),     /* other round: ignored */
    };
    agmm_trace_summary_t s;
    agmm_trace_summarize_one(e, sizeof e / sizeof e[0], 0, 1, 2, &s);
    CHECK(s.round == 1, "round %d", s.round);
    CHECK(s.schedule == AGMM_SCHEDULE_BASELINE, "schedule %d", s.schedule);
    CHECK(near(s.round_us, 100), "round_us %g", s.round_us);
    CHECK(near(s.comm_busy_us, 40), "comm_busy_us %g", s.comm_busy_us);
    CHECK(near(s.comm_hidden_us, 15), "comm_hidden_us %g", s.comm_hidden_us);
    CHECK(near(s.gemm_wait_us, 13), "gemm_wait_us %g", s.gemm_wait_us);
    CHECK(near(s.gemm_busy_us, 15 + 15 + 25), "gemm_busy_us %g",
          s.gemm_busy_us);

    /* No puts (one rank): nothing busy, nothing hidden. */
    agmm_trace_summarize_one(e, 1, 0, 1, 2, &s);
    CHECK(s.comm_busy_us == 0 && s.comm_hidden_us == 0, "no comm: %g %g",
          s.comm_busy_us, s.comm_hidden_us);

    /* A put entirely inside compute is fully hidden. */
    agmm_tev_t f[] = {ev(AGMM_TEV_GEMM, 0, 50, 0, 0, 1),
                      ev(AGMM_TEV_PUT, 10, 20, 0, 1, 1)};
    agmm_trace_summarize_one(f, 2, 0, 1, 1, &s);
    CHECK(near(s.comm_hidden_us, s.comm_busy_us) && near(s.comm_busy_us, 10),
          "hidden %g of %g", s.comm_hidden_us, s.comm_busy_us);
    CHECK_DONE("test_trace_summary");
}
