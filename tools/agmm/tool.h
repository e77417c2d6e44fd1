/* The running side of the agmm tool: starting the ranks (forked, or the
 * MPI world) and the command each runs (dispatch.c), each rank's plan,
 * inputs and round arguments (rank.c), tracing (trace.c), the header
 * (describe.c) and the commands themselves (run.c, bench.c, model.c,
 * cleanup.c). The description and shapes they share: cli/desc.h. */
#ifndef AGMM_TOOL_H
#define AGMM_TOOL_H

#include <signal.h>
#include <time.h>

#include "agmm.h"
#include "cli/cli.h"
#include "cli/desc.h"

static inline double agmm_tool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Forked ranks: the SIGINT/SIGTERM that stopped the run, else 0. */
extern volatile sig_atomic_t agmm_tool_stop;
/* Whether the run was stopped by a signal: agmm_tool_stop, or the world
 * aborted because the launcher was interrupted. */
int agmm_tool_stopped(void);

/* Start the ranks on the chosen transport and run the command on each;
 * returns the process exit code. */
int agmm_tool_launch(const agmm_cli_t *cli);

/* The whole tool on one rank of an MPI world (mpirun -np P agmm ...):
 * start MPI, parse the options (only rank 0 prints), run the command on
 * the MPI world, finish. Returns the process exit code. */
int agmm_tool_mpi_main(int argc, char **argv, agmm_cli_t *cli);

/* Per-rank state every command sets up the same way: the plan with its
 * weight, this rank's shard and its output. */
typedef struct agmm_tool_rank {
    agmm_world_t *world;
    const agmm_cli_t *cli;
    agmm_plan_t *plan;
    int rank;
    /* In the input dtype: this rank's A (agmm_tool_a_elems: ag-gemm
     * [m_local[rank], k], gemm-rs [M, K_r]) and its weight ([k or K_r, n]:
     * ws[0]); C: agmm_tool_c_rows rows of n (cs[0]). */
    void *a, *w;
    void *c;
    void *ws[AGMM_MAX_WEIGHTS]; /* weight i: [k, n_list[i]] (ag-gemm) */
    void *cs[AGMM_MAX_WEIGHTS]; /* its output: [M, n_list[i]], --out-dtype */
    /* a 16-bit output: its fp32 copy for the check (epilogue_check.h),
     * else NULL */
    float *c32s[AGMM_MAX_WEIGHTS];
    /* --bias: weight i's [n_i] fp32 bias (stream AGMM_STREAM_BIAS, id i:
     * the same on every rank), else NULL */
    float *biases[AGMM_MAX_WEIGHTS];
    int64_t m_rows[AGMM_CLI_MAX_RANKS]; /* the rows of the current round */
    /* run with the check (ag-gemm): gather(A) handed back, [M, k] */
    void *gathered;
    /* int8 (else NULL): this rank's A scales (agmm_tool_a_scales of them),
     * weight i's scales ([n_i] per column, or [1]), and with `gathered`
     * the gathered rows' scales [M] */
    float *a_scale;
    float *w_scales[AGMM_MAX_WEIGHTS];
    float *gathered_scale;
    /* --weight-dtype int8|int4: ws[i] holds weight i's plain layout's q,
     * w_scales[i] its group scales, w_zeros[i] its zero points
     * (--zero-point, else NULL) (inputs.h: agmm_inputs_fill_wq). */
    uint8_t *w_zeros[AGMM_MAX_WEIGHTS];
    agmm_trace_t *trace; /* --trace / --trace-svg, else NULL */
    char *trace_json;    /* rank 0, --json: the "trace" member, or NULL */
} agmm_tool_rank_t;

/* Create the plan and inputs; 0 on success, else an exit code (the error
 * was printed). */
int agmm_tool_setup(agmm_world_t *world, const agmm_cli_t *cli,
                    agmm_tool_rank_t *t);
/* The arguments of round `round` (timed rounds 0, 1, ...; warmup rounds
 * negative): every weight's output, and with --m-local-per-round the rows
 * of every rank (t->m_rows). */
void agmm_tool_round_args(agmm_tool_rank_t *t, agmm_schedule_t schedule,
                          int round, agmm_run_args_t *args);
/* Set weight i of t's inputs as weight plan_i of `plan` (int8: with its
 * scales, agmm_plan_set_weight_scaled), and its bias with --bias. */
agmm_status_t agmm_tool_set_weight(const agmm_tool_rank_t *t, agmm_plan_t *plan,
                                   int plan_i, int i);
/* Make this rank's shard for round `round` (inputs change every round;
 * int8: made in fp32 and quantized per row or per shard). */
int agmm_tool_fill_shard(agmm_tool_rank_t *t, int round);
void agmm_tool_teardown(agmm_tool_rank_t *t);

/* --trace / --trace-svg (trace.c). begin: record the next `rounds`
 * rounds if asked. end (collective): gather and write the files; with
 * --json rank 0 keeps the "trace" member in t->trace_json. Both return 0
 * or an exit code. print (rank 0, text mode): the summary, every round if
 * per_round, else per-schedule medians. */
int agmm_tool_trace_begin(agmm_tool_rank_t *t, int rounds);
int agmm_tool_trace_end(agmm_tool_rank_t *t);
void agmm_tool_trace_print(const agmm_tool_rank_t *t, int per_round);

/* The commands, run on every rank. Return the rank's exit code. */
int agmm_tool_run(agmm_world_t *world, const agmm_cli_t *cli);
int agmm_tool_bench(agmm_world_t *world, const agmm_cli_t *cli);

/* The commands that start no ranks; they return the exit code.
 * `agmm cleanup`: remove this user's leftover segments (cleanup.c). */
int agmm_tool_cleanup(const agmm_cli_t *cli);
/* `agmm model`: predict one round (model.c). */
int agmm_tool_model(const agmm_cli_t *cli);

/* How long this process's agmm_plan_create took (rank.c; the header and
 * --json compare the GEMM path's measurement with it). */
extern double agmm_tool_create_ms;

/* One-line description of the configuration (rank 0 prints it;
 * describe.c, as are the two below). */
void agmm_tool_describe(const agmm_cli_t *cli, agmm_world_t *world,
                        const agmm_plan_t *plan, FILE *out);
/* ,"gemm":{"engine","version","impl","threads_per_call"} of the plan. */
void agmm_tool_json_gemm(const agmm_plan_t *plan);

/* " [emulated link: G Gbit/s, L us]" when the link is emulated, else "":
 * the first header line of an emulated run ends with it (once). */
const char *agmm_tool_link_tag(const agmm_cli_t *cli);

#endif
