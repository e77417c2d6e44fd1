/*
 * The command-line parser of the `agmm` tool.
 *
 *   agmm run   [options]   one round (by default) checked against a reference
 *   agmm bench [options]   warmup + timed rounds
 *   agmm cleanup [--job NAME]  remove this user's leftover segments
 *   agmm model [options]   predict a round on a described (or this) machine
 *
 * agmm_cli_parse() reads argv into an agmm_cli_t, validates every option and
 * the combinations (list lengths, byte-count overflow, core budget) and never
 * exits the process. Every error is one line on `err`, starting "agmm: " and
 * naming the option. See docs/cli.md.
 *
 * Implemented by options.c (the option table), parse.c, checks.c (with
 * the checks options.h lists) and usage.c; options.h describes the table.
 * What the parsed options describe (the plan description, the per-rank
 * shapes) is desc.h.
 */
#ifndef AGMM_CLI_H
#define AGMM_CLI_H

#include "agmm.h"
#include "agmm_model.h"
#include <stdint.h>
#include <stdio.h>

#define AGMM_CLI_MAX_RANKS 1024

typedef enum {
    AGMM_CMD_RUN,
    AGMM_CMD_BENCH,
    AGMM_CMD_CLEANUP,
    AGMM_CMD_MODEL
} agmm_cmd_t;

/* What `agmm bench --mode` times (a set; `all` is every one). */
enum {
    AGMM_BENCH_FUSED = 1,
    AGMM_BENCH_BASELINE = 2,
    AGMM_BENCH_AUTO = 4,
    AGMM_BENCH_GEMM_ONLY = 8, /* with the monolithic GEMM alongside */
    AGMM_BENCH_COMM_ONLY = 16,
    /* Set by the word `all` only: every mode that applies (under MPI all
     * but gemm-only), where a gemm-only named alone is refused. */
    AGMM_BENCH_ALL_WORD = 32,
    AGMM_BENCH_ALL = 31 | AGMM_BENCH_ALL_WORD,
};

/* What the command line says. The ranges, defaults and help text of each
 * option are in one place: the option table in options.c (the defaults the
 * library also has come from agmm_plan_desc_init()). */
typedef struct agmm_cli {
    agmm_cmd_t cmd;
    int ranks; /* --ranks */
    /* --m-local: one value = every rank, else exactly `ranks` values */
    int64_t m_local[AGMM_CLI_MAX_RANKS];
    /* values given to --m-local (0: not given); after a successful parse
     * m_local[0..ranks-1] is filled */
    int m_local_count;
    int64_t k, n; /* --k, --n (n: the first weight's columns) */
    /* --n N[,N...]: columns of each weight (one gather, several weights) */
    int64_t n_list[AGMM_CLI_MAX_RANKS];
    /* values given to --n; after a successful parse the weights (>= 1) */
    int n_count;
    int64_t n_sum; /* after a successful parse: sum of n_list */
    /* --m-local-per-round: round i's rows per rank (cycled; each rank
     * min(value, its --m-local)) */
    int64_t rows_per_round[AGMM_CLI_MAX_RANKS];
    /* values given (0: every round has --m-local rows) */
    int rows_per_round_count;
    agmm_op_t op; /* --op (default ag-gemm) */
    /* --k-local (gemm-rs, gemm-ar): the inner-dimension split, one value per
     * rank */
    int64_t k_local[AGMM_CLI_MAX_RANKS];
    /* values given to --k-local (0: not given: k split evenly) */
    int k_local_count;
    int64_t tile_m, tile_n;              /* --tile-m, --tile-n */
    agmm_dtype_t dtype;                  /* --dtype */
    agmm_gemm_engine_kind_t gemm_engine; /* --gemm-engine */
    agmm_gemm_path_t gemm_path;          /* --gemm-path */
    agmm_weights_t weights;              /* --weights */
    /* The epilogue: --bias (a random per-column bias per weight, the same
     * on every rank), --activation, --out-dtype (C's dtype) */
    int bias;
    agmm_activation_t activation;
    agmm_dtype_t out_dtype;
    /* --a-scale row|tensor, --w-scale col|tensor: int8's scale layouts
     * (CHANNEL: per row of A / per column of W); only with --dtype int8 */
    agmm_scale_t a_scale, w_scale;
    int a_scale_set, w_scale_set; /* given explicitly */
    /* --weight-dtype same|int8|int4 (quantized W: made in fp32, quantized
     * with agmm_quantize_weight, run by the wq engine), --group-size
     * 0|32|64|128 (0: all of the rank's k), --zero-point (asymmetric) */
    agmm_wdtype_t weight_dtype;
    int group_size, group_size_set;
    int zero_point;
    agmm_aquant_t a_quant; /* --a-quant */
    /* --comm-cores, --gemm-cores; by default (agmm_cli_resolve_cores) the
     * library's agmm_default_workers: comm 1 if 2 x ranks <= usable cores
     * else 0, GEMM max(1, usable / ranks - comm) */
    int comm_cores, gemm_cores;
    int comm_cores_set, gemm_cores_set; /* given explicitly */
    int oversubscribe;                  /* --oversubscribe */
    double timeout_s;                   /* --timeout */
    /* --rounds, --warmup (defaults differ for run and bench) */
    int rounds, warmup;
    uint64_t seed; /* --seed */
    int json;      /* --json */
    /* run: on by default; --no-check turns it off (bench: off, never
     * checks) */
    int check;
    int verbose; /* --verbose / -v (repeatable: counts) */
    /* --trace FILE.json: Chrome trace events (NULL: off) */
    const char *trace_json;
    /* --trace-svg FILE.svg: the timeline drawn (NULL: off) */
    const char *trace_svg;
    agmm_schedule_t schedule; /* --schedule */
    int schedule_set;
    /* bench: --mode (AGMM_BENCH_*; --schedule S alone means --mode S) */
    unsigned bench_modes;
    /* bench: --weight-sets L (1..AGMM_CLI_MAX_WEIGHT_SETS): L plans with
     * distinct weights, one per timed call in turn (bench_sets.c) */
    int weight_sets;
    double link_gbps;       /* --link-gbps (0: no link emulation) */
    double link_latency_us; /* --link-latency-us; needs --link-gbps */
    /* cores this process may use: its CPU affinity (sched_getaffinity:
     * taskset, cpusets, MPI binding), at most the online ones (>= 1) */
    int usable_cores;
    int online_cores; /* sysconf(_SC_NPROCESSORS_ONLN) at parse time (>= 1) */
    /* MPI rank bound to fewer cores than online: the budget and the
     * defaults count this rank alone (else all ranks_here share them) */
    int cores_own;
    int64_t m_total; /* after a successful parse: sum of m_local (M) */
    int ranks_set;   /* --ranks given explicitly */
    /* --transport shm|mpi; default: mpi under an MPI launcher */
    int transport_mpi;
    /* ranks sharing this host's cores and memory (= ranks on shm) */
    int ranks_here;
    const char *job; /* cleanup --job NAME (NULL: every job) */
    /* --bind auto|none|LIST (NULL: auto; placement.c) */
    const char *bind;
    /* agmm model: the machine (model_checks.c resolves them; model.c).
     * After a successful parse hosts * ranks_per_host == ranks and
     * model_transport is an agmm_model_transport_t. */
    int hosts, hosts_set;                     /* --hosts */
    int ranks_per_host, ranks_per_host_set;   /* --ranks-per-host */
    int model_transport, model_transport_set; /* model's --transport */
    int relay;                                /* --relay on|off (1: on) */
    /* --gemm-gflops G (one rate) or --gemm-rates ROWS:GFLOPS,...: after a
     * successful parse in gemm_rates[0..n_gemm_rates-1] (0: measure) */
    double gemm_gflops;
    int gemm_gflops_set;
    const char *gemm_rates_arg;
    agmm_model_rate_t gemm_rates[AGMM_MODEL_MAX_RATES];
    int n_gemm_rates;
    /* --call-us, --copy-gbs, --reduce-gbs, --convert-gbs, --msg-us,
     * --round-us, --peer-us, --tile-us, --dram-gbs and whether each was
     * given */
    double call_us, copy_gbs, reduce_gbs, convert_gbs, msg_us, round_us,
        peer_us, tile_us, dram_gbs;
    int call_us_set, copy_gbs_set, reduce_gbs_set, convert_gbs_set, msg_us_set,
        round_us_set, peer_us_set, tile_us_set, dram_gbs_set;
    double measure_budget_s; /* --measure-budget (seconds) */
} agmm_cli_t;

/* The upper bound of each core option (per rank): the library's limit on
 * workers per rank (agmm_plan_desc_check). */
#define AGMM_CLI_MAX_CORES       1024
#define AGMM_CLI_MAX_WEIGHT_SETS 64 /* --weight-sets */

/* Parses argv. Returns 0: run the command; 2: bad input (one line printed to
 * err: "agmm: --option: what is allowed (got 'X')"); -1: help or version was
 * printed to out, exit 0. Never exits the process itself. Warnings (idle
 * cores) go to err with "agmm: warning: " and the return is still 0.
 * Does not modify argv; safe to call repeatedly in one process. */
int agmm_cli_parse(int argc, char **argv, agmm_cli_t *cli, FILE *out,
                   FILE *err);

/* As agmm_cli_parse, for a process of an MPI world of `world_size` ranks,
 * `ranks_here` of them on this host: --ranks defaults to world_size and
 * must equal it if given; the core budget and defaults count ranks_here. */
int agmm_cli_parse_mpi(int argc, char **argv, agmm_cli_t *cli, FILE *out,
                       FILE *err, int world_size, int ranks_here);

/* Whether the command line runs on MPI: --transport mpi, or no --transport
 * and an MPI launcher detected. Looks at argv only (before MPI starts). */
int agmm_cli_wants_mpi(int argc, char **argv);

/* The usage text for `agmm run --help` / `agmm bench --help`. With a
 * non-NULL cli, the default core counts are resolved for its ranks and
 * explicit core options; with NULL, for the defaults on this host. */
void agmm_cli_usage(FILE *out, const agmm_cli_t *cli_or_null, agmm_cmd_t cmd);

/* The top-level usage text (`agmm --help`, or `agmm` with no command). */
void agmm_cli_usage_top(FILE *out);

/* Fill comm_cores / gemm_cores that were not given explicitly from the
 * ranks and usable_cores (agmm_default_workers). agmm_cli_parse() calls it. */
void agmm_cli_resolve_cores(agmm_cli_t *cli);

/* Reads MemAvailable from /proc/meminfo. Returns 2 and prints one line
 * ("agmm: --m-local/--k/--n: the plan needs 12.5 GiB on 2 ranks but only
 * 3.2 GiB is available") if ranks * bytes_per_rank exceeds it; 0 otherwise,
 * also when /proc/meminfo cannot be read. */
int agmm_cli_check_memory(const agmm_cli_t *cli, uint64_t bytes_per_rank,
                          FILE *err);

#endif /* AGMM_CLI_H */
