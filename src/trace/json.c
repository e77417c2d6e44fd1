/* The Chrome trace-event JSON ("JSON Object Format"): opens in Perfetto
 * (ui.perfetto.dev) and chrome://tracing. pid = rank, tid = worker lane
 * (GEMM workers 0..G-1, then comm workers), named by metadata events;
 * ts/dur in microseconds from the earliest event. otherData holds the
 * shape and the per-round summary, so a script needs nothing else. */
#include <stdio.h>

#include "common/log.h"
#include "trace/trace.h"

static double us(const agmm_trace_t *t, uint64_t ns)
{
    return (double)(ns - t->origin) * 1e-3;
}

static void metadata(FILE *f, const agmm_trace_t *t)
{
    const agmm_trace_meta_t *m = &t->meta;
    int lanes = m->gemm_workers + m->comm_workers;
    for (int r = 0; r < m->nranks; r++) {
        fprintf(f,
                "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                "\"args\":{\"name\":\"rank %d\"}},\n"
                "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,"
                "\"tid\":0,\"args\":{\"sort_index\":%d}},\n",
                r, r, r, r);
        for (int l = 0; l < lanes; l++) {
            int idx;
            const char *role = agmm_trace_lane_role(m, l, &idx);
            fprintf(f,
                    "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
                    "\"tid\":%d,\"args\":{\"name\":\"rank %d %s %d\"}},\n"
                    "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,"
                    "\"tid\":%d,\"args\":{\"sort_index\":%d}},\n",
                    r, l, r, role, idx, r, l, l);
        }
    }
}

static void event(FILE *f, const agmm_trace_t *t, const agmm_tev_t *e)
{
    const agmm_trace_meta_t *m = &t->meta;
    const char *sched = agmm_trace_sched_name(e->sched);
    /* Global tile indices, so a reader can check coverage directly. */
    int64_t g0 = e->tile0, g1 = e->tile1;
    int src = e->kind == AGMM_TEV_PUT || e->kind == AGMM_TEV_PUBLISH ? e->rank
                                                                     : e->peer;
    if (src >= 0 && src < m->nranks && e->tile0 >= 0) {
        g0 += m->tile_base[src];
        g1 += m->tile_base[src];
    }
    switch (e->kind) {
    case AGMM_TEV_ROUND:
        fprintf(f,
                "{\"name\":\"round %u %s\",\"cat\":\"round\",\"ph\":\"X\","
                "\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,"
                "\"args\":{\"round\":%u,\"schedule\":\"%s\",\"epoch\":%lld}}",
                e->round, sched, us(t, e->t0), (double)(e->t1 - e->t0) * 1e-3,
                e->rank, e->lane, e->round, sched, (long long)e->value);
        return;
    case AGMM_TEV_PUBLISH:
        fprintf(f,
                "{\"name\":\"publish %s\",\"cat\":\"signal\",\"ph\":\"i\","
                "\"s\":\"t\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{"
                "\"round\":%u,\"schedule\":\"%s\",\"signal\":\"%s\","
                "\"peer\":%d,\"tiles\":[%d,%d],\"gtiles\":[%lld,%lld],"
                "\"epoch\":%lld}}",
                agmm_tsig_name(e->sig), us(t, e->t0), e->rank, e->lane,
                e->round, sched, agmm_tsig_name(e->sig), e->peer, e->tile0,
                e->tile1, (long long)g0, (long long)g1, (long long)e->value);
        return;
    case AGMM_TEV_WAIT:
        fprintf(f,
                "{\"name\":\"wait %s\",\"cat\":\"wait\",\"ph\":\"X\","
                "\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{"
                "\"round\":%u,\"schedule\":\"%s\",\"signal\":\"%s\","
                "\"from\":%d,\"index\":%d,\"epoch\":%lld}}",
                agmm_tsig_name(e->sig), us(t, e->t0),
                (double)(e->t1 - e->t0) * 1e-3, e->rank, e->lane, e->round,
                sched, agmm_tsig_name(e->sig), e->peer, e->tile0,
                (long long)e->value);
        return;
    default:
        break;
    }
    /* PUT, CONVERT, GEMM: a span over tiles. */
    fprintf(f,
            "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,"
            "\"dur\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"round\":%u,"
            "\"schedule\":\"%s\",\"%s\":%d,\"tiles\":[%d,%d],"
            "\"gtiles\":[%lld,%lld]",
            agmm_tev_kind_name(e->kind),
            e->kind == AGMM_TEV_PUT ? "comm" : "compute", us(t, e->t0),
            (double)(e->t1 - e->t0) * 1e-3, e->rank, e->lane, e->round, sched,
            e->kind == AGMM_TEV_PUT ? "peer" : "src", e->peer, e->tile0,
            e->tile1, (long long)g0, (long long)g1);
    if (e->kind == AGMM_TEV_PUT)
        fprintf(f, ",\"bytes\":%lld}}", (long long)e->value);
    else if (e->kind == AGMM_TEV_GEMM)
        fprintf(f, ",\"blocks\":[%d,%d],\"rows\":%lld}}", e->j0, e->j1,
                (long long)e->value);
    else
        fprintf(f, ",\"rows\":%lld}}", (long long)e->value);
}

static void other_data(FILE *f, const agmm_trace_t *t)
{
    const agmm_trace_meta_t *m = &t->meta;
    fprintf(f,
            "\"otherData\":{\"agmm_version\":\"%s\",\"ranks\":%d,"
            "\"gemm_workers\":%d,\"comm_workers\":%d,\"k\":%lld,\"n\":%lld,"
            "\"tile_m\":%lld,\"tile_n\":%lld,\"dtype\":\"%s\","
            "\"col_blocks\":%lld,\"total_tiles\":%lld,\"m_local\":[",
            AGMM_VERSION_STRING, m->nranks, m->gemm_workers, m->comm_workers,
            (long long)m->k, (long long)m->n, (long long)m->tile_m,
            (long long)m->tile_n, m->dtype, (long long)m->col_blocks,
            (long long)m->total_tiles);
    for (int r = 0; r < m->nranks; r++)
        fprintf(f, "%s%lld", r ? "," : "", (long long)m->m_local[r]);
    fprintf(f, "],\"tiles\":[");
    for (int r = 0; r < m->nranks; r++)
        fprintf(f, "%s%lld", r ? "," : "", (long long)m->tiles[r]);
    fprintf(f,
            "],\"clock\":\"CLOCK_MONOTONIC of rank 0's host\","
            "\"origin_ns\":%llu,\"events\":%zu,\"dropped\":%llu,\"summary\":[",
            (unsigned long long)t->origin, t->nall,
            (unsigned long long)t->dropped);
    for (int i = 0; i < t->rounds * m->nranks; i++) {
        const agmm_trace_summary_t *s = &t->sum[i];
        fprintf(f,
                "%s{\"round\":%d,\"rank\":%d,\"schedule\":\"%s\","
                "\"round_us\":%.3f,\"gemm_wait_us\":%.3f,\"gemm_busy_us\":%.3f,"
                "\"comm_busy_us\":%.3f,\"comm_hidden_us\":%.3f}",
                i ? "," : "", s->round, i % m->nranks,
                agmm_trace_sched_name(s->schedule), s->round_us,
                s->gemm_wait_us, s->gemm_busy_us, s->comm_busy_us,
                s->comm_hidden_us);
    }
    fprintf(f, "]}");
}

agmm_status_t agmm_trace_write_json(const agmm_trace_t *t, const char *path)
{
    agmm_outfile_t o;
    AGMM_CHECK(agmm_outfile_open(&o, path));
    FILE *f = o.f;
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    metadata(f, t);
    for (size_t i = 0; i < t->nall; i++) {
        event(f, t, &t->all[i]);
        fputs(i + 1 < t->nall ? ",\n" : "\n", f);
    }
    if (t->nall == 0) /* the metadata list ended with a comma */
        fprintf(f, "{\"name\":\"empty\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
                   "\"args\":{}}\n");
    fprintf(f, "],\n");
    other_data(f, t);
    fprintf(f, "}\n");
    return agmm_outfile_commit(&o);
}
