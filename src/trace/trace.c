/* The trace recorder: create/destroy, the per-thread buffers and the hooks
 * the schedules call while a round runs (see trace.h for who writes what). */
#include "trace/trace.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

_Thread_local agmm_trace_buf_t *agmm_trace_self;

/* Event memory per rank is capped; a longer trace drops (and counts) the
 * events that do not fit. 64 MiB = 1 Mi events. */
#define TRACE_MAX_BYTES ((size_t)64 << 20)

static agmm_status_t meta_copy(agmm_trace_meta_t *m,
                               const agmm_trace_meta_t *from)
{
    size_t P = (size_t)from->nranks;
    *m = *from;
    m->m_local = malloc(sizeof(int64_t) * P);
    m->tiles = malloc(sizeof(int64_t) * P);
    m->tile_base = malloc(sizeof(int64_t) * (P + 1));
    if (!m->m_local || !m->tiles || !m->tile_base)
        return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    memcpy(m->m_local, from->m_local, sizeof(int64_t) * P);
    memcpy(m->tiles, from->tiles, sizeof(int64_t) * P);
    memcpy(m->tile_base, from->tile_base, sizeof(int64_t) * (P + 1));
    return AGMM_OK;
}

agmm_status_t agmm_trace_new(const agmm_trace_source_t *src, int max_rounds,
                             agmm_trace_t **out)
{
    *out = NULL;
    agmm_trace_t *t = calloc(1, sizeof *t);
    if (!t) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    t->world = src->world;
    t->rank = src->rank;
    t->nbufs = src->meta->gemm_workers + src->meta->comm_workers;
    t->converts = src->converts;
    agmm_status_t st = meta_copy(&t->meta, src->meta);
    if (st == AGMM_OK) {
        t->bufs = agmm_alloc(sizeof *t->bufs * (size_t)t->nbufs);
        if (!t->bufs)
            st = agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    }
    size_t per_round = src->events_per_round;
    size_t per_buf = per_round * (size_t)max_rounds;
    size_t limit = TRACE_MAX_BYTES / sizeof(agmm_tev_t) / (size_t)t->nbufs;
    if (per_buf > limit || per_buf / (size_t)max_rounds != per_round)
        per_buf = limit;
    for (int i = 0; st == AGMM_OK && i < t->nbufs; i++) {
        /* agmm_alloc zeroes: every page is touched now, not while a round
         * runs. */
        t->bufs[i].ev = agmm_alloc(per_buf * sizeof(agmm_tev_t));
        t->bufs[i].cap = per_buf;
        t->bufs[i].trace = t;
        if (!t->bufs[i].ev)
            st = agmm_error(AGMM_ERR_NO_MEMORY,
                            "trace: out of memory for %zu events", per_buf);
    }
    if (st != AGMM_OK) {
        agmm_trace_destroy(t); /* not attached yet: no detach */
        return st;
    }
    t->detach = src->detach;
    t->owner = src->owner;
    *out = t;
    return AGMM_OK;
}

/* Recording stops: the owner forgets the trace (once). */
void agmm_trace_detach(agmm_trace_t *t)
{
    if (t->detach) t->detach(t->owner, t);
    t->detach = NULL;
    t->owner = NULL;
    agmm_trace_self = NULL;
}

void agmm_trace_destroy(agmm_trace_t *t)
{
    if (!t) return;
    agmm_trace_detach(t);
    for (int i = 0; t->bufs && i < t->nbufs; i++)
        agmm_free(t->bufs[i].ev);
    agmm_free(t->bufs);
    free(t->meta.m_local);
    free(t->meta.tiles);
    free(t->meta.tile_base);
    free(t->all);
    free(t->sum);
    free(t);
}

/* ------------------------------------------------------------- hooks */

void agmm_trace_thread(agmm_trace_t *t, agmm_trace_role_t role, int index)
{
    if (__builtin_expect(t == NULL, 1)) {
        agmm_trace_self = NULL;
        return;
    }
    int lane =
        role == AGMM_TRACE_GEMM_WORKER ? index : t->meta.gemm_workers + index;
    agmm_trace_self = lane >= 0 && lane < t->nbufs ? &t->bufs[lane] : NULL;
}

void agmm_trace_record(agmm_trace_buf_t *b, const agmm_tev_t *e)
{
    if (b->n == b->cap) {
        b->dropped++;
        return;
    }
    agmm_tev_t *d = &b->ev[b->n++];
    *d = *e;
    d->round = b->trace->round;
    d->sched = b->trace->sched;
}

static agmm_tev_t tev(agmm_tev_kind_t kind, uint64_t t0, uint64_t t1)
{
    agmm_tev_t e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.t0 = t0;
    e.t1 = t1;
    e.tile0 = e.tile1 = -1;
    e.j0 = e.j1 = -1;
    return e;
}

void agmm_trace_put_slow(uint64_t t0, int peer, int64_t tile0, int64_t tile1,
                         size_t bytes, uint64_t epoch, agmm_tsig_t sig)
{
    uint64_t now = agmm_now_ns();
    agmm_tev_t e = tev(AGMM_TEV_PUT, t0, now);
    e.peer = peer;
    e.tile0 = (int32_t)tile0;
    e.tile1 = (int32_t)tile1;
    e.value = (int64_t)bytes;
    agmm_trace_record(agmm_trace_self, &e);
    /* The put ends by raising the peer's signal. */
    e = tev(AGMM_TEV_PUBLISH, now, now);
    e.peer = peer;
    e.tile0 = (int32_t)tile0;
    e.tile1 = (int32_t)tile1;
    e.value = (int64_t)epoch;
    e.sig = (uint8_t)sig;
    agmm_trace_record(agmm_trace_self, &e);
}

void agmm_trace_publish_slow(int peer, int64_t index, uint64_t epoch,
                             agmm_tsig_t sig)
{
    uint64_t now = agmm_now_ns();
    agmm_tev_t e = tev(AGMM_TEV_PUBLISH, now, now);
    e.peer = peer;
    e.tile0 = (int32_t)index;
    e.tile1 = index >= 0 ? (int32_t)index + 1 : -1;
    e.value = (int64_t)epoch;
    e.sig = (uint8_t)sig;
    agmm_trace_record(agmm_trace_self, &e);
}

agmm_status_t agmm_trace_wait_slow(agmm_world_t *w, const _Atomic uint64_t *sig,
                                   uint64_t at_least, double deadline,
                                   const agmm_wait_what_t *what,
                                   agmm_tsig_t kind)
{
    if (atomic_load_explicit(sig, memory_order_acquire) >= at_least)
        return AGMM_OK;
    uint64_t t0 = agmm_now_ns();
    agmm_status_t st = agmm_signal_wait(w, sig, at_least, deadline, what);
    agmm_tev_t e = tev(AGMM_TEV_WAIT, t0, agmm_now_ns());
    e.peer = what->peer;
    e.tile0 = (int32_t)what->index;
    e.tile1 = what->index >= 0 ? (int32_t)what->index + 1 : -1;
    e.value = (int64_t)at_least;
    e.sig = (uint8_t)kind;
    agmm_trace_record(agmm_trace_self, &e);
    return st;
}

void agmm_trace_gemm_slow(uint64_t t_conv, uint64_t t_gemm, int src,
                          int64_t tile0, int64_t tile1, int64_t j0, int64_t j1,
                          int64_t rows)
{
    uint64_t now = agmm_now_ns();
    agmm_tev_t e = tev(AGMM_TEV_CONVERT, t_conv, t_gemm);
    e.peer = src;
    e.tile0 = (int32_t)tile0;
    e.tile1 = (int32_t)tile1;
    e.value = rows;
    /* fp32 inputs are used in place: no conversion to show. */
    if (agmm_trace_self->trace->converts)
        agmm_trace_record(agmm_trace_self, &e);
    e.kind = AGMM_TEV_GEMM;
    e.t0 = t_gemm;
    e.t1 = now;
    e.j0 = (int32_t)j0;
    e.j1 = (int32_t)j1;
    agmm_trace_record(agmm_trace_self, &e);
}

uint64_t agmm_trace_round_begin(agmm_trace_t *t, agmm_schedule_t sched)
{
    if (__builtin_expect(t == NULL, 1)) return 0;
    t->round++;
    t->sched = (uint8_t)sched;
    /* The calling thread is GEMM worker 0 (workers.c). */
    agmm_trace_self = &t->bufs[0];
    return agmm_now_ns();
}

void agmm_trace_round_end(agmm_trace_t *t, uint64_t t0, uint64_t epoch)
{
    if (__builtin_expect(t == NULL, 1)) return;
    agmm_tev_t e = tev(AGMM_TEV_ROUND, t0, agmm_now_ns());
    e.value = (int64_t)epoch;
    agmm_trace_record(&t->bufs[0], &e);
    agmm_trace_self = NULL;
}

/* ------------------------------------------------------------- names */

const char *agmm_tev_kind_name(int kind)
{
    static const char *names[AGMM_TEV_KINDS] = {"round", "put",     "publish",
                                                "wait",  "convert", "gemm"};
    return kind >= 0 && kind < AGMM_TEV_KINDS ? names[kind] : "?";
}

const char *agmm_tsig_name(int sig)
{
    static const char *names[AGMM_TSIG_KINDS] = {"tile", "shard", "ack",
                                                 "other"};
    return sig >= 0 && sig < AGMM_TSIG_KINDS ? names[sig] : "?";
}

const char *agmm_trace_sched_name(int sched)
{
    return sched == AGMM_SCHEDULE_BASELINE ? "baseline" : "fused";
}

const char *agmm_trace_lane_role(const agmm_trace_meta_t *m, int lane,
                                 int *index)
{
    if (lane < m->gemm_workers) {
        *index = lane;
        return "gemm";
    }
    *index = lane - m->gemm_workers;
    return "comm";
}

/* ------------------------------------------------------ after gather */

agmm_status_t agmm_trace_write(const agmm_trace_t *t, const char *json_path,
                               const char *svg_path)
{
    if (!t) return agmm_error(AGMM_ERR_INVALID_ARG, "trace_write: NULL trace");
    if (t->rank != 0) return AGMM_OK;
    if (!t->gathered)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "trace_write: call agmm_trace_gather first");
    if (json_path) AGMM_CHECK(agmm_trace_write_json(t, json_path));
    if (svg_path) AGMM_CHECK(agmm_trace_write_svg(t, svg_path));
    return AGMM_OK;
}

int agmm_trace_rounds(const agmm_trace_t *t)
{
    return t && t->gathered && t->rank == 0 ? t->rounds : 0;
}

agmm_status_t agmm_trace_summary(const agmm_trace_t *t, int round, int rank,
                                 agmm_trace_summary_t *out)
{
    if (!t || !out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "trace_summary: NULL argument");
    if (round < 0 || round >= agmm_trace_rounds(t) || rank < 0 ||
        rank >= t->meta.nranks)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "trace_summary: round %d of %d, rank %d of %d", round,
                          agmm_trace_rounds(t), rank, t->meta.nranks);
    *out = t->sum[(size_t)round * (size_t)t->meta.nranks + (size_t)rank];
    return AGMM_OK;
}

void agmm_trace_counts(const agmm_trace_t *t, uint64_t *events,
                       uint64_t *dropped)
{
    int ok = t && t->gathered && t->rank == 0;
    if (events) *events = ok ? t->nall : 0;
    if (dropped) *dropped = ok ? t->dropped : 0;
}
