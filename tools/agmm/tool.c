/* The tool's ranks and their plans (tool.h): the plan description and
 * per-rank sizes the options ask for, the forked ranks (agmm_launch, a
 * stop on SIGINT/SIGTERM) or the MPI world's, each rank's plan, weights
 * and shards, and the round arguments (the configuration the commands
 * print is describe.c). */
#include "tool.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agmm_ext.h" /* agmm_blas_*: the BLAS in reports */
#include "inputs.h"
#include "placement.h"
#include "report.h"

void agmm_tool_desc(const agmm_cli_t *cli, agmm_plan_desc_t *d)
{
    agmm_plan_desc_init(d);
    d->nranks = cli->ranks;
    d->m_local = cli->m_local;
    d->k = cli->k;
    d->n = cli->n;
    if (cli->n_count > 1) {
        d->n_weights = cli->n_count;
        d->n_list = cli->n_list;
    }
    d->tile_m = cli->tile_m;
    d->tile_n = cli->tile_n;
    d->dtype = cli->dtype;
    d->gemm_engine = cli->gemm_engine;
    d->gemm_path = cli->gemm_path;
    d->weights = cli->weights;
    d->comm_workers = cli->comm_cores;
    d->gemm_workers = cli->gemm_cores;
    d->timeout_s = cli->timeout_s;
    d->op = cli->op;
    d->a_scale = cli->a_scale;
    d->w_scale = cli->w_scale;
    d->bias = cli->bias;
    d->activation = cli->activation;
    d->out_dtype = cli->out_dtype;
    d->weight_dtype = cli->weight_dtype;
    d->group_size = agmm_tool_wq_bits(cli) ? cli->group_size : 0;
    d->weight_zero_point = agmm_tool_wq_bits(cli) ? cli->zero_point : 0;
    d->k_local =
        agmm_tool_split_k(cli) && cli->k_local_count > 0 ? cli->k_local : NULL;
}

int64_t agmm_tool_k_part(const agmm_cli_t *cli, int r)
{
    agmm_plan_desc_t d;
    int64_t k0, kp;
    agmm_tool_desc(cli, &d);
    return agmm_plan_desc_k_part(&d, r, &k0, &kp) == AGMM_OK ? kp : -1;
}

/* One rank's GEMM flops per round, the mean over ranks: 2*M*K*N for
 * all-gather + GEMM (every rank multiplies the whole gathered A); for GEMM +
 * reduce-scatter (or all-reduce) the ranks share K, so 2*M*(K/P)*N. */
double agmm_tool_flop_per_rank(const agmm_cli_t *cli)
{
    double k = (double)cli->k;
    if (agmm_tool_split_k(cli)) k /= (double)cli->ranks;
    return 2.0 * (double)cli->m_total * k *
           (double)(cli->n_sum > 0 ? cli->n_sum : cli->n);
}

int64_t agmm_tool_round_rows(const agmm_cli_t *cli, int round, int r)
{
    int n = cli->rows_per_round_count;
    if (n == 0) return cli->m_local[r];
    int i = round >= 0 ? round % n
                       : (n - 1 - (-1 - round) % n); /* warmup: from the end */
    int64_t v = cli->rows_per_round[i];
    return v < cli->m_local[r] ? v : cli->m_local[r];
}

void agmm_tool_round_rs_rows(const agmm_cli_t *cli, int round, int r,
                             int64_t *M, int64_t *row0, int64_t *rows)
{
    *M = *row0 = 0;
    for (int p = 0; p < cli->ranks; p++) {
        int64_t m = agmm_tool_round_rows(cli, round, p);
        if (p < r) *row0 += m;
        if (p == r) *rows = m;
        *M += m;
    }
    if (cli->op == AGMM_OP_GEMM_AR) { /* every rank has every row */
        *row0 = 0;
        *rows = *M;
    }
}

void agmm_tool_round_args(agmm_tool_rank_t *t, agmm_schedule_t schedule,
                          int round, agmm_run_args_t *args)
{
    const agmm_cli_t *cli = t->cli;
    agmm_run_args_init(args);
    args->schedule = schedule;
    args->a_local = t->a;
    args->c = t->cs;
    args->a_gathered = t->gathered;
    args->a_scale = t->a_scale;
    args->a_gathered_scale = t->gathered_scale;
    if (cli->rows_per_round_count > 0) {
        for (int r = 0; r < cli->ranks; r++)
            t->m_rows[r] = agmm_tool_round_rows(cli, round, r);
        args->m_rows = t->m_rows;
    }
}

int64_t agmm_tool_w_id_i(const agmm_cli_t *cli, int r, int i)
{
    /* Weight 0 keeps the single-weight stream; the others get their own. */
    return agmm_tool_w_id(cli, r) + (int64_t)i * (1 << 20);
}

int64_t agmm_tool_a_elems(const agmm_cli_t *cli, int r)
{
    return agmm_tool_split_k(cli) ? cli->m_total * agmm_tool_k_part(cli, r)
                                  : cli->m_local[r] * cli->k;
}

int64_t agmm_tool_a_rows(const agmm_cli_t *cli, int r)
{
    return agmm_tool_split_k(cli) ? cli->m_total : cli->m_local[r];
}

int64_t agmm_tool_a_scales(const agmm_cli_t *cli, int r)
{
    if (cli->dtype != AGMM_DTYPE_INT8) return 0;
    return cli->a_scale == AGMM_SCALE_TENSOR ? 1 : agmm_tool_a_rows(cli, r);
}

int64_t agmm_tool_w_scales(const agmm_cli_t *cli, int i)
{
    if (cli->dtype != AGMM_DTYPE_INT8) return 0;
    return cli->w_scale == AGMM_SCALE_TENSOR ? 1
           : cli->n_count > 1                ? cli->n_list[i]
                                             : cli->n;
}

int64_t agmm_tool_c_rows(const agmm_cli_t *cli, int r)
{
    return cli->op == AGMM_OP_GEMM_RS ? cli->m_local[r] : cli->m_total;
}

int64_t agmm_tool_c_cols(const agmm_cli_t *cli, int64_t n)
{
    return agmm_activation_gate(cli->activation) != AGMM_ACT_NONE ? n / 2 : n;
}

int64_t agmm_tool_w_id(const agmm_cli_t *cli, int r)
{
    /* gemm-rs, gemm-ar: every rank has its own W_r */
    return cli->weights == AGMM_WEIGHTS_SHARED && !agmm_tool_split_k(cli)
               ? 0
               : r + 1;
}

volatile sig_atomic_t agmm_tool_stop = 0;

static void on_stop(int sig)
{
    agmm_tool_stop = sig;
}

int agmm_tool_stopped(void)
{
    /* The launcher aborts the world ("the run was interrupted") before it
     * signals the ranks: a rank may see the abort first. */
    const char *e = agmm_last_error();
    if (!agmm_tool_stop && e && strstr(e, "the run was interrupted"))
        agmm_tool_stop = SIGTERM;
    return agmm_tool_stop != 0;
}

static int rank_main(agmm_world_t *world, void *arg)
{
    const agmm_cli_t *cli = arg;
    /* Ctrl-C reaches the ranks too, and the launcher answers SIGINT/SIGTERM
     * by aborting the world and sending SIGTERM: a rank notes the signal
     * and leaves through the aborted wait, so bench can print the rounds
     * done (the launcher SIGKILLs a rank that takes longer than 2 s). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = cli->cmd == AGMM_CMD_RUN ? agmm_tool_run(world, cli)
                                      : agmm_tool_bench(world, cli);
    if (rc != 0) agmm_tool_report_failure(agmm_world_rank(world), NULL);
    return rc;
}

int agmm_tool_launch(const agmm_cli_t *cli)
{
    agmm_launch_opts_t opts = {0};
    opts.nranks = cli->ranks;
    opts.timeout_s = cli->timeout_s;
    opts.link_gbps = cli->link_gbps;
    opts.link_latency_us = cli->link_latency_us;
    opts.bind = agmm_tool_bind_launch(cli);
    opts.bind_threads = cli->comm_cores + cli->gemm_cores;
    int code = 1;
    agmm_tool_report_share(); /* the ranks' first failure, for --json */
    agmm_status_t st = agmm_launch(&opts, rank_main, (void *)cli, &code);
    /* 129/130/143: the launcher was interrupted by SIGHUP/SIGINT/SIGTERM */
    int signalled =
        code == 128 + SIGHUP || code == 128 + SIGINT || code == 128 + SIGTERM;
    if (signalled) agmm_tool_report_interrupted(code - 128);
    /* No rank got to report (e.g. the survivors were SIGKILLed after the
     * launcher's grace period on a loaded machine): the launcher's own
     * error names the rank that failed ("rank 1 was killed by signal 9"). */
    if ((st != AGMM_OK || code != 0) && !signalled)
        agmm_tool_report_failure(-1, NULL);
    if (st != AGMM_OK || code != 0) agmm_tool_json_failure(cli, "shm");
    if (st != AGMM_OK) return 1; /* the launcher printed why */
    if (signalled) return code;
    return code == 0 ? 0 : (code == 2 ? 2 : 1);
}

double agmm_tool_create_ms;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int agmm_tool_setup(agmm_world_t *world, const agmm_cli_t *cli,
                    agmm_tool_rank_t *t)
{
    memset(t, 0, sizeof *t);
    t->world = world;
    t->cli = cli;
    t->rank = agmm_world_rank(world);
    agmm_plan_desc_t desc;
    agmm_tool_desc(cli, &desc);
    double t0 = now_ms();
    if (agmm_plan_create(world, &desc, &t->plan) != AGMM_OK) return 1;
    agmm_tool_create_ms = now_ms() - t0;

    size_t es = agmm_dtype_size(cli->dtype);
    int int8 = cli->dtype == AGMM_DTYPE_INT8;
    t->a = malloc((size_t)agmm_tool_a_elems(cli, t->rank) * es + 1);
    if (int8)
        t->a_scale = malloc(
            (size_t)agmm_tool_a_scales(cli, t->rank) * sizeof(float) + 1);
    if (!t->a || (int8 && !t->a_scale)) {
        fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                t->rank);
        return 1;
    }
    int nw = cli->n_count > 1 ? cli->n_count : 1;
    for (int i = 0; i < nw; i++) {
        int64_t n = nw > 1 ? cli->n_list[i] : cli->n;
        size_t kn = (size_t)agmm_tool_k_part(cli, t->rank) * (size_t)n;
        size_t cn = (size_t)agmm_tool_c_rows(cli, t->rank) *
                    (size_t)agmm_tool_c_cols(cli, n);
        t->ws[i] = malloc(kn * es + 1);
        t->cs[i] = malloc(cn * agmm_dtype_size(cli->out_dtype) + 1);
        int c16 = cli->out_dtype != AGMM_DTYPE_FP32;
        if (c16) t->c32s[i] = malloc(cn * sizeof(float) + 1);
        if (cli->bias) t->biases[i] = malloc((size_t)n * sizeof(float) + 1);
        int64_t kp = agmm_tool_k_part(cli, t->rank);
        int wq = agmm_tool_wq_bits(cli), zp = wq && cli->zero_point;
        int64_t ns = wq ? agmm_inputs_wq_groups(kp, n, cli->group_size)
                        : agmm_tool_w_scales(cli, i);
        if (int8 || wq) t->w_scales[i] = malloc((size_t)ns * sizeof(float) + 1);
        if (zp) t->w_zeros[i] = malloc((size_t)ns + 1);
        if (!t->ws[i] || !t->cs[i] || ((int8 || wq) && !t->w_scales[i]) ||
            (zp && !t->w_zeros[i]) || (c16 && !t->c32s[i]) ||
            (cli->bias && !t->biases[i])) {
            fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                    t->rank);
            return 1;
        }
        int64_t id = agmm_tool_w_id_i(cli, t->rank, i);
        if (cli->bias &&
            agmm_inputs_fill(cli->seed, AGMM_STREAM_BIAS, i, AGMM_DTYPE_FP32,
                             t->biases[i], n) != AGMM_OK)
            return 1;
        agmm_status_t st =
            wq ? agmm_inputs_fill_wq(cli->seed, AGMM_STREAM_W, id, kp, n, wq,
                                     cli->group_size, zp, t->ws[i],
                                     t->w_scales[i], t->w_zeros[i])
            : int8 ? agmm_inputs_fill_int8(cli->seed, AGMM_STREAM_W, id,
                                           agmm_tool_k_part(cli, t->rank), n,
                                           cli->w_scale == AGMM_SCALE_TENSOR
                                               ? AGMM_QUANT_TENSOR
                                               : AGMM_QUANT_COLS,
                                           t->ws[i], t->w_scales[i])
                   : agmm_inputs_fill(cli->seed, AGMM_STREAM_W, id, cli->dtype,
                                      t->ws[i], (int64_t)kn);
        if (st != AGMM_OK || agmm_tool_set_weight(t, t->plan, i, i) != AGMM_OK)
            return 1;
    }
    t->w = t->ws[0];
    t->c = t->cs[0];
    /* run's check also compares the gathered A the library hands back. */
    if (cli->cmd == AGMM_CMD_RUN && cli->check && cli->op == AGMM_OP_AG_GEMM &&
        !(t->gathered =
              malloc((size_t)cli->m_total * (size_t)cli->k * es + 1))) {
        fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                t->rank);
        return 1;
    }
    if (t->gathered && int8 &&
        !(t->gathered_scale =
              malloc((size_t)cli->m_total * sizeof(float) + 1))) {
        fprintf(stderr, "agmm: rank %d: out of memory for the inputs\n",
                t->rank);
        return 1;
    }
    return 0;
}

agmm_status_t agmm_tool_set_weight(const agmm_tool_rank_t *t, agmm_plan_t *plan,
                                   int plan_i, int i)
{
    if (t->cli->bias) {
        agmm_status_t st = agmm_plan_set_bias(plan, plan_i, t->biases[i]);
        if (st != AGMM_OK) return st;
    }
    if (t->cli->dtype == AGMM_DTYPE_INT8)
        return agmm_plan_set_weight_scaled(plan, plan_i, t->ws[i],
                                           t->w_scales[i]);
    if (agmm_tool_wq_bits(t->cli))
        return agmm_plan_set_weight_quantized(plan, plan_i, t->ws[i],
                                              t->w_scales[i], t->w_zeros[i]);
    return agmm_plan_set_weight_i(plan, plan_i, t->ws[i]);
}

/* Round r's shard of rank `rank` comes from seed + r: inputs change every
 * round, and the check regenerates them the same way. */
int agmm_tool_fill_shard(agmm_tool_rank_t *t, int round)
{
    const agmm_cli_t *cli = t->cli;
    if (cli->dtype == AGMM_DTYPE_INT8)
        return agmm_inputs_fill_int8(cli->seed + (uint64_t)round, AGMM_STREAM_A,
                                     t->rank, agmm_tool_a_rows(cli, t->rank),
                                     agmm_tool_k_part(cli, t->rank),
                                     cli->a_scale == AGMM_SCALE_TENSOR
                                         ? AGMM_QUANT_TENSOR
                                         : AGMM_QUANT_ROWS,
                                     t->a, t->a_scale) == AGMM_OK
                   ? 0
                   : 1;
    return agmm_inputs_fill(cli->seed + (uint64_t)round, AGMM_STREAM_A, t->rank,
                            cli->dtype, t->a,
                            agmm_tool_a_elems(cli, t->rank)) == AGMM_OK
               ? 0
               : 1;
}

void agmm_tool_teardown(agmm_tool_rank_t *t)
{
    agmm_trace_destroy(t->trace); /* before its plan */
    free(t->trace_json);
    if (t->plan) agmm_plan_destroy(t->plan);
    free(t->a);
    free(t->gathered);
    free(t->a_scale);
    free(t->gathered_scale);
    for (int i = 0; i < AGMM_MAX_WEIGHTS; i++) {
        free(t->w_scales[i]);
        free(t->w_zeros[i]);
        free(t->ws[i]);
        free(t->cs[i]);
        free(t->c32s[i]);
        free(t->biases[i]);
    }
    memset(t, 0, sizeof *t);
}
/* How many ranks of the world run on this host (same host name): they
 * share its cores and memory. */
static int ranks_on_this_host(agmm_world_t *world)
{
    char mine[64] = "";
    gethostname(mine, sizeof mine - 1);
    int size = agmm_world_size(world), here = 0;
    char *all = malloc(sizeof mine * (size_t)size);
    if (!all ||
        agmm_world_allgather(world, mine, all, sizeof mine) != AGMM_OK) {
        free(all);
        return size;
    }
    for (int r = 0; r < size; r++)
        here += strncmp(all + (size_t)r * sizeof mine, mine, sizeof mine) == 0;
    free(all);
    return here;
}

int agmm_tool_mpi_main(int argc, char **argv, agmm_cli_t *cli)
{
    agmm_world_t *world = NULL;
    agmm_status_t st = agmm_world_create_mpi(&argc, &argv, 0, &world);
    if (st != AGMM_OK) /* printed; "built without MPI" is a usage error */
        return st == AGMM_ERR_UNSUPPORTED ? 2 : 1;
    int rank = agmm_world_rank(world);
    int here = ranks_on_this_host(world);
    /* Every rank parses the same command line; only rank 0 prints. */
    FILE *quiet = rank == 0 ? NULL : fopen("/dev/null", "w");
    FILE *out = quiet ? quiet : stdout, *err = quiet ? quiet : stderr;
    int rc = agmm_cli_parse_mpi(argc, argv, cli, out, err,
                                agmm_world_size(world), here);
    if (rc == 0) rc = agmm_tool_check_memory(cli, err);
    if (quiet) fclose(quiet);
    if (rc == 0) {
        agmm_world_set_timeout(world, cli->timeout_s);
        rc = cli->cmd == AGMM_CMD_RUN ? agmm_tool_run(world, cli)
                                      : agmm_tool_bench(world, cli);
        if (rc != 0 && rank == 0) {
            agmm_tool_report_failure(rank, NULL);
            agmm_tool_json_failure(cli, "mpi");
        }
        fflush(stdout);
        /* A rank that failed tells the others at once (they may be waiting
         * for it); failures every rank saw alike (a failed check) too,
         * which is harmless. */
        if (rc != 0) {
            char why[64];
            snprintf(why, sizeof why, "exiting with code %d", rc);
            agmm_world_abort(world, why);
        }
    }
    agmm_world_destroy(world);
    return rc < 0 ? 0 : rc;
}
