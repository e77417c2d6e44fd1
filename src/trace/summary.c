/* The per-round summary of a trace (definitions: docs/tracing.md).
 *
 * For one rank in one round:
 *   round_us       the ROUND event (its agmm_plan_run);
 *   gemm_wait_us   sum of the WAIT events on GEMM worker lanes;
 *   gemm_busy_us   sum of the CONVERT and GEMM events (GEMM lanes);
 *   comm_busy_us   length of the union of its PUT intervals (any lane);
 *   comm_hidden_us length of (union of PUTs) intersected with (union of
 *                  CONVERT and GEMM intervals): communication during which
 *                  the rank was also computing. */
#include <stdlib.h>

#include "common/log.h"
#include "trace/trace.h"

typedef struct span {
    uint64_t a, b;
} span_t;

static int cmp_span(const void *x, const void *y)
{
    const span_t *s = x, *t = y;
    return (s->a > t->a) - (s->a < t->a);
}

/* Sort and merge overlapping spans in place; returns the new count. */
static size_t merge(span_t *s, size_t n)
{
    if (n == 0) return 0;
    qsort(s, n, sizeof *s, cmp_span);
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i].a <= s[m].b) {
            if (s[i].b > s[m].b) s[m].b = s[i].b;
        } else {
            s[++m] = s[i];
        }
    }
    return m + 1;
}

static uint64_t length(const span_t *s, size_t n)
{
    uint64_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += s[i].b - s[i].a;
    return len;
}

/* Length of the intersection of two merged (sorted, disjoint) lists. */
static uint64_t overlap(const span_t *x, size_t nx, const span_t *y, size_t ny)
{
    uint64_t len = 0;
    size_t i = 0, j = 0;
    while (i < nx && j < ny) {
        uint64_t a = x[i].a > y[j].a ? x[i].a : y[j].a;
        uint64_t b = x[i].b < y[j].b ? x[i].b : y[j].b;
        if (a < b) len += b - a;
        if (x[i].b < y[j].b)
            i++;
        else
            j++;
    }
    return len;
}

void agmm_trace_summarize_one(const agmm_tev_t *ev, size_t n, int rank,
                              uint32_t round, int gemm_workers,
                              agmm_trace_summary_t *out)
{
    out->round = (int)round;
    out->schedule = AGMM_SCHEDULE_FUSED;
    out->round_us = out->gemm_wait_us = out->gemm_busy_us = 0;
    out->comm_busy_us = out->comm_hidden_us = 0;
    size_t nput = 0, ncomp = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].rank != rank || ev[i].round != round) continue;
        nput += ev[i].kind == AGMM_TEV_PUT;
        ncomp += ev[i].kind == AGMM_TEV_GEMM || ev[i].kind == AGMM_TEV_CONVERT;
    }
    span_t *put = malloc(sizeof *put * (nput + ncomp + 1));
    span_t *comp = put ? put + nput : NULL;
    size_t ip = 0, ic = 0;
    for (size_t i = 0; i < n; i++) {
        const agmm_tev_t *e = &ev[i];
        if (e->rank != rank || e->round != round) continue;
        double us = (double)(e->t1 - e->t0) * 1e-3;
        int gemm_lane = e->lane < gemm_workers;
        switch (e->kind) {
        case AGMM_TEV_ROUND:
            out->round_us = us;
            out->schedule = (agmm_schedule_t)e->sched;
            break;
        case AGMM_TEV_WAIT:
            if (gemm_lane) out->gemm_wait_us += us;
            break;
        case AGMM_TEV_GEMM:
        case AGMM_TEV_CONVERT:
            if (gemm_lane) out->gemm_busy_us += us;
            if (comp) comp[ic++] = (span_t){e->t0, e->t1};
            break;
        case AGMM_TEV_PUT:
            if (put) put[ip++] = (span_t){e->t0, e->t1};
            break;
        default:
            break;
        }
    }
    if (!put) return; /* out of memory: only the sums */
    ip = merge(put, ip);
    ic = merge(comp, ic);
    out->comm_busy_us = (double)length(put, ip) * 1e-3;
    out->comm_hidden_us = (double)overlap(put, ip, comp, ic) * 1e-3;
    free(put);
}

static int cmp_tev(const void *x, const void *y)
{
    const agmm_tev_t *a = x, *b = y;
    if (a->round != b->round) return a->round < b->round ? -1 : 1;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->t0 > b->t0) - (a->t0 < b->t0);
}

agmm_status_t agmm_trace_summarize(agmm_trace_t *t)
{
    /* Sorted by (round, rank, time): the writers draw in that order and
     * each (round, rank) group is one contiguous run. */
    qsort(t->all, t->nall, sizeof *t->all, cmp_tev);
    int P = t->meta.nranks;
    t->rounds = 0;
    t->origin = t->nall ? t->all[0].t0 : 0;
    for (size_t i = 0; i < t->nall; i++) {
        if ((int)t->all[i].round > t->rounds) t->rounds = (int)t->all[i].round;
        if (t->all[i].t0 < t->origin) t->origin = t->all[i].t0;
    }
    t->sum = calloc((size_t)(t->rounds > 0 ? t->rounds : 1) * (size_t)P,
                    sizeof *t->sum);
    if (!t->sum) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    size_t i = 0;
    while (i < t->nall) {
        size_t j = i;
        while (j < t->nall && t->all[j].round == t->all[i].round &&
               t->all[j].rank == t->all[i].rank)
            j++;
        const agmm_tev_t *e = &t->all[i];
        if (e->round >= 1 && e->rank >= 0 && e->rank < P)
            agmm_trace_summarize_one(
                e, j - i, e->rank, e->round, t->meta.gemm_workers,
                &t->sum[(size_t)(e->round - 1) * (size_t)P + (size_t)e->rank]);
        i = j;
    }
    for (int r = 0; r < t->rounds; r++)
        for (int q = 0; q < P; q++)
            t->sum[(size_t)r * (size_t)P + (size_t)q].round = r + 1;
    return AGMM_OK;
}
