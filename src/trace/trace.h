/* Per-tile tracing: the recorder the schedules call (hooks), its buffers,
 * and what gather/summary/json/svg share. Public API: agmm_trace_* in
 * include/agmm.h; how to read the output: docs/tracing.md.
 *
 * Threads and ownership:
 *   - one buffer per worker thread of the rank (GEMM workers first, then
 *     comm workers: the buffer index is the "lane"). A buffer is written
 *     only by the thread running that worker in the current round (worker
 *     0 on the round's calling thread, the others on the rank's threads
 *     kept between rounds, world/pool.h, or on threads of their own when
 *     the pool is busy); a round ends when every worker has returned, its
 *     writes visible as after a join, so no two threads ever write one
 *     buffer at once. It is read only after recording stopped (gather).
 *   - a worker thread finds its buffer through the thread-local pointer
 *     agmm_trace_self, set by agmm_trace_thread() at the start of each
 *     worker function. NULL means "not tracing": every hook then costs one
 *     load and one predictable branch, and never takes a lock or allocates.
 *   - buffers are allocated and touched when the trace is created; a full
 *     buffer drops events and counts them (reported in the output). */
#ifndef AGMM_TRACE_H
#define AGMM_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agmm.h"
#include "common/util.h"
#include "transport/transport.h"

typedef enum {
    AGMM_TEV_ROUND = 0, /* a whole agmm_plan_run on the rank */
    AGMM_TEV_PUT,       /* copy of rows to a peer (ends with the publish) */
    AGMM_TEV_PUBLISH,   /* a signal raised on a peer (instant) */
    AGMM_TEV_WAIT,      /* a wait that found its signal not yet raised */
    AGMM_TEV_CONVERT,   /* input rows to fp32 (and waits for other
                           workers' conversions of the same rows) */
    AGMM_TEV_GEMM,      /* one GEMM call */
    AGMM_TEV_KINDS
} agmm_tev_kind_t;

/* What a wait or publish is about (the signal's role). */
typedef enum {
    AGMM_TSIG_TILE = 0, /* tile (src, t) arrived */
    AGMM_TSIG_SHARD,    /* a whole shard arrived (baseline) */
    AGMM_TSIG_ACK,      /* a peer finished reading the previous round */
    AGMM_TSIG_OTHER,
    AGMM_TSIG_KINDS
} agmm_tsig_t;

/* One event: 64 bytes, one cache line. Times are CLOCK_MONOTONIC ns while
 * recording; gather adds the rank's clock offset. */
typedef struct agmm_tev {
    uint64_t t0, t1;      /* begin, end (t1 == t0 for instants) */
    int64_t value;        /* PUT: bytes; WAIT, PUBLISH: epoch; GEMM: rows */
    uint32_t round;       /* 1-based round of this trace */
    int32_t peer;         /* PUT, PUBLISH: destination; WAIT: the rank expected
                             to raise the signal; CONVERT, GEMM: source rank, or
                             -1 when tile0/tile1 are global tile indices */
    int32_t tile0, tile1; /* tiles [tile0, tile1) of `peer` (-1: none) */
    int32_t j0, j1;       /* GEMM: column blocks [j0, j1) */
    int16_t rank, lane;   /* filled by gather */
    uint8_t kind;         /* agmm_tev_kind_t */
    uint8_t sched;        /* agmm_schedule_t */
    uint8_t sig;          /* agmm_tsig_t (WAIT, PUBLISH) */
    uint8_t pad_;
} agmm_tev_t;

typedef struct agmm_trace_buf {
    /* Written by the worker thread owning the buffer in this round. */
    _Alignas(AGMM_CACHE_LINE) agmm_tev_t *ev;
    size_t n, cap;
    uint64_t dropped;
    const agmm_trace_t *trace; /* round and schedule of the running round */
} agmm_trace_buf_t;

/* The calling thread's buffer; NULL when not tracing. */
extern _Thread_local agmm_trace_buf_t *agmm_trace_self;

typedef enum {
    AGMM_TRACE_GEMM_WORKER,
    AGMM_TRACE_COMM_WORKER
} agmm_trace_role_t;

/* Shape facts the writers and the summary need (a copy: they outlive the
 * plan's use). */
typedef struct agmm_trace_meta {
    int nranks, gemm_workers, comm_workers;
    int64_t k, n, tile_m, tile_n, col_blocks, total_tiles;
    int64_t *m_local;   /* [P] */
    int64_t *tiles;     /* [P] */
    int64_t *tile_base; /* [P + 1] */
    const char *dtype;
} agmm_trace_meta_t;

/* What the owner of a trace (a plan, in ops/) hands the recorder: the
 * trace never sees the plan itself. `meta` is copied; `events_per_round`
 * bounds the events one lane records in one round (the schedules know
 * what they emit); detach(owner, t) is called once when recording stops
 * (gather or destroy) so the owner stops handing out the trace. */
typedef struct agmm_trace_source {
    agmm_world_t *world;
    int rank;
    int converts; /* inputs are converted to fp32 (dtype is not fp32) */
    const agmm_trace_meta_t *meta;
    size_t events_per_round;
    void (*detach)(void *owner, agmm_trace_t *t);
    void *owner;
} agmm_trace_source_t;

/* A recorder for `max_rounds` rounds of `src` (the owner checks its own
 * state first; agmm_trace_create in ops/ does). */
agmm_status_t agmm_trace_new(const agmm_trace_source_t *src, int max_rounds,
                             agmm_trace_t **out);

/* Recording stops: calls the owner's detach once; the trace stays
 * readable. */
void agmm_trace_detach(agmm_trace_t *t);

struct agmm_trace {
    /* Who records into this trace; both NULL once recording stopped. */
    void (*detach)(void *owner, agmm_trace_t *t);
    void *owner;
    agmm_world_t *world;
    int rank;
    agmm_trace_meta_t meta;
    /* The running round: written by the thread calling agmm_plan_run
     * before it starts the workers, read by them (thread creation orders
     * the two). */
    uint32_t round;
    uint8_t sched;
    int converts; /* inputs are converted to fp32 (dtype is not fp32) */
    int nbufs;    /* gemm_workers + comm_workers */
    agmm_trace_buf_t *bufs;

    /* After gather, on rank 0 (elsewhere all stays empty). */
    int gathered;
    agmm_tev_t *all; /* every rank's events, times on rank 0's clock */
    size_t nall;
    uint64_t dropped;          /* over all ranks */
    uint64_t origin;           /* earliest t0: time zero of the outputs */
    int rounds;                /* rounds seen */
    agmm_trace_summary_t *sum; /* [rounds * P], round-major */
};

/* ------------------------------------------------------------- hooks */

void agmm_trace_record(agmm_trace_buf_t *b, const agmm_tev_t *e);

/* Point the calling (worker) thread at its buffer, or at none. */
void agmm_trace_thread(agmm_trace_t *t, agmm_trace_role_t role, int index);

/* The start time of an event, 0 when not tracing. */
static inline uint64_t agmm_trace_clock(void)
{
    return __builtin_expect(agmm_trace_self != NULL, 0) ? agmm_now_ns() : 0;
}

void agmm_trace_put_slow(uint64_t t0, int peer, int64_t tile0, int64_t tile1,
                         size_t bytes, uint64_t epoch, agmm_tsig_t sig);
/* A put of tiles [tile0, tile1) (-1, -1: a whole shard) to `peer` that
 * started at t0 and ended, with its signal raised to `epoch`, now. */
static inline void agmm_trace_put(uint64_t t0, int peer, int64_t tile0,
                                  int64_t tile1, size_t bytes, uint64_t epoch,
                                  agmm_tsig_t sig)
{
    if (__builtin_expect(agmm_trace_self != NULL, 0))
        agmm_trace_put_slow(t0, peer, tile0, tile1, bytes, epoch, sig);
}

void agmm_trace_publish_slow(int peer, int64_t index, uint64_t epoch,
                             agmm_tsig_t sig);
/* A signal without data raised on `peer` just now. */
static inline void agmm_trace_publish(int peer, int64_t index, uint64_t epoch,
                                      agmm_tsig_t sig)
{
    if (__builtin_expect(agmm_trace_self != NULL, 0))
        agmm_trace_publish_slow(peer, index, epoch, sig);
}

agmm_status_t agmm_trace_wait_slow(agmm_world_t *w, const _Atomic uint64_t *sig,
                                   uint64_t at_least, double deadline,
                                   const agmm_wait_what_t *what,
                                   agmm_tsig_t kind);
/* agmm_signal_wait, recorded as a WAIT when the signal was not raised yet
 * at the first look. */
static inline agmm_status_t agmm_traced_wait(agmm_world_t *w,
                                             const _Atomic uint64_t *sig,
                                             uint64_t at_least, double deadline,
                                             const agmm_wait_what_t *what,
                                             agmm_tsig_t kind)
{
    if (__builtin_expect(agmm_trace_self == NULL, 1))
        return agmm_signal_wait(w, sig, at_least, deadline, what);
    return agmm_trace_wait_slow(w, sig, at_least, deadline, what, kind);
}

void agmm_trace_gemm_slow(uint64_t t_conv, uint64_t t_gemm, int src,
                          int64_t tile0, int64_t tile1, int64_t j0, int64_t j1,
                          int64_t rows);
/* Rows of tiles [tile0, tile1) of `src` (-1: global tiles) converted from
 * t_conv to t_gemm, then multiplied by column blocks [j0, j1) until now. */
static inline void agmm_trace_gemm(uint64_t t_conv, uint64_t t_gemm, int src,
                                   int64_t tile0, int64_t tile1, int64_t j0,
                                   int64_t j1, int64_t rows)
{
    if (__builtin_expect(agmm_trace_self != NULL, 0))
        agmm_trace_gemm_slow(t_conv, t_gemm, src, tile0, tile1, j0, j1, rows);
}

/* Round boundaries (run.c, the thread calling agmm_plan_run). begin
 * returns the start time (0 without a trace). */
uint64_t agmm_trace_round_begin(agmm_trace_t *t, agmm_schedule_t sched);
void agmm_trace_round_end(agmm_trace_t *t, uint64_t t0, uint64_t epoch);

/* ----------------------------------------------- gather and outputs */

/* Collective: the nanoseconds to add to this rank's CLOCK_MONOTONIC to
 * get rank 0's. 0 for every rank on rank 0's host (one clock per host);
 * ranks on other hosts read their clock right after a common barrier and
 * take the difference to rank 0's reading (good to the barrier's exit
 * skew, microseconds on a fast network). */
agmm_status_t agmm_trace_clock_offset(agmm_world_t *w, int64_t *offset_ns);

/* Per (round, rank) summaries of t->all into t->sum (rank 0, gather). */
agmm_status_t agmm_trace_summarize(agmm_trace_t *t);

/* Summary of one rank's events of one round (events of other ranks or
 * rounds in the list are ignored). Pure: tests call it directly. */
void agmm_trace_summarize_one(const agmm_tev_t *ev, size_t n, int rank,
                              uint32_t round, int gemm_workers,
                              agmm_trace_summary_t *out);

agmm_status_t agmm_trace_write_json(const agmm_trace_t *t, const char *path);
agmm_status_t agmm_trace_write_svg(const agmm_trace_t *t, const char *path);

const char *agmm_tev_kind_name(int kind);
const char *agmm_tsig_name(int sig);
const char *agmm_trace_sched_name(int sched);
/* "gemm" or "comm" and the index within the role, for a lane. */
const char *agmm_trace_lane_role(const agmm_trace_meta_t *m, int lane,
                                 int *index);

/* Files appear complete or not at all: written under a temporary name in
 * the same directory, renamed over `path` on success, removed on failure. */
typedef struct agmm_outfile {
    FILE *f;
    char tmp[4096];
    const char *path;
} agmm_outfile_t;
agmm_status_t agmm_outfile_open(agmm_outfile_t *o, const char *path);
agmm_status_t agmm_outfile_commit(agmm_outfile_t *o);

#endif
