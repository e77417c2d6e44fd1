/*
 * agmm_model.h: a performance model of one round of a plan (issue 25).
 *
 * From a machine description (GEMM rate per row count, copy and reduction
 * bandwidth on one host, the link between hosts, ranks per host, workers
 * per rank) and a plan's description (agmm_plan_desc_t: operation, rows,
 * k, n, tiles, dtypes), agmm_model_predict() gives the time of one round of
 * the fused and of the baseline schedule and what bounds each (the GEMM,
 * the link, the relay's forwarding, the copies, per-round overheads). It is
 * a discrete-event simulation of the round over the puts the plan declares
 * (tile by tile: when each tile arrives against the GEMM of the tiles
 * before it), so it answers for rank counts nobody can run here.
 *
 * Nothing here runs a round, forks or opens a window, except
 * agmm_model_measure(), which times this machine's GEMM engine and copies
 * (briefly, as the path choice does) to fill a description. See
 * docs/model.md for the model and docs/history/ for its check
 * against runs.
 *
 * Thread safety: every function is reentrant (no global state).
 */
#ifndef AGMM_MODEL_H
#define AGMM_MODEL_H

#include "agmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How ranks reach each other in the modelled world. */
typedef enum agmm_model_transport {
    /* One host, shared memory: a put is a copy by the putting thread. */
    AGMM_MODEL_SHM = 0,
    /* One host, shared memory with the link emulator
     * (agmm_launch_opts_t.link_gbps): one wire per (rank, peer) pair, each
     * at link_gbps with link_latency_us, a delivery thread per rank doing
     * the copies. */
    AGMM_MODEL_LINK = 1,
    /* MPI: ranks of one host over shared memory (when ranks_per_host > 1),
     * hosts over one full-duplex link each (link_gbps, link_latency_us,
     * msg_overhead_us per message), the all-gather relayed per host when
     * `relay` is set (docs/design.md, "Relaying the all-gather"). */
    AGMM_MODEL_MPI = 2
} agmm_model_transport_t;

/* What a schedule's time is bound by: the resource on its critical path. */
typedef enum agmm_model_bound {
    AGMM_MODEL_BOUND_GEMM = 0,     /* the GEMM workers never wait */
    AGMM_MODEL_BOUND_LINK = 1,     /* waits for bytes on a link */
    AGMM_MODEL_BOUND_RELAY = 2,    /* waits for a relay's forwarding */
    AGMM_MODEL_BOUND_COPY = 3,     /* waits for copies on one host */
    AGMM_MODEL_BOUND_REDUCE = 4,   /* gemm-rs/ar: the sums of partials */
    AGMM_MODEL_BOUND_OVERHEAD = 5, /* per-round, per-peer, per-call costs */
    AGMM_MODEL_BOUND_COUNT
} agmm_model_bound_t;

/* A measured GEMM rate: one engine call of `rows` rows (x the worker's
 * columns x k) runs at `gflops` (2 m n k / s, per GEMM worker). */
typedef struct agmm_model_rate {
    int64_t rows;  /* >= 1 */
    double gflops; /* > 0 */
} agmm_model_rate_t;

enum { AGMM_MODEL_MAX_RATES = 24 };

typedef struct agmm_model_machine {
    agmm_model_transport_t transport;
    int hosts;          /* >= 1; SHM and LINK: 1 */
    int ranks_per_host; /* >= 1; hosts * ranks_per_host = the plan's nranks */
    /* GEMM: the rate of one call by its row count, for the plan's dtype and
     * path, sorted by rows; a call of other rows is interpolated in log
     * rows (clamped at the ends). Plus a fixed cost per call. */
    int n_rates;
    agmm_model_rate_t rates[AGMM_MODEL_MAX_RATES];
    double call_us; /* per engine call, >= 0 */
    /* Memory rates on one host, GB/s (1e9 bytes/s): a copy by one thread into a
     * peer's window (a put on shm, a forward by a relay); the fp32 sum of one
     * partial into C (gemm-rs, gemm-ar), per byte of partial read; the
     * dtype conversion of gathered rows (0: none needed). */
    double copy_gbs;
    double reduce_gbs;
    double convert_gbs;
    /* Between hosts (MPI) or per emulated wire (LINK): Gbit/s (> 0 when
     * used) and one-way latency; the cost to post one message. */
    double link_gbps;
    double link_latency_us;
    double msg_us;
    /* Per round, both schedules: a fixed cost (workers start and join,
     * begin/end) and a cost per peer (its ack, its rows cell, its bulk
     * signal), measured on this host (docs/model.md); the fused
     * schedules' cost per tile and peer is tile_us (below). */
    double round_us;
    double peer_us;
    int relay; /* MPI with several hosts: relay the all-gather per host */
    /* Cores of one host the ranks share, >= 0; 0: every thread has its
     * own. With fewer cores than the host's GEMM workers with columns
     * (ranks_per_host x those of gemm_workers), every thread's work (GEMM,
     * copies, sums, conversions) takes longer by their ratio. */
    int cores_per_host;
    /* The fused schedules' cost of one signalled tile put and its wait,
     * microseconds, >= 0: per (tile, peer), half to the putting thread
     * after each tile put (its release store and wake), half to the
     * waiting thread after each wait on a tile (ag-gemm's tiles, gemm-rs
     * and gemm-ar's partials, gemm-ar's reduced tiles). The baselines do
     * not pay it (one bulk put per peer, in peer_us). Appended last to
     * keep the layout of the fields before it (docs/model.md). */
    double tile_us;
    /* The weight-streaming floor, GB/s (1e9 bytes/s), >= 0; 0: none (the
     * weight stays in the caches). When > 0 every GEMM call takes at least
     * the bytes of weight it reads (its columns x its k of the prepared
     * weight: packed values and group scales and zero points for a
     * quantized one) over this rate, per GEMM worker: a rank's weight that
     * does not fit the last-level cache with the other ranks' of its host
     * streams from DRAM on every call (ag-gemm's fused schedule reads it
     * once per tile, its baseline once per round). agmm_model_measure sets
     * it to this host's probe (gemm/dram.h) when the weight streams, else
     * 0. Appended last, as tile_us (docs/model.md). */
    double dram_gbs;
} agmm_model_machine_t;

/* Defaults for everything but the rates and shape: one host, shm, no
 * link, rates a typical host has (documented in docs/model.md). */
void agmm_model_machine_init(agmm_model_machine_t *m);

/* Check a description against a plan's: the one-line error names the
 * field and what is allowed (AGMM_ERR_INVALID, agmm_last_error()). */
agmm_status_t agmm_model_check(const agmm_model_machine_t *m,
                               const agmm_plan_desc_t *desc);

/* One schedule's predicted round. */
typedef struct agmm_model_sched {
    double time_s;            /* the round, slowest rank */
    agmm_model_bound_t bound; /* what its critical path waited for most */
    double gemm_s;            /* GEMM (and its calls) of the slowest rank */
    double comm_s;            /* the communication alone, as if no GEMM ran */
    double exposed_s; /* time the GEMM workers waited (time_s - gemm_s) */
    /* Busy time of the most loaded resource of each kind (a link, a relay,
     * a copying thread, a reducer), indexed by agmm_model_bound_t. */
    double busy_s[AGMM_MODEL_BOUND_COUNT];
} agmm_model_sched_t;

typedef struct agmm_model_result {
    agmm_model_sched_t fused;
    agmm_model_sched_t baseline;
    double ratio; /* fused.time_s / baseline.time_s */
    /* The fused round's last remote tile at the slowest rank: when it
     * arrived, and how long that rank's GEMM of everything before it took
     * (the overlap pays while the first is below the second). */
    double last_arrival_s;
    double gemm_before_last_s;
    int64_t events; /* events the simulation processed */
} agmm_model_result_t;

/* Predict one round of `desc` (its op, rows, k, n, tiles, dtypes, workers)
 * on machine `m`. Pure: runs nothing. desc->nranks must equal
 * m->hosts * m->ranks_per_host. */
agmm_status_t agmm_model_predict(const agmm_model_machine_t *m,
                                 const agmm_plan_desc_t *desc,
                                 agmm_model_result_t *out);

/* Fill m's GEMM rates (the row counts `desc`'s rounds call, on the engine
 * and path a plan of desc would run: a quantized weight's wq engine, agmm's
 * bf16-weight kernel where a bf16 plan would pick it), copy, reduce and
 * convert rates by timing them on this host, in about `budget_s` seconds
 * (<= 0: 1 s), and dram_gbs (the DRAM read rate when the weight of
 * m->ranks_per_host ranks outgrows the last-level cache, else 0); the rest
 * of m is left as given. Local: no world, no ranks. */
agmm_status_t agmm_model_measure(agmm_model_machine_t *m,
                                 const agmm_plan_desc_t *desc, double budget_s);

const char *agmm_model_bound_name(agmm_model_bound_t b);
const char *agmm_model_transport_name(agmm_model_transport_t t);

#ifdef __cplusplus
}
#endif

#endif /* AGMM_MODEL_H */
