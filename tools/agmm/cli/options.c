/*
 * The option table of the `agmm` tool (see options.h). Adding an option is
 * adding a row here (and its field in cli.h): getopt_long's table, the
 * parsing, the range messages, the default (defaults.c sets it) and the
 * --help entry follow. Defaults the library also has (sizes, tiles, dtype,
 * weights, engine) are read from agmm_plan_desc_init(); the rest are the
 * tool's own.
 */
#include "options.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

/* CHOICE fields are enums stored through an int. */
_Static_assert(sizeof(agmm_dtype_t) == sizeof(int), "enum field size");
_Static_assert(sizeof(agmm_weights_t) == sizeof(int), "enum field size");
_Static_assert(sizeof(agmm_gemm_engine_kind_t) == sizeof(int),
               "enum field size");
_Static_assert(sizeof(agmm_schedule_t) == sizeof(int), "enum field size");
_Static_assert(sizeof(agmm_op_t) == sizeof(int), "enum field size");
_Static_assert(sizeof(agmm_gemm_path_t) == sizeof(int), "enum field size");
_Static_assert(sizeof(agmm_scale_t) == sizeof(int), "enum field size");
_Static_assert(sizeof(agmm_activation_t) == sizeof(int), "enum field size");
_Static_assert(sizeof(agmm_wdtype_t) == sizeof(int), "enum field size");

#define CLI_MAX_COUNT INT_MAX /* --rounds, --warmup */

static const opt_choice_t k_dtypes[] = {{"fp16", AGMM_DTYPE_FP16},
                                        {"bf16", AGMM_DTYPE_BF16},
                                        {"fp32", AGMM_DTYPE_FP32},
                                        {"int8", AGMM_DTYPE_INT8},
                                        {NULL, 0}};
/* int8 scale layouts: A per row (token) or per shard, W per column. */
static const opt_choice_t k_a_scales[] = {
    {"row", AGMM_SCALE_CHANNEL}, {"tensor", AGMM_SCALE_TENSOR}, {NULL, 0}};
static const opt_choice_t k_w_scales[] = {
    {"col", AGMM_SCALE_CHANNEL}, {"tensor", AGMM_SCALE_TENSOR}, {NULL, 0}};
/* Quantized weights: the element type and the group (rows of k per scale;
 * 0: all of the rank's k). */
static const opt_choice_t k_wdtypes[] = {{"same", AGMM_WDTYPE_SAME},
                                         {"int8", AGMM_WDTYPE_INT8},
                                         {"int4", AGMM_WDTYPE_INT4},
                                         {NULL, 0}};
static const opt_choice_t k_aquants[] = {
    {"none", AGMM_AQUANT_NONE}, {"int8", AGMM_AQUANT_INT8}, {NULL, 0}};
static const opt_choice_t k_groups[] = {
    {"128", 128}, {"64", 64}, {"32", 32}, {"0", 0}, {NULL, 0}};
/* --gemm-engine's words: the library's names of the engine kinds
 * (agmm_gemm_engine_name, kinds 1, 2, ... until "invalid"), then auto's
 * (kind 0) last; made at the first use. */
static const opt_choice_t *engine_choices(void)
{
    static opt_choice_t words[8];
    if (!words[0].name) {
        int n = 0;
        for (int k = AGMM_GEMM_ENGINE_AUTO + 1; n < 6; k++) {
            const char *name =
                agmm_gemm_engine_name((agmm_gemm_engine_kind_t)k);
            if (!strcmp(name, "invalid")) break;
            words[n++] = (opt_choice_t){name, k};
        }
        words[n] = (opt_choice_t){agmm_gemm_engine_name(AGMM_GEMM_ENGINE_AUTO),
                                  AGMM_GEMM_ENGINE_AUTO};
    }
    return words;
}
static const opt_choice_t k_paths[] = {{"auto", AGMM_GEMM_PATH_AUTO},
                                       {"native", AGMM_GEMM_PATH_NATIVE},
                                       {"f32", AGMM_GEMM_PATH_F32},
                                       {NULL, 0}};
static const opt_choice_t k_weights[] = {{"shared", AGMM_WEIGHTS_SHARED},
                                         {"per-rank", AGMM_WEIGHTS_PER_RANK},
                                         {NULL, 0}};
static const opt_choice_t k_schedules[] = {{"fused", AGMM_SCHEDULE_FUSED},
                                           {"baseline", AGMM_SCHEDULE_BASELINE},
                                           {"auto", AGMM_SCHEDULE_AUTO},
                                           {NULL, 0}};
static const opt_choice_t k_ops[] = {{"ag-gemm", AGMM_OP_AG_GEMM},
                                     {"gemm-rs", AGMM_OP_GEMM_RS},
                                     {"gemm-ar", AGMM_OP_GEMM_AR},
                                     {NULL, 0}};
/* The epilogue: C's dtype and the activation. */
static const opt_choice_t k_out_dtypes[] = {{"fp32", AGMM_DTYPE_FP32},
                                            {"bf16", AGMM_DTYPE_BF16},
                                            {"fp16", AGMM_DTYPE_FP16},
                                            {NULL, 0}};
static const opt_choice_t k_acts[] = {{"none", AGMM_ACT_NONE},
                                      {"relu", AGMM_ACT_RELU},
                                      {"gelu-tanh", AGMM_ACT_GELU_TANH},
                                      {"gelu-erf", AGMM_ACT_GELU_ERF},
                                      {"silu", AGMM_ACT_SILU},
                                      {"silu-mul", AGMM_ACT_SILU_MUL},
                                      {"gelu-tanh-mul", AGMM_ACT_GELU_TANH_MUL},
                                      {NULL, 0}};
static const opt_choice_t k_transports[] = {{"shm", 0}, {"mpi", 1}, {NULL, 0}};
/* agmm model: the modelled machine's transport, and the relay. */
static const opt_choice_t k_model_transports[] = {{"shm", AGMM_MODEL_SHM},
                                                  {"link", AGMM_MODEL_LINK},
                                                  {"mpi", AGMM_MODEL_MPI},
                                                  {NULL, 0}};
static const opt_choice_t k_on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};

/* --gemm-rates: the list's syntax and order (model_checks.c parses it). */
static int rates_ok(FILE *err, const char *arg, int value)
{
    (void)value;
    agmm_model_rate_t rates[AGMM_MODEL_MAX_RATES];
    int n = 0;
    return opt_parse_rates(err, arg, rates, &n) != 0;
}

/* cleanup --job: the library's job alphabet (agmm_world_join). */
static int job_name_ok(FILE *err, const char *arg, int value)
{
    (void)value;
    size_t n = strlen(arg);
    int ok = n >= 1 && n <= 48 && strcmp(arg, ".") && strcmp(arg, "..");
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)arg[i]) || arg[i] == '.' || arg[i] == '_' ||
             arg[i] == '-';
    if (!ok)
        fprintf(err,
                "agmm: --job: a job name is 1..48 characters of [A-Za-z0-9._-] "
                "(got '%s')\n",
                arg);
    return !ok;
}
/* --mode: a set; "all" first (the error lists the words in this order). */
static const opt_choice_t k_modes[] = {{"all", AGMM_BENCH_ALL},
                                       {"fused", AGMM_BENCH_FUSED},
                                       {"baseline", AGMM_BENCH_BASELINE},
                                       {"auto", AGMM_BENCH_AUTO},
                                       {"gemm-only", AGMM_BENCH_GEMM_ONLY},
                                       {"comm-only", AGMM_BENCH_COMM_ONLY},
                                       {NULL, 0}};

/* --gemm-engine: a word that parses but names an engine not built in. */
static int engine_built_in(FILE *err, const char *arg, int value)
{
    if (agmm_gemm_engine_available((agmm_gemm_engine_kind_t)value)) return 0;
    fprintf(err,
            "agmm: --gemm-engine: %s is not built in (this agmm has openblas; "
            "build with libdnnl-dev)\n",
            arg);
    return 1;
}

#define F(f)    offsetof(agmm_cli_t, f)
#define LIB(f)  .from_lib = 1, .lib_field = offsetof(agmm_plan_desc_t, f)
#define NOSET   .set_field = OPT_NO_FIELD
#define NOFIELD .field = OPT_NO_FIELD, NOSET

/* One row per option, in --help order. Example:
 *   --k: an int64_t in cli->k, 1..INT_MAX (CBLAS dimensions are int),
 *   default agmm_plan_desc_init()'s k, in "Problem:" for run and bench.
 * Left as written by hand: clang-format would put every field on a line. */
/* clang-format off */
const opt_row_t opt_table[] = {
    /* Problem */
    {.name = "ranks", .kind = OPTK_INT, .field = F(ranks), .set_field = F(ranks_set),
     .min = 1, .max = AGMM_CLI_MAX_RANKS, .def = {2, 2}, .cmds = OPT_FOR_PROBLEM,
     .section = SEC_PROBLEM, .label = "--ranks P", .help = "ranks ({min}..{max}, default {def})"},
    {.name = "m-local", .kind = OPTK_ROWS, .field = F(m_local), NOSET, .def = {2048, 2048},
     .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM, .label = "--m-local ROWS[,...]",
     .help = "rows of each rank's shard A_r: one value for every rank\n"
             "or P comma-separated values (a list alone sets --ranks);\n"
             "each >= 0, sum >= 1 (default {def})"},
    {.name = "k", .kind = OPTK_INT64, .field = F(k), NOSET, .min = 1, .max = INT_MAX, LIB(k),
     .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM, .label = "--k K",
     .help = "inner dimension, >= 1 (default {def})"},
    {.name = "n", .kind = OPTK_ROWS, .field = F(n_list), NOSET, LIB(n),
     .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM, .label = "--n N[,N...]",
     .help = "columns of W and C, >= 1 (default {def}); a list:\n"
             "ag-gemm with several weights from one gather, C_i =\n"
             "gather(A) @ W_i, each N_i columns (at most 16)"},
    {.name = "m-local-per-round", .kind = OPTK_ROWS, .field = F(rows_per_round), NOSET,
     .cmds = OPT_FOR_ALL, .section = SEC_PROBLEM, .label = "--m-local-per-round R[,R...]",
     .help = "rows per rank in round i: R[i mod count], at most each\n"
             "rank's --m-local (the plan is made once for --m-local);\n"
             "0 allowed (default: --m-local every round); gemm-rs: the\n"
             "rows of C each rank gets, gemm-ar: the rows each rank\n"
             "sums (A_r is M_round x K_r)"},
    {.name = "op", .kind = OPTK_CHOICE, .field = F(op), NOSET, .choices = k_ops, LIB(op),
     .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM, .label = "--op OP",
     .help = "{choices}: all-gather + GEMM, GEMM +\n"
             "reduce-scatter (A_r is M x K_r, W_r is K_r x N; rank r\n"
             "gets its --m-local rows of sum_r A_r @ W_r), or GEMM +\n"
             "all-reduce (the same A_r, W_r; every rank gets all of\n"
             "it, rank r summing its --m-local rows) (default {def})"},
    {.name = "k-local", .kind = OPTK_ROWS, .field = F(k_local), NOSET, .cmds = OPT_FOR_PROBLEM,
     .section = SEC_PROBLEM, .label = "--k-local K0,K1,...",
     .help = "gemm-rs, gemm-ar: each rank's part of --k, one value\n"
             "per rank, each >= 0, summing to --k (default: --k split\n"
             "evenly, the first ranks one more)"},
    {.name = "tile-m", .kind = OPTK_INT64, .field = F(tile_m), NOSET, .min = 1,
     .max = INT64_MAX, LIB(tile_m), .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM,
     .label = "--tile-m ROWS", .help = "rows per tile, >= 1 (default {def})"},
    {.name = "tile-n", .kind = OPTK_INT64, .field = F(tile_n), NOSET, .min = 1,
     .max = INT64_MAX, LIB(tile_n), .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM,
     .label = "--tile-n COLS", .help = "columns per GEMM work item, >= 1 (default {def})"},
    {.name = "dtype", .kind = OPTK_CHOICE, .field = F(dtype), NOSET, .choices = k_dtypes,
     LIB(dtype), .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM, .label = "--dtype T",
     .help = "{choices}, of A and W (C: --out-dtype)\n"
             "(default {def}); int8 (W8A8, onednn only): made in fp32,\n"
             "then quantized by the rank that owns them"},
    {.name = "bias", .kind = OPTK_FLAG, .field = F(bias), NOSET, .flag_value = 1,
     .cmds = OPT_FOR_ALL, .section = SEC_PROBLEM,
     .help = "add a per-column fp32 bias to C (random, like the\n"
             "weights; the same on every rank; gemm-rs: once, after\n"
             "the reduction)"},
    {.name = "activation", .kind = OPTK_CHOICE, .field = F(activation), NOSET,
     .choices = k_acts, LIB(activation), .cmds = OPT_FOR_ALL, .section = SEC_PROBLEM,
     .label = "--activation F",
     .help = "{choices}:\n"
             "the activation after the bias, in fp32 (default {def});\n"
             "the -mul ones are gated (ag-gemm): W's n columns are\n"
             "[gate | up] halves, C has n/2: act(gate) * up"},
    {.name = "out-dtype", .kind = OPTK_CHOICE, .field = F(out_dtype), NOSET,
     .choices = k_out_dtypes, LIB(out_dtype), .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM,
     .label = "--out-dtype T",
     .help = "{choices}: C's dtype, rounded once to nearest\n"
             "even after the activation (default {def})"},
    {.name = "a-scale", .kind = OPTK_CHOICE, .field = F(a_scale), .set_field = F(a_scale_set),
     .choices = k_a_scales, LIB(a_scale), .cmds = OPT_FOR_ALL, .section = SEC_PROBLEM,
     .label = "--a-scale S",
     .help = "int8: A's scales, {choices}: one per row (token)\n"
             "or one per rank's shard (default {def})"},
    {.name = "w-scale", .kind = OPTK_CHOICE, .field = F(w_scale), .set_field = F(w_scale_set),
     .choices = k_w_scales, LIB(w_scale), .cmds = OPT_FOR_ALL, .section = SEC_PROBLEM,
     .label = "--w-scale S",
     .help = "int8: W's scales, {choices}: one per column (output\n"
             "channel) or one per weight (default {def})"},
    {.name = "weight-dtype", .kind = OPTK_CHOICE, .field = F(weight_dtype), NOSET,
     .choices = k_wdtypes, LIB(weight_dtype), .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM,
     .label = "--weight-dtype T",
     .help = "{choices}: W's dtype (default {def}:\n"
             "--dtype's); int8/int4: made in fp32, quantized with\n"
             "group scales, run by agmm's own int4/int8 kernels"},
    {.name = "group-size", .kind = OPTK_CHOICE, .field = F(group_size),
     .set_field = F(group_size_set), .choices = k_groups, .def = {128, 128},
     .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM, .label = "--group-size G",
     .help = "{choices}: rows of k per scale of a\n"
             "quantized W (default {def}; 0: all of the rank's k)"},
    {.name = "zero-point", .kind = OPTK_FLAG, .field = F(zero_point), NOSET, .flag_value = 1,
     .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM,
     .help = "a quantized W is asymmetric (uint8 zero points)"},
    {.name = "a-quant", .kind = OPTK_CHOICE, .field = F(a_quant), NOSET,
     .choices = k_aquants, LIB(a_quant), .cmds = OPT_FOR_PROBLEM, .section = SEC_PROBLEM,
     .label = "--a-quant Q",
     .help = "{choices}: with a quantized W, A as given\n"
             "(none: W4A16/W8A16, the default) or quantized per row\n"
             "to int8 for the int8 dot (W4A8/W8A8 in groups)"},
    {.name = "gemm-engine", .kind = OPTK_CHOICE, .field = F(gemm_engine), NOSET,
     .choices_fn = engine_choices, .accept = engine_built_in, LIB(gemm_engine), .cmds = OPT_FOR_PROBLEM,
     .section = SEC_PROBLEM, .label = "--gemm-engine E",
     .help = "{choices}: the tile GEMM library;\n"
             "wq: agmm's own kernels (quantized or bf16 W); auto is\n"
             "onednn when built in (here: {auto_engine}), or wq for\n"
             "bf16 at <= 32 rows a call where measured faster"},
    {.name = "gemm-path", .kind = OPTK_CHOICE, .field = F(gemm_path), NOSET,
     .choices = k_paths, LIB(gemm_path), .cmds = OPT_FOR_PROBLEM,
     .section = SEC_PROBLEM, .label = "--gemm-path P",
     .help = "{choices}: bf16/fp16 read natively or converted\n"
             "to fp32; auto times both at plan creation (default {def})"},
    {.name = "weights", .kind = OPTK_CHOICE, .field = F(weights), NOSET, .choices = k_weights,
     LIB(weights), .cmds = OPT_FOR_ALL, .section = SEC_PROBLEM, .label = "--weights W",
     .help = "shared (same W on every rank) | per-rank (default {def})"},
    {.name = "seed", .kind = OPTK_UINT64, .field = F(seed), NOSET, .def = {42, 42},
     .cmds = OPT_FOR_ALL, .section = SEC_PROBLEM, .label = "--seed S",
     .help = "input seed, 0..{max} (default {def})"},
    /* Threads: the defaults depend on the host (agmm_cli_resolve_cores) */
    {.name = "comm-cores", .kind = OPTK_INT, .field = F(comm_cores),
     .set_field = F(comm_cores_set), .min = 0, .max = AGMM_CLI_MAX_CORES, .cmds = OPT_FOR_PROBLEM,
     .section = SEC_THREADS, .help_fn = opt_help_cores_comm},
    {.name = "gemm-cores", .kind = OPTK_INT, .field = F(gemm_cores),
     .set_field = F(gemm_cores_set), .min = 1, .max = AGMM_CLI_MAX_CORES, .cmds = OPT_FOR_PROBLEM,
     .section = SEC_THREADS, .help_fn = opt_help_cores_gemm},
    {.name = "oversubscribe", .kind = OPTK_FLAG, .field = F(oversubscribe), NOSET,
     .flag_value = 1, .cmds = OPT_FOR_ALL, .section = SEC_THREADS,
     .help = "allow more threads than usable cores\n"
             "default rule: comm = 1 if 2 x ranks <= usable cores,\n"
             "else 0; GEMM = max(1, usable / ranks - comm)"},
    {.name = "bind", .kind = OPTK_WORD, .field = F(bind), NOSET, .cmds = OPT_FOR_ALL,
     .section = SEC_THREADS, .label = "--bind HOW",
     .help = "placement of the forked ranks: auto (each rank its own\n"
             "NUMA node(s) or an equal group of physical cores, its\n"
             "memory on their nodes, each thread its own core), none,\n"
             "or one CPU list per rank: 0-31|32-63 (default auto;\n"
             "under MPI the launcher's binding is kept)"},
    /* Schedule */
    {.name = "schedule", .kind = OPTK_CHOICE, .field = F(schedule),
     .set_field = F(schedule_set), .choices = k_schedules,
     .def = {AGMM_SCHEDULE_AUTO, AGMM_SCHEDULE_AUTO}, .cmds = OPT_FOR_ALL,
     .section = SEC_SCHEDULE, .label = "--schedule S",
     .help = "{choices}: auto measures its first {auto_rounds}\n"
             "rounds (fused and baseline alternate) and keeps the\n"
             "faster (default {def})",
     .help_bench = "{choices}: auto measures its first {auto_rounds}\n"
                   "rounds (fused and baseline alternate) and keeps the\n"
                   "faster (default {def}); bench: time this schedule alone"},
    {.name = "mode", .kind = OPTK_LIST, .field = F(bench_modes), NOSET, .choices = k_modes,
     .def = {AGMM_BENCH_FUSED | AGMM_BENCH_BASELINE, AGMM_BENCH_FUSED | AGMM_BENCH_BASELINE},
     .cmds = OPT_FOR_BENCH, .only_hint = " (agmm run takes --schedule)",
     .section = SEC_SCHEDULE, .label = "--mode M[,M...]",
     .help = "{choices}\n"
             "(default {def}; gemm-only also times the\n"
             "monolithic GEMM)"},
    {.name = "link-gbps", .kind = OPTK_DOUBLE, .field = F(link_gbps), NOSET, .dmin = 0,
     .dmax = 10000, .unit = "Gbit/s", .cmds = OPT_FOR_ALL, .section = SEC_SCHEDULE,
     .label = "--link-gbps G",
     .help = "emulate a link of G Gbit/s per direction between every\n"
             "pair of ranks, 0 < G <= {max} (default: no emulation)"},
    {.name = "link-latency-us", .kind = OPTK_DOUBLE, .field = F(link_latency_us), NOSET,
     .dmin = 0, .dmax = 1000000, .min_incl = 1, .unit = "microseconds", .cmds = OPT_FOR_ALL,
     .section = SEC_SCHEDULE, .label = "--link-latency-us L",
     .help = "its one-way latency, {min}..{max} us (default {def}; needs\n"
             "--link-gbps)"},
    /* Machine (agmm model): the machine the round is predicted for */
    {.name = "hosts", .kind = OPTK_INT, .field = F(hosts), .set_field = F(hosts_set),
     .min = 1, .max = AGMM_CLI_MAX_RANKS, .cmds = OPT_FOR_MODEL, .section = SEC_MACHINE,
     .label = "--hosts H",
     .help = "hosts, {min}..{max}; H x --ranks-per-host must equal\n"
             "--ranks, and sets it when --ranks is not given\n"
             "(default 1, or --ranks / --ranks-per-host)"},
    {.name = "ranks-per-host", .kind = OPTK_INT, .field = F(ranks_per_host),
     .set_field = F(ranks_per_host_set), .min = 1, .max = AGMM_CLI_MAX_RANKS,
     .cmds = OPT_FOR_MODEL, .section = SEC_MACHINE, .label = "--ranks-per-host R",
     .help = "ranks on each host, {min}..{max} (default --ranks / --hosts)"},
    {.name = "transport", .kind = OPTK_CHOICE, .field = F(model_transport),
     .set_field = F(model_transport_set), .choices = k_model_transports,
     .cmds = OPT_FOR_MODEL, .section = SEC_MACHINE, .label = "--transport T",
     .help = "{choices}: one host, shared memory | one host\n"
             "with the link emulator (a wire per rank pair) | MPI:\n"
             "hosts over one link each (default: mpi with --hosts > 1,\n"
             "link with --link-gbps, else shm)"},
    {.name = "relay", .kind = OPTK_CHOICE, .field = F(relay), NOSET, .choices = k_on_off,
     .def = {1, 1}, .cmds = OPT_FOR_MODEL, .section = SEC_MACHINE, .label = "--relay on|off",
     .help = "mpi with --hosts > 1: the all-gather relayed per host\n"
             "(default {def}; ignored otherwise)"},
    {.name = "link-gbps", .kind = OPTK_DOUBLE, .field = F(link_gbps), NOSET, .dmin = 0,
     .dmax = 10000, .unit = "Gbit/s", .cmds = OPT_FOR_MODEL, .section = SEC_MACHINE,
     .label = "--link-gbps G",
     .help = "the link, Gbit/s per direction: each host's (mpi) or\n"
             "each emulated wire's (link), 0 < G <= {max}; needed for\n"
             "--transport link and for mpi with --hosts > 1"},
    {.name = "link-latency-us", .kind = OPTK_DOUBLE, .field = F(link_latency_us), NOSET,
     .dmin = 0, .dmax = 1000000, .min_incl = 1, .unit = "microseconds",
     .cmds = OPT_FOR_MODEL, .section = SEC_MACHINE, .label = "--link-latency-us L",
     .help = "its one-way latency, {min}..{max} us (default {def}; needs\n"
             "--link-gbps)"},
    /* Rates (agmm model): given, or measured on this host */
    {.name = "gemm-gflops", .kind = OPTK_DOUBLE, .field = F(gemm_gflops),
     .set_field = F(gemm_gflops_set), .dmin = 0, .dmax = 1e9, .unit = "GFLOP/s",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--gemm-gflops G",
     .help = "one GEMM rate, per GEMM worker, for every row count\n"
             "(given: nothing is measured; default: measured here)"},
    {.name = "gemm-rates", .kind = OPTK_WORD, .field = F(gemm_rates_arg), NOSET,
     .accept = rates_ok, .cmds = OPT_FOR_MODEL, .section = SEC_RATES,
     .label = "--gemm-rates R:G,...",
     .help = "GEMM rates by rows per call, ROWS:GFLOPS,... with rows\n"
             "increasing, at most 24 (interpolated in log rows,\n"
             "clamped at the ends); instead of --gemm-gflops"},
    {.name = "call-us", .kind = OPTK_DOUBLE, .field = F(call_us), .set_field = F(call_us_set),
     .dmin = 0, .dmax = 1000000, .min_incl = 1, .unit = "microseconds",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--call-us US",
     .help = "the fixed cost of one GEMM engine call"},
    {.name = "copy-gbs", .kind = OPTK_DOUBLE, .field = F(copy_gbs),
     .set_field = F(copy_gbs_set), .dmin = 0, .dmax = 1000000, .unit = "GB/s",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--copy-gbs B",
     .help = "one thread's copy on one host (a put on shared\n"
             "memory, a relay's forward), GB/s"},
    {.name = "reduce-gbs", .kind = OPTK_DOUBLE, .field = F(reduce_gbs),
     .set_field = F(reduce_gbs_set), .dmin = 0, .dmax = 1000000, .unit = "GB/s",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--reduce-gbs B",
     .help = "gemm-rs, gemm-ar: the fp32 sum of a partial into C,\n"
             "GB/s of partial read"},
    {.name = "convert-gbs", .kind = OPTK_DOUBLE, .field = F(convert_gbs),
     .set_field = F(convert_gbs_set), .dmin = 0, .dmax = 1000000, .unit = "GB/s",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--convert-gbs B",
     .help = "bf16/fp16 to fp32 of the gathered rows, GB/s (the f32\n"
             "path only)"},
    {.name = "msg-us", .kind = OPTK_DOUBLE, .field = F(msg_us), .set_field = F(msg_us_set),
     .dmin = 0, .dmax = 1000000, .min_incl = 1, .unit = "microseconds",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--msg-us US",
     .help = "mpi: the cost to post one message"},
    {.name = "round-us", .kind = OPTK_DOUBLE, .field = F(round_us),
     .set_field = F(round_us_set), .dmin = 0, .dmax = 1000000, .min_incl = 1,
     .unit = "microseconds", .cmds = OPT_FOR_MODEL, .section = SEC_RATES,
     .label = "--round-us US",
     .help = "a round's fixed cost (workers start and join)"},
    {.name = "peer-us", .kind = OPTK_DOUBLE, .field = F(peer_us), .set_field = F(peer_us_set),
     .dmin = 0, .dmax = 1000000, .min_incl = 1, .unit = "microseconds",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--peer-us US",
     .help = "a round's cost per peer (its ack, its signals)"},
    {.name = "tile-us", .kind = OPTK_DOUBLE, .field = F(tile_us), .set_field = F(tile_us_set),
     .dmin = 0, .dmax = 1000000, .min_incl = 1, .unit = "microseconds",
     .cmds = OPT_FOR_MODEL, .section = SEC_RATES, .label = "--tile-us US",
     .help = "fused: one signalled tile put and its wait, per\n"
             "(tile, peer)"},
    {.name = "dram-gbs", .kind = OPTK_DOUBLE, .field = F(dram_gbs), .set_field = F(dram_gbs_set),
     .dmin = 0, .dmax = 1000000, .min_incl = 1, .unit = "GB/s", .cmds = OPT_FOR_MODEL,
     .section = SEC_RATES, .label = "--dram-gbs B",
     .help = "the weight-streaming floor: each GEMM call takes at\n"
             "least its weight bytes over B GB/s (0: none; default:\n"
             "this host's DRAM rate when the weight outgrows the\n"
             "last-level cache, measured)"},
    {.name = "measure-budget", .kind = OPTK_DOUBLE, .field = F(measure_budget_s), NOSET,
     .dmin = 0, .dmax = 60, .unit = "seconds", .ddef = 1, .cmds = OPT_FOR_MODEL,
     .section = SEC_RATES, .label = "--measure-budget S",
     .help = "seconds to measure this host's rates in, > {min} and\n"
             "<= {max} (default {def})"},
    /* Run */
    {.name = "timeout", .kind = OPTK_DOUBLE, .field = F(timeout_s), NOSET, .dmin = 0,
     .dmax = 86400, .unit = "seconds", .ddef = 60, .cmds = OPT_FOR_ALL, .section = SEC_RUN,
     .label = "--timeout SECONDS",
     .help = "per-wait timeout, > {min} and <= {max} (default {def})"},
    {.name = "weight-sets", .kind = OPTK_INT, .field = F(weight_sets), NOSET, .min = 1,
     .max = AGMM_CLI_MAX_WEIGHT_SETS, .def = {1, 1}, .cmds = OPT_FOR_BENCH | OPT_FOR_MODEL,
     .section = SEC_RUN, .label = "--weight-sets L",
     .help = "L distinct weights per rank, used in turn (a model's\n"
             "layers): the weight streams from DRAM (the floor) when\n"
             "ranks per host x L of them outgrow the last-level\n"
             "cache; {min} to {max} (default {def})",
     .help_bench = "L distinct weights (a plan each), used in turn, one\n"
                   "per timed call, so rounds read their weight from DRAM\n"
                   "as a model's layers do; {min} to {max} (default {def})"},
    {.name = "rounds", .kind = OPTK_INT, .field = F(rounds), NOSET, .min = 1,
     .max = CLI_MAX_COUNT, .def = {1, 20}, .cmds = OPT_FOR_ALL, .section = SEC_RUN,
     .label = "--rounds R", .help = "rounds, >= {min} (default {def})"},
    {.name = "warmup", .kind = OPTK_INT, .field = F(warmup), NOSET, .min = 0,
     .max = CLI_MAX_COUNT, .def = {0, 5}, .cmds = OPT_FOR_ALL, .section = SEC_RUN,
     .label = "--warmup W", .help = "untimed rounds first, >= {min} (default {def})"},
    {.name = "no-check", .kind = OPTK_FLAG, .field = F(check), NOSET, .flag_value = 0,
     .def = {1, 0}, .cmds = OPT_FOR_ALL, .section = SEC_RUN,
     .help = "skip the check against the reference (default: check)",
     .help_bench = "accepted; bench does not check results"},
    {.name = "transport", .kind = OPTK_CHOICE, .field = F(transport_mpi), NOSET,
     .choices = k_transports, .cmds = OPT_FOR_ALL, .section = SEC_RUN,
     .label = "--transport T",
     .help = "shm: forked ranks on this host sharing memory | mpi: the\n"
             "ranks of an MPI launcher (mpirun -np P agmm {cmd} ...;\n"
             "--ranks then defaults to P). Default: mpi when started\n"
             "by an MPI launcher, else shm"},
    {.name = "json", .kind = OPTK_FLAG, .field = F(json), NOSET, .flag_value = 1,
     .cmds = OPT_FOR_PROBLEM, .section = SEC_RUN,
     .help = "print the result as one JSON object on stdout"},
    {.name = "trace", .kind = OPTK_PATH, .field = F(trace_json), NOSET, .cmds = OPT_FOR_ALL,
     .section = SEC_RUN, .label = "--trace FILE.json",
     .help = "write a timeline of every put, wait and GEMM call of\n"
             "every rank and thread (Chrome trace events: open in\n"
             "ui.perfetto.dev or chrome://tracing) and print a\n"
             "per-round summary (see docs/tracing.md)"},
    {.name = "trace-svg", .kind = OPTK_PATH, .field = F(trace_svg), NOSET, .cmds = OPT_FOR_ALL,
     .section = SEC_RUN, .label = "--trace-svg FILE.svg",
     .help = "draw that timeline as an SVG picture"},
    {.name = "verbose", .short_name = 'v', .kind = OPTK_COUNT, .field = F(verbose), NOSET,
     .cmds = OPT_FOR_ALL, .section = SEC_RUN, .help = "more output on stderr (repeatable)"},
    /* Cleanup */
    {.name = "job", .kind = OPTK_WORD, .field = F(job), NOSET, .accept = job_name_ok,
     .cmds = OPT_FOR_CLEANUP, .section = SEC_CLEANUP, .label = "--job NAME",
     .help = "only the segments of job NAME (default: every job)"},
    {.name = "help", .short_name = 'h', .kind = OPTK_HELP, NOFIELD,
     .cmds = OPT_FOR_PROBLEM | OPT_FOR_CLEANUP, .section = SEC_RUN, .help = "this text"},
    {.name = "version", .kind = OPTK_VERSION, NOFIELD, .cmds = OPT_FOR_PROBLEM | OPT_FOR_CLEANUP,
     .section = SEC_RUN, .label = "    --version", .help = "print the version"},
};
/* clang-format on */

const int opt_count = (int)(sizeof opt_table / sizeof opt_table[0]);

const opt_row_t *opt_find(const char *name)
{
    for (int i = 0; i < opt_count; i++)
        if (!strcmp(opt_table[i].name, name)) return &opt_table[i];
    return NULL;
}

const opt_choice_t *opt_choices(const opt_row_t *row)
{
    return row->choices_fn ? row->choices_fn() : row->choices;
}

const char *opt_choice_name(const opt_row_t *row, int value)
{
    for (const opt_choice_t *c = opt_choices(row); c && c->name; c++)
        if (c->value == value) return c->name;
    return "?";
}

const char *opt_cmd_name(agmm_cmd_t cmd)
{
    return cmd == AGMM_CMD_BENCH     ? "bench"
           : cmd == AGMM_CMD_CLEANUP ? "cleanup"
           : cmd == AGMM_CMD_MODEL   ? "model"
                                     : "run";
}
