/*
 * The command-line parser of the `agmm` tool. See cli.h and docs/cli.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_DEFAULT_RANKS 2
#define CLI_DEFAULT_M_LOCAL 2048
#define CLI_DEFAULT_K 4096
#define CLI_DEFAULT_N 4096
#define CLI_DEFAULT_TILE_M 128
#define CLI_DEFAULT_TILE_N 256
#define CLI_DEFAULT_TIMEOUT 60.0
#define CLI_MAX_TIMEOUT 86400.0
#define CLI_DEFAULT_SEED 42u
#define CLI_MAX_COUNT INT_MAX /* --rounds, --warmup */
#define CLI_MAX_LINK_GBPS 10000.0
#define CLI_MAX_LINK_LATENCY_US 1000000.0

enum {
    OPT_HELP = 'h',
    OPT_VERBOSE = 'v',
    OPT_RANKS = 256,
    OPT_M_LOCAL,
    OPT_K,
    OPT_N,
    OPT_TILE_M,
    OPT_TILE_N,
    OPT_DTYPE,
    OPT_GEMM_ENGINE,
    OPT_WEIGHTS,
    OPT_COMM_CORES,
    OPT_GEMM_CORES,
    OPT_OVERSUBSCRIBE,
    OPT_TIMEOUT,
    OPT_ROUNDS,
    OPT_WARMUP,
    OPT_SEED,
    OPT_JSON,
    OPT_NO_CHECK,
    OPT_VERSION,
    OPT_TRACE,
    OPT_TRACE_SVG,
    OPT_TRANSPORT,
    OPT_SCHEDULE,
    OPT_MODE,
    OPT_LINK_GBPS,
    OPT_LINK_LATENCY,
};

static const struct option k_long_opts[] = {
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"ranks", required_argument, NULL, OPT_RANKS},
    {"m-local", required_argument, NULL, OPT_M_LOCAL},
    {"k", required_argument, NULL, OPT_K},
    {"n", required_argument, NULL, OPT_N},
    {"tile-m", required_argument, NULL, OPT_TILE_M},
    {"tile-n", required_argument, NULL, OPT_TILE_N},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"gemm-engine", required_argument, NULL, OPT_GEMM_ENGINE},
    {"weights", required_argument, NULL, OPT_WEIGHTS},
    {"comm-cores", required_argument, NULL, OPT_COMM_CORES},
    {"gemm-cores", required_argument, NULL, OPT_GEMM_CORES},
    {"oversubscribe", no_argument, NULL, OPT_OVERSUBSCRIBE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-check", no_argument, NULL, OPT_NO_CHECK},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-svg", required_argument, NULL, OPT_TRACE_SVG},
    {"transport", required_argument, NULL, OPT_TRANSPORT},
    {"schedule", required_argument, NULL, OPT_SCHEDULE},
    {"mode", required_argument, NULL, OPT_MODE},
    {"link-gbps", required_argument, NULL, OPT_LINK_GBPS},
    {"link-latency-us", required_argument, NULL, OPT_LINK_LATENCY},
    {NULL, 0, NULL, 0},
};

static const char *cmd_name(agmm_cmd_t cmd)
{
    return cmd == AGMM_CMD_BENCH ? "bench" : "run";
}

/* "--ranks" for OPT_RANKS, "-h"-style never needed: every option has a long
 * name, and errors use it. */
static const char *opt_name(int val)
{
    for (const struct option *o = k_long_opts; o->name; o++)
        if (o->val == val)
            return o->name;
    return "?";
}

static int is_known_val(int val)
{
    for (const struct option *o = k_long_opts; o->name; o++)
        if (o->val == val)
            return 1;
    return 0;
}

/* ------------------------------------------------------------ numbers */

typedef enum { NUM_OK, NUM_JUNK, NUM_RANGE } num_result_t;

/* Strict decimal int64 in [lo, hi]: no whitespace, no junk, '+' allowed. */
static num_result_t parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)s[0]))
        return NUM_JUNK;
    /* The sign must be followed by a digit (strtoll would skip spaces). */
    const char *d = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    if (!isdigit((unsigned char)*d))
        return NUM_JUNK;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0')
        return NUM_JUNK;
    if (errno == ERANGE)
        return NUM_RANGE;
    if (v < lo || v > hi)
        return NUM_RANGE;
    *out = (int64_t)v;
    return NUM_OK;
}

/* Strict decimal uint64: a leading '-' is a range error. */
static num_result_t parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || isspace((unsigned char)s[0]))
        return NUM_JUNK;
    const char *d = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    if (!isdigit((unsigned char)*d))
        return NUM_JUNK;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0')
        return NUM_JUNK;
    if (s[0] == '-')
        return NUM_RANGE;
    if (errno == ERANGE)
        return NUM_RANGE;
    *out = (uint64_t)v;
    return NUM_OK;
}

/* Strict finite double in (lo_excl, hi]. */
static num_result_t parse_seconds(const char *s, double lo_excl, double hi, double *out)
{
    if (!s || !*s || isspace((unsigned char)s[0]))
        return NUM_JUNK;
    const char *d = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    /* Digits or ".5"; rejects "inf", "nan", "0x1p3". */
    if (!(isdigit((unsigned char)d[0]) || (d[0] == '.' && isdigit((unsigned char)d[1]))))
        return NUM_JUNK;
    if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))
        return NUM_JUNK;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0')
        return NUM_JUNK;
    if (!isfinite(v))
        return NUM_RANGE;
    if (errno == ERANGE && (v > 1.0 || v < -1.0))
        return NUM_RANGE;
    if (!(v > lo_excl) || v > hi)
        return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

static void int_error(FILE *err, int val, num_result_t r, int64_t lo, int64_t hi,
                      const char *got)
{
    fprintf(err, "agmm: --%s: %san integer from %" PRId64 " to %" PRId64 " (got '%s')\n",
            opt_name(val), r == NUM_RANGE ? "out of range; give " : "give ", lo, hi, got);
}

static int get_i64(FILE *err, int val, const char *arg, int64_t lo, int64_t hi, int64_t *out)
{
    num_result_t r = parse_i64(arg, lo, hi, out);
    if (r != NUM_OK) {
        int_error(err, val, r, lo, hi, arg);
        return -1;
    }
    return 0;
}

static int get_int(FILE *err, int val, const char *arg, int lo, int hi, int *out)
{
    int64_t v = 0;
    if (get_i64(err, val, arg, lo, hi, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* --m-local ROWS[,ROWS...] */
/* One of a fixed set of words: names[i] -> values[i]. Returns 0, or 2 after
 * printing "agmm: --opt: one of a, b, c (got 'x')". */
static int get_choice(FILE *err, const char *opt, const char *arg,
                      const char *const *names, const int *values, int count,
                      int *out)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(arg, names[i])) {
            *out = values[i];
            return 0;
        }
    fprintf(err, "agmm: %s: one of ", opt);
    for (int i = 0; i < count; i++)
        fprintf(err, "%s%s", i ? ", " : "", names[i]);
    fprintf(err, " (got '%s')\n", arg);
    return 2;
}

static int get_m_local(FILE *err, const char *arg, agmm_cli_t *cli)
{
    const char *p = arg;
    int count = 0;
    if (!*arg) {
        fprintf(err, "agmm: --m-local: give ROWS or a comma-separated list ROWS,ROWS,... "
                     "(got '')\n");
        return -1;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            fprintf(err, "agmm: --m-local: empty value in the list; give ROWS or "
                         "ROWS,ROWS,... without empty elements (got '%s')\n", arg);
            return -1;
        }
        if (count >= AGMM_CLI_MAX_RANKS) {
            fprintf(err, "agmm: --m-local: at most %d values (one per rank) (got '%.40s...')\n",
                    AGMM_CLI_MAX_RANKS, arg);
            return -1;
        }
        char buf[64];
        int64_t v = 0;
        num_result_t r;
        if (len >= sizeof buf) {
            r = NUM_JUNK;
            /* A very long run of digits is out of range, anything else junk. */
            size_t i = (p[0] == '+') ? 1 : 0;
            while (i < len && isdigit((unsigned char)p[i]))
                i++;
            if (i == len)
                r = NUM_RANGE;
        } else {
            memcpy(buf, p, len);
            buf[len] = '\0';
            r = parse_i64(buf, 0, INT64_MAX, &v);
        }
        if (r != NUM_OK) {
            fprintf(err, "agmm: --m-local: %seach value an integer from 0 to %" PRId64
                         " (got '%.*s' in '%s')\n",
                    r == NUM_RANGE ? "out of range; give " : "give ", (int64_t)INT64_MAX,
                    (int)(len > 40 ? 40 : len), p, arg);
            return -1;
        }
        cli->m_local[count++] = v;
        if (!comma)
            break;
        p = comma + 1;
    }
    cli->m_local_count = count;
    return 0;
}

/* --mode M[,M...] */
static int get_mode(FILE *err, const char *arg, unsigned *modes)
{
    static const struct {
        const char *name;
        unsigned modes;
    } k[] = {{"all", AGMM_BENCH_ALL},           {"fused", AGMM_BENCH_FUSED},
             {"baseline", AGMM_BENCH_BASELINE}, {"auto", AGMM_BENCH_AUTO},
             {"gemm-only", AGMM_BENCH_GEMM_ONLY}, {"comm-only", AGMM_BENCH_COMM_ONLY}};
    unsigned set = 0;
    const char *p = arg;
    for (;;) {
        size_t len = strcspn(p, ",");
        size_t i = 0;
        while (i < sizeof k / sizeof k[0] &&
               !(strlen(k[i].name) == len && !strncmp(p, k[i].name, len)))
            i++;
        if (i == sizeof k / sizeof k[0]) {
            fprintf(err, "agmm: --mode: a comma-separated list of all, fused, baseline, "
                         "auto, gemm-only, comm-only (got '%s')\n", arg);
            return -1;
        }
        set |= k[i].modes;
        if (!p[len])
            break;
        p += len + 1;
    }
    *modes = set;
    return 0;
}

/* A finite decimal number in (lo, hi], or [lo, hi] when lo_inclusive. */
static int get_number(FILE *err, int val, const char *arg, double lo, int lo_inclusive,
                      double hi, const char *unit, double *out)
{
    /* parse_seconds takes (lo_excl, hi]: widen, then apply the bound. */
    double v = 0;
    num_result_t r = parse_seconds(arg, lo_inclusive ? -1.0 : lo, hi, &v);
    if (r == NUM_OK && (v < lo || (!lo_inclusive && v <= lo)))
        r = NUM_RANGE;
    if (r != NUM_OK) {
        fprintf(err, "agmm: --%s: %sa number of %s %s %g and <= %g (got '%s')\n",
                opt_name(val), r == NUM_RANGE ? "out of range; give " : "give ", unit,
                lo_inclusive ? ">=" : ">", lo, hi, arg);
        return -1;
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ cores */

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    if (n > INT_MAX)
        return INT_MAX;
    return (int)n;
}

static int default_comm(int ranks, int online)
{
    return (int64_t)ranks * 2 <= (int64_t)online ? 1 : 0;
}

static int default_gemm(int ranks, int online, int comm)
{
    int64_t g = (int64_t)(online / (ranks > 0 ? ranks : 1)) - comm;
    return g < 1 ? 1 : (int)g;
}

void agmm_cli_resolve_cores(agmm_cli_t *cli)
{
    /* The ranks that share this host's cores (all of them on shm). */
    int here = cli->ranks_here > 0 ? cli->ranks_here : cli->ranks;
    if (!cli->comm_cores_set)
        cli->comm_cores = default_comm(here, cli->online_cores);
    if (!cli->gemm_cores_set)
        cli->gemm_cores = default_gemm(here, cli->online_cores, cli->comm_cores);
}

/* ------------------------------------------------------------ usage */

void agmm_cli_usage_top(FILE *out)
{
    fprintf(out,
            "agmm %s: tensor-parallel all-gather + GEMM with communication/computation\n"
            "overlap, on CPUs.\n"
            "\n"
            "usage: agmm run   [options]   compute C = gather(A_0..A_{P-1}) @ W on P ranks\n"
            "                              and check it against a reference\n"
            "       agmm bench [options]   time repeated rounds (fused vs. baseline)\n"
            "       agmm --help | --version\n"
            "\n"
            "Run 'agmm run --help' or 'agmm bench --help' for the options.\n"
            "Exit codes: 0 ok, 1 check failed or a rank failed, 2 bad input.\n",
            AGMM_VERSION_STRING);
}

static void cli_defaults(agmm_cli_t *cli, agmm_cmd_t cmd)
{
    memset(cli, 0, sizeof *cli);
    cli->cmd = cmd;
    cli->ranks = CLI_DEFAULT_RANKS;
    cli->m_local[0] = CLI_DEFAULT_M_LOCAL;
    cli->m_local_count = 0;
    cli->k = CLI_DEFAULT_K;
    cli->n = CLI_DEFAULT_N;
    cli->tile_m = CLI_DEFAULT_TILE_M;
    cli->tile_n = CLI_DEFAULT_TILE_N;
    cli->dtype = AGMM_DTYPE_FP16;
    cli->weights = AGMM_WEIGHTS_SHARED;
    cli->timeout_s = CLI_DEFAULT_TIMEOUT;
    cli->rounds = cmd == AGMM_CMD_BENCH ? 20 : 1;
    cli->warmup = cmd == AGMM_CMD_BENCH ? 5 : 0;
    cli->seed = CLI_DEFAULT_SEED;
    cli->check = cmd == AGMM_CMD_RUN ? 1 : 0;
    cli->schedule = AGMM_SCHEDULE_AUTO;
    cli->bench_modes = AGMM_BENCH_FUSED | AGMM_BENCH_BASELINE;
    cli->online_cores = online_cores();
}

void agmm_cli_usage(FILE *out, const agmm_cli_t *cli_or_null, agmm_cmd_t cmd)
{
    agmm_cli_t tmp;
    if (cli_or_null) {
        tmp = *cli_or_null;
    } else {
        cli_defaults(&tmp, cmd);
    }
    if (tmp.online_cores < 1)
        tmp.online_cores = 1;
    if (tmp.ranks < 1)
        tmp.ranks = 1;
    agmm_cli_resolve_cores(&tmp);
    const int bench = cmd == AGMM_CMD_BENCH;
    const char *cores_s = tmp.online_cores == 1 ? "core" : "cores";
    const char *ranks_s = tmp.ranks == 1 ? "rank" : "ranks";

    fprintf(out, "usage: agmm %s [options]\n\n", cmd_name(cmd));
    if (bench)
        fprintf(out, "Times repeated rounds of C_r = gather(A_0..A_{P-1}) @ W_r on P ranks\n"
                     "(forked processes on this host, shared memory).\n\n");
    else
        fprintf(out, "Computes C_r = gather(A_0..A_{P-1}) @ W_r on P ranks (forked processes\n"
                     "on this host, shared memory) and checks it against a reference.\n\n");

    fprintf(out,
            "Problem:\n"
            "  --ranks P             ranks (1..%d, default %d)\n"
            "  --m-local ROWS[,...]  rows of each rank's shard A_r: one value for every rank\n"
            "                        or exactly P comma-separated values; each >= 0, sum >= 1\n"
            "                        (default %d)\n"
            "  --k K                 inner dimension, >= 1 (default %d)\n"
            "  --n N                 columns of W and C, >= 1 (default %d)\n"
            "  --tile-m ROWS         rows per tile, >= 1 (default %d)\n"
            "  --tile-n COLS         columns per GEMM work item, >= 1 (default %d)\n"
            "  --dtype T             fp16 | bf16 | fp32, of A and W; C is fp32 (default fp16)\n"
            "  --gemm-engine E       onednn | openblas | auto: the tile GEMM library; auto is\n"
            "                        onednn when built in (here: %s)\n"
            "  --weights W           shared (same W on every rank) | per-rank (default shared)\n"
            "  --seed S              input seed, 0..18446744073709551615 (default %u)\n"
            "\n",
            AGMM_CLI_MAX_RANKS, CLI_DEFAULT_RANKS, CLI_DEFAULT_M_LOCAL, CLI_DEFAULT_K,
            CLI_DEFAULT_N, CLI_DEFAULT_TILE_M, CLI_DEFAULT_TILE_N,
            agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN) ? "onednn" : "openblas",
            CLI_DEFAULT_SEED);

    fprintf(out, "Threads (per rank; ranks x (comm + GEMM) must fit the online cores):\n");
    if (tmp.comm_cores_set)
        fprintf(out, "  --comm-cores C        communication threads per rank, 0..%d (given: %d)\n",
                AGMM_CLI_MAX_CORES, tmp.comm_cores);
    else
        fprintf(out,
                "  --comm-cores C        communication threads per rank, 0..%d; 0: GEMM threads\n"
                "                        send (default here: %d for %d %s on %d online %s)\n",
                AGMM_CLI_MAX_CORES, tmp.comm_cores, tmp.ranks, ranks_s, tmp.online_cores,
                cores_s);
    if (tmp.gemm_cores_set)
        fprintf(out, "  --gemm-cores G        GEMM threads per rank, 1..%d (given: %d)\n",
                AGMM_CLI_MAX_CORES, tmp.gemm_cores);
    else if (tmp.comm_cores_set)
        fprintf(out,
                "  --gemm-cores G        GEMM threads per rank, 1..%d (default here: %d for %d\n"
                "                        %s with %d comm on %d online %s)\n",
                AGMM_CLI_MAX_CORES, tmp.gemm_cores, tmp.ranks, ranks_s, tmp.comm_cores,
                tmp.online_cores, cores_s);
    else
        fprintf(out,
                "  --gemm-cores G        GEMM threads per rank, 1..%d (default here: %d for %d\n"
                "                        %s on %d online %s)\n",
                AGMM_CLI_MAX_CORES, tmp.gemm_cores, tmp.ranks, ranks_s, tmp.online_cores,
                cores_s);
    fprintf(out,
            "  --oversubscribe       allow more threads than online cores\n"
            "                        default rule: comm = 1 if 2 x ranks <= online cores,\n"
            "                        else 0; GEMM = max(1, online / ranks - comm)\n"
            "\n");

    fprintf(out,
            "Schedule:\n"
            "  --schedule S          fused | baseline | auto: auto measures its first %d\n"
            "                        rounds (fused and baseline alternate) and keeps the\n"
            "                        faster (default auto)%s\n",
            2 * AGMM_AUTO_TRIALS,
            bench ? "; bench: time this schedule alone" : "");
    if (bench)
        fprintf(out,
                "  --mode M[,M...]       all | fused | baseline | auto | gemm-only | comm-only\n"
                "                        (default fused,baseline; gemm-only also times the\n"
                "                        monolithic GEMM)\n");
    fprintf(out,
            "  --link-gbps G         emulate a link of G Gbit/s per direction between every\n"
            "                        pair of ranks, 0 < G <= %.0f (default: no emulation)\n"
            "  --link-latency-us L   its one-way latency, 0..%.0f us (default 0; needs\n"
            "                        --link-gbps)\n"
            "\n",
            CLI_MAX_LINK_GBPS, CLI_MAX_LINK_LATENCY_US);

    fprintf(out,
            "Run:\n"
            "  --timeout SECONDS     per-wait timeout, > 0 and <= %.0f (default %.0f)\n"
            "  --rounds R            rounds, >= 1 (default %d)\n"
            "  --warmup W            untimed rounds first, >= 0 (default %d)\n",
            CLI_MAX_TIMEOUT, CLI_DEFAULT_TIMEOUT, bench ? 20 : 1, bench ? 5 : 0);
    if (bench)
        fprintf(out, "  --no-check            accepted; bench does not check results\n");
    else
        fprintf(out, "  --no-check            skip the check against the reference (default: check)\n");
    fprintf(out,
            "  --transport T         shm: forked ranks on this host sharing memory | mpi: the\n"
            "                        ranks of an MPI launcher (mpirun -np P agmm %s ...;\n"
            "                        --ranks then defaults to P). Default: mpi when started\n"
            "                        by an MPI launcher, else shm\n"
            "  --json                print the result as one JSON object on stdout\n"
            "  --trace FILE.json     write a timeline of every put, wait and GEMM call of\n"
            "                        every rank and thread (Chrome trace events: open in\n"
            "                        ui.perfetto.dev or chrome://tracing) and print a\n"
            "                        per-round summary (see docs/tracing.md)\n"
            "  --trace-svg FILE.svg  draw that timeline as an SVG picture\n"
            "  -v, --verbose         more output on stderr (repeatable)\n"
            "  -h, --help            this text\n"
            "      --version         print the version\n"
            "\n"
            "Exit codes: 0 ok, 1 check failed or a rank failed, 2 bad input.\n",
            cmd_name(cmd));
}

static void print_version(FILE *out)
{
    fprintf(out, "agmm %s\n", AGMM_VERSION_STRING);
    fprintf(out, "all-gather + GEMM with communication/computation overlap, on CPUs\n");
    fprintf(out, "gemm engines: %sopenblas\n",
            agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN) ? "onednn " : "");
}

/* ------------------------------------------------------------ validation */

static int mul_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0)
        return -1;
    if (a != 0 && b > INT64_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* An output file must be creatable: its directory exists and is writable,
 * and the path is not a directory. Nothing is created here. */
static int check_out_path(FILE *err, int val, const char *path)
{
    if (!*path) {
        fprintf(err, "agmm: --%s: give a file name (got '')\n", opt_name(val));
        return -1;
    }
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(err, "agmm: --%s: '%s' is a directory; give a file name\n",
                opt_name(val), path);
        return -1;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (strlen(path) >= sizeof dir - 16) {
        fprintf(err, "agmm: --%s: path longer than %zu characters\n", opt_name(val),
                sizeof dir - 16);
        return -1;
    }
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(err, "agmm: --%s: cannot write '%s' (directory '%s': %s)\n",
                opt_name(val), path, dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int validate(agmm_cli_t *cli, FILE *err, int world_size, int ranks_here)
{
    if (cli->trace_json && check_out_path(err, OPT_TRACE, cli->trace_json))
        return 2;
    if (cli->trace_svg && check_out_path(err, OPT_TRACE_SVG, cli->trace_svg))
        return 2;
    if (cli->trace_json && cli->trace_svg && !strcmp(cli->trace_json, cli->trace_svg)) {
        fprintf(err, "agmm: --trace/--trace-svg: give two different files (both are '%s')\n",
                cli->trace_json);
        return 2;
    }
    /* Under MPI the launcher decides the ranks. */
    if (world_size > 0) {
        if (cli->ranks_set && cli->ranks != world_size) {
            fprintf(err, "agmm: --ranks: %d given but the MPI launcher started %d rank%s "
                         "(omit --ranks or make it match)\n",
                    cli->ranks, world_size, world_size == 1 ? "" : "s");
            return 2;
        }
        cli->ranks = world_size;
        cli->ranks_here = ranks_here > 0 && ranks_here <= world_size ? ranks_here : world_size;
    } else {
        cli->ranks_here = cli->ranks;
    }

    if (cli->link_latency_us > 0 && !(cli->link_gbps > 0)) {
        fprintf(err, "agmm: --link-latency-us: needs --link-gbps (the link emulator is off "
                     "without a link speed)\n");
        return 2;
    }
    if (cli->cmd == AGMM_CMD_BENCH && (cli->bench_modes & AGMM_BENCH_GEMM_ONLY) &&
        cli->transport_mpi) {
        fprintf(err, "agmm: --mode: gemm-only (also in 'all') needs the shared-memory "
                     "transport; under MPI use --mode fused,baseline,auto,comm-only\n");
        return 2;
    }
    if (cli->link_gbps > 0 && cli->transport_mpi) {
        fprintf(err, "agmm: --link-gbps: the link emulator is part of the shared-memory "
                     "transport (not with MPI)\n");
        return 2;
    }
    /* --m-local against --ranks */
    if (cli->m_local_count > 1 && cli->m_local_count != cli->ranks) {
        fprintf(err, "agmm: --m-local: %d values given but --ranks is %d (give 1 value or %d)\n",
                cli->m_local_count, cli->ranks, cli->ranks);
        return 2;
    }
    if (cli->m_local_count <= 1) {
        int64_t v = cli->m_local[0];
        for (int r = 0; r < cli->ranks; r++)
            cli->m_local[r] = v;
    }
    for (int r = cli->ranks; r < AGMM_CLI_MAX_RANKS; r++)
        cli->m_local[r] = 0;

    /* M and byte counts */
    int64_t m = 0;
    int overflow = 0;
    for (int r = 0; r < cli->ranks; r++) {
        if (cli->m_local[r] > INT64_MAX - m) {
            overflow = 1;
            break;
        }
        m += cli->m_local[r];
    }
    if (!overflow && m < 1) {
        fprintf(err, "agmm: --m-local: all shards are empty; at least one row is needed\n");
        return 2;
    }
    if (!overflow && m > INT_MAX) { /* CBLAS dimensions are int */
        fprintf(err, "agmm: --m-local: the shards add up to %" PRId64 " rows; at most %d "
                     "(M is a CBLAS int dimension)\n", m, INT_MAX);
        return 2;
    }
    if (!overflow) {
        int64_t t;
        if (mul_i64(m, cli->k, &t) || mul_i64(t, 4, &t) ||
            mul_i64(cli->k, cli->n, &t) || mul_i64(t, 4, &t) ||
            mul_i64(m, cli->n, &t) || mul_i64(t, 4, &t))
            overflow = 1;
    }
    if (overflow) {
        fprintf(err, "agmm: --m-local/--k/--n: sizes overflow 64-bit byte counts "
                     "(M = sum of --m-local, K = %" PRId64 ", N = %" PRId64 ")\n",
                cli->k, cli->n);
        return 2;
    }
    cli->m_total = m;

    /* Core budget */
    agmm_cli_resolve_cores(cli);
    int64_t threads = (int64_t)cli->ranks_here * ((int64_t)cli->comm_cores + cli->gemm_cores);
    if (threads > cli->online_cores && !cli->oversubscribe) {
        const char *rs = cli->ranks_here == 1 ? "rank" : "ranks";
        const char *cs = cli->online_cores == 1 ? "core" : "cores";
        fprintf(err,
                "agmm: --comm-cores/--gemm-cores: %d %s x (%d comm + %d GEMM) = %" PRId64
                " threads exceed the %d online %s",
                cli->ranks_here, rs, cli->comm_cores, cli->gemm_cores, threads, cli->online_cores,
                cs);
        if (!cli->comm_cores_set && !cli->gemm_cores_set)
            fprintf(err, " (default for %d %s; pass --oversubscribe to run more threads "
                         "than cores)\n", cli->ranks_here, rs);
        else if (!cli->gemm_cores_set)
            fprintf(err, " (--gemm-cores defaults to at least 1; use fewer cores or "
                         "--oversubscribe)\n");
        else
            fprintf(err, " (use fewer cores or --oversubscribe)\n");
        return 2;
    }

    /* Warnings: idle cores */
    int max_rank = 0;
    int64_t max_tiles = 0, row_tiles_total = 0;
    for (int r = 0; r < cli->ranks; r++) {
        int64_t t = ceil_div(cli->m_local[r], cli->tile_m);
        row_tiles_total += t; /* <= M, no overflow */
        if (t > max_tiles) {
            max_tiles = t;
            max_rank = r;
        }
    }
    if (cli->comm_cores > 0 && cli->comm_cores > max_tiles) {
        fprintf(err, "agmm: warning: --comm-cores %d%s exceeds the %" PRId64
                     " row tile%s of rank %d; extra comm cores will be idle\n",
                cli->comm_cores, cli->comm_cores_set ? "" : " (default)", max_tiles,
                max_tiles == 1 ? "" : "s", max_rank);
    }
    int64_t col_blocks = ceil_div(cli->n, cli->tile_n);
    int64_t items = 0;
    if (mul_i64(row_tiles_total, col_blocks, &items) == 0 && cli->gemm_cores > items) {
        fprintf(err, "agmm: warning: --gemm-cores %d%s exceeds the %" PRId64
                     " GEMM work item%s per rank (%" PRId64 " row tile%s x %" PRId64
                     " column block%s); extra GEMM cores will be idle\n",
                cli->gemm_cores, cli->gemm_cores_set ? "" : " (default)", items,
                items == 1 ? "" : "s", row_tiles_total, row_tiles_total == 1 ? "" : "s",
                col_blocks, col_blocks == 1 ? "" : "s");
    }
    return 0;
}

/* ------------------------------------------------------------ parse */

int agmm_cli_wants_mpi(int argc, char **argv)
{
    int mpi = agmm_mpi_launcher_detected();
    for (int i = 2; argv && i < argc && argv[i]; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--transport") && i + 1 < argc)
            v = argv[++i];
        else if (!strncmp(argv[i], "--transport=", 12))
            v = argv[i] + 12;
        /* Anything but shm keeps a detected launcher's world, so a bad
         * value is reported once (by rank 0) under mpirun. */
        if (v)
            mpi = strcmp(v, "shm") != 0 && (mpi || !strcmp(v, "mpi"));
    }
    return mpi;
}

static int parse_impl(int argc, char **argv, agmm_cli_t *cli, FILE *out, FILE *err,
                      int world_size, int ranks_here);

int agmm_cli_parse(int argc, char **argv, agmm_cli_t *cli, FILE *out, FILE *err)
{
    return parse_impl(argc, argv, cli, out, err, 0, 0);
}

int agmm_cli_parse_mpi(int argc, char **argv, agmm_cli_t *cli, FILE *out, FILE *err,
                       int world_size, int ranks_here)
{
    return parse_impl(argc, argv, cli, out, err, world_size < 1 ? 1 : world_size,
                      ranks_here);
}

static int parse_impl(int argc, char **argv, agmm_cli_t *cli, FILE *out, FILE *err,
                      int world_size, int ranks_here)
{
    if (!cli)
        return 2;
    if (!out)
        out = stdout;
    if (!err)
        err = stderr;
    cli_defaults(cli, AGMM_CMD_RUN);

    if (argc < 2 || !argv || !argv[1]) {
        agmm_cli_usage_top(err);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        agmm_cli_usage_top(out);
        return -1;
    }
    if (!strcmp(c, "--version")) {
        print_version(out);
        return -1;
    }
    agmm_cmd_t cmd;
    if (!strcmp(c, "run")) {
        cmd = AGMM_CMD_RUN;
    } else if (!strcmp(c, "bench")) {
        cmd = AGMM_CMD_BENCH;
    } else {
        if (c[0] == '-' && c[1] != '\0')
            fprintf(err, "agmm: unknown command '%s' (allowed: run, bench; options go after "
                         "the command)\n", c);
        else
            fprintf(err, "agmm: unknown command '%s' (allowed: run, bench)\n", c);
        return 2;
    }
    cli_defaults(cli, cmd);

    /* getopt over argv[1..]: "run" plays argv[0]. '+': stop at the first
     * non-option (no permutation, argv untouched); ':': report a missing
     * argument as ':'. optind = 0 re-initialises glibc's getopt fully. */
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    int mode_set = 0;
    optind = 0;
    opterr = 0;
    for (;;) {
        int longidx = -1;
        optopt = 0;
        int o = getopt_long(sub_argc, sub_argv, "+:hv", k_long_opts, &longidx);
        if (o == -1)
            break;
        const char *arg = optarg;
        if (longidx >= 0 && o != ':' && o != '?') {
            /* Refuse abbreviations ("--ran" for --ranks): getopt_long accepts
             * unique prefixes, which would make typos silently valid. */
            const struct option *lo = &k_long_opts[longidx];
            int sep = lo->has_arg != no_argument && optarg && optind >= 2 &&
                      optarg == sub_argv[optind - 1];
            const char *word = sub_argv[optind - 1 - sep];
            size_t len = strlen(lo->name);
            if (strncmp(word, "--", 2) != 0 || strncmp(word + 2, lo->name, len) != 0 ||
                (word[2 + len] != '\0' && word[2 + len] != '=')) {
                const char *eq = strchr(word, '=');
                int wl = eq ? (int)(eq - word) : (int)strlen(word);
                fprintf(err, "agmm: unknown option '%.*s' (did you mean --%s? see agmm %s --help)\n",
                        wl, word, lo->name, cmd_name(cmd));
                return 2;
            }
        }
        switch (o) {
        case OPT_HELP:
            agmm_cli_usage(out, cli, cmd);
            return -1;
        case OPT_VERSION:
            print_version(out);
            return -1;
        case OPT_VERBOSE:
            cli->verbose++;
            break;
        case OPT_RANKS:
            if (get_int(err, o, arg, 1, AGMM_CLI_MAX_RANKS, &cli->ranks))
                return 2;
            cli->ranks_set = 1;
            break;
        case OPT_TRANSPORT:
            if (!strcmp(arg, "shm") || !strcmp(arg, "mpi")) {
                cli->transport_mpi = !strcmp(arg, "mpi");
            } else {
                fprintf(err, "agmm: --transport: one of shm, mpi (got '%s')\n", arg);
                return 2;
            }
            break;
        case OPT_M_LOCAL:
            if (get_m_local(err, arg, cli))
                return 2;
            break;
        case OPT_K: /* CBLAS dimensions are int */
            if (get_i64(err, o, arg, 1, INT_MAX, &cli->k))
                return 2;
            break;
        case OPT_N:
            if (get_i64(err, o, arg, 1, INT_MAX, &cli->n))
                return 2;
            break;
        case OPT_TILE_M:
            if (get_i64(err, o, arg, 1, INT64_MAX, &cli->tile_m))
                return 2;
            break;
        case OPT_TILE_N:
            if (get_i64(err, o, arg, 1, INT64_MAX, &cli->tile_n))
                return 2;
            break;
        case OPT_DTYPE: {
            static const char *const names[] = {"fp16", "bf16", "fp32"};
            static const int values[] = {AGMM_DTYPE_FP16, AGMM_DTYPE_BF16,
                                         AGMM_DTYPE_FP32};
            int v;
            if (get_choice(err, "--dtype", arg, names, values, 3, &v)) return 2;
            cli->dtype = (agmm_dtype_t)v;
            break;
        }
        case OPT_GEMM_ENGINE: {
            static const char *const names[] = {"onednn", "openblas", "auto"};
            static const int values[] = {AGMM_GEMM_ENGINE_ONEDNN,
                                         AGMM_GEMM_ENGINE_OPENBLAS,
                                         AGMM_GEMM_ENGINE_AUTO};
            int v;
            if (get_choice(err, "--gemm-engine", arg, names, values, 3, &v))
                return 2;
            if (!agmm_gemm_engine_available((agmm_gemm_engine_kind_t)v)) {
                fprintf(err, "agmm: --gemm-engine: %s is not built in (this "
                        "agmm has openblas; build with libdnnl-dev)\n", arg);
                return 2;
            }
            cli->gemm_engine = (agmm_gemm_engine_kind_t)v;
            break;
        }
        case OPT_WEIGHTS: {
            static const char *const names[] = {"shared", "per-rank"};
            static const int values[] = {AGMM_WEIGHTS_SHARED,
                                         AGMM_WEIGHTS_PER_RANK};
            int v;
            if (get_choice(err, "--weights", arg, names, values, 2, &v))
                return 2;
            cli->weights = (agmm_weights_t)v;
            break;
        }
        case OPT_COMM_CORES:
            if (get_int(err, o, arg, 0, AGMM_CLI_MAX_CORES, &cli->comm_cores))
                return 2;
            cli->comm_cores_set = 1;
            break;
        case OPT_GEMM_CORES:
            if (get_int(err, o, arg, 1, AGMM_CLI_MAX_CORES, &cli->gemm_cores))
                return 2;
            cli->gemm_cores_set = 1;
            break;
        case OPT_OVERSUBSCRIBE:
            cli->oversubscribe = 1;
            break;
        case OPT_TIMEOUT: {
            num_result_t r = parse_seconds(arg, 0.0, CLI_MAX_TIMEOUT, &cli->timeout_s);
            if (r != NUM_OK) {
                fprintf(err, "agmm: --timeout: %sa number of seconds > 0 and <= %.0f "
                             "(got '%s')\n",
                        r == NUM_RANGE ? "out of range; give " : "give ", CLI_MAX_TIMEOUT, arg);
                return 2;
            }
            break;
        }
        case OPT_ROUNDS:
            if (get_int(err, o, arg, 1, CLI_MAX_COUNT, &cli->rounds))
                return 2;
            break;
        case OPT_WARMUP:
            if (get_int(err, o, arg, 0, CLI_MAX_COUNT, &cli->warmup))
                return 2;
            break;
        case OPT_SEED: {
            num_result_t r = parse_u64(arg, &cli->seed);
            if (r != NUM_OK) {
                fprintf(err, "agmm: --seed: %sa decimal integer from 0 to %" PRIu64
                             " (got '%s')\n",
                        r == NUM_RANGE ? "out of range; give " : "give ", UINT64_MAX, arg);
                return 2;
            }
            break;
        }
        case OPT_JSON:
            cli->json = 1;
            break;
        case OPT_SCHEDULE:
            if (!strcmp(arg, "fused"))
                cli->schedule = AGMM_SCHEDULE_FUSED;
            else if (!strcmp(arg, "baseline"))
                cli->schedule = AGMM_SCHEDULE_BASELINE;
            else if (!strcmp(arg, "auto"))
                cli->schedule = AGMM_SCHEDULE_AUTO;
            else {
                fprintf(err, "agmm: --schedule: one of fused, baseline, auto (got '%s')\n", arg);
                return 2;
            }
            cli->schedule_set = 1;
            break;
        case OPT_MODE:
            if (cmd != AGMM_CMD_BENCH) {
                fprintf(err, "agmm: --mode: only for agmm bench (agmm run takes --schedule)\n");
                return 2;
            }
            if (get_mode(err, arg, &cli->bench_modes))
                return 2;
            mode_set = 1;
            break;
        case OPT_LINK_GBPS:
            if (get_number(err, o, arg, 0.0, 0, CLI_MAX_LINK_GBPS, "Gbit/s", &cli->link_gbps))
                return 2;
            break;
        case OPT_LINK_LATENCY:
            if (get_number(err, o, arg, 0.0, 1, CLI_MAX_LINK_LATENCY_US, "microseconds",
                           &cli->link_latency_us))
                return 2;
            break;
        case OPT_NO_CHECK:
            cli->check = 0;
            break;
        case OPT_TRACE:
            cli->trace_json = arg;
            break;
        case OPT_TRACE_SVG:
            cli->trace_svg = arg;
            break;
        case ':': {
            /* Missing argument: the option is the last word consumed. */
            if (optopt >= 256 && is_known_val(optopt))
                fprintf(err, "agmm: --%s: missing value (see agmm %s --help)\n",
                        opt_name(optopt), cmd_name(cmd));
            else
                fprintf(err, "agmm: %s: missing value (see agmm %s --help)\n",
                        sub_argv[optind - 1], cmd_name(cmd));
            return 2;
        }
        case '?':
        default: {
            const char *word = (optind >= 1 && optind <= sub_argc) ? sub_argv[optind - 1] : "";
            if (optopt != 0 && is_known_val(optopt) && word[0] == '-' && word[1] == '-') {
                /* "--json=1": a flag given a value. */
                fprintf(err, "agmm: --%s: takes no value (got '%s')\n", opt_name(optopt),
                        word);
            } else if (optopt != 0 && optopt < 256) {
                fprintf(err, "agmm: unknown option '-%c' (see agmm %s --help)\n", optopt,
                        cmd_name(cmd));
            } else {
                const char *eq = strchr(word, '=');
                int len = eq ? (int)(eq - word) : (int)strlen(word);
                /* An ambiguous abbreviation is reported the same way. */
                fprintf(err, "agmm: unknown option '%.*s' (see agmm %s --help)\n", len, word,
                        cmd_name(cmd));
            }
            return 2;
        }
        }
    }
    if (cmd == AGMM_CMD_BENCH && cli->schedule_set) {
        unsigned want = cli->schedule == AGMM_SCHEDULE_FUSED      ? AGMM_BENCH_FUSED
                        : cli->schedule == AGMM_SCHEDULE_BASELINE ? AGMM_BENCH_BASELINE
                                                                  : AGMM_BENCH_AUTO;
        if (mode_set && cli->bench_modes != want) {
            fprintf(err, "agmm: --schedule: conflicts with --mode (bench times --mode; "
                         "--schedule S alone means --mode S)\n");
            return 2;
        }
        cli->bench_modes = want;
    }
    if (optind < sub_argc) {
        fprintf(err, "agmm: unexpected argument '%s' (agmm %s takes only options; see "
                     "agmm %s --help)\n",
                sub_argv[optind], cmd_name(cmd), cmd_name(cmd));
        return 2;
    }
    /* Leave getopt clean for any later caller. */
    optind = 0;
    if (world_size > 0)
        cli->transport_mpi = 1;
    return validate(cli, err, world_size, ranks_here);
}

/* ------------------------------------------------------------ memory */

static void fmt_bytes(char *buf, size_t size, long double b)
{
    const long double gib = 1024.0L * 1024.0L * 1024.0L;
    if (b >= 1024.0L * gib)
        snprintf(buf, size, "%.1Lf TiB", b / (1024.0L * gib));
    else if (b >= gib / 10.0L)
        snprintf(buf, size, "%.1Lf GiB", b / gib);
    else
        snprintf(buf, size, "%.1Lf MiB", b / (1024.0L * 1024.0L));
}

int agmm_cli_check_memory(const agmm_cli_t *cli, uint64_t bytes_per_rank, FILE *err)
{
    if (!cli)
        return 0;
    if (!err)
        err = stderr;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long avail_kib = 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &avail_kib) == 1) {
            found = 1;
            break;
        }
    }
    fclose(f);
    if (!found)
        return 0;
    long double avail = (long double)avail_kib * 1024.0L;
    /* The ranks on this host share its memory (all of them on shm). */
    int ranks = cli->ranks_here > 0 ? cli->ranks_here : cli->ranks > 0 ? cli->ranks : 1;
    /* bytes_per_rank == 0 means the library found the plan invalid or its
     * byte count overflowing: treat as too large. */
    long double need = bytes_per_rank == 0 ? (long double)UINT64_MAX * ranks
                                           : (long double)bytes_per_rank * ranks;
    if (need <= avail)
        return 0;
    char nb[32], ab[32];
    if (bytes_per_rank == 0)
        snprintf(nb, sizeof nb, "more than 16 EiB");
    else
        fmt_bytes(nb, sizeof nb, need);
    fmt_bytes(ab, sizeof ab, avail);
    fprintf(err, "agmm: --m-local/--k/--n: the plan needs %s on %d %s but only %s is available\n",
            nb, ranks, ranks == 1 ? "rank" : "ranks", ab);
    return 2;
}
