/*
 * The option table of the `agmm` tool: one row per option, and everything
 * else (getopt_long's table, parsing, range messages, defaults, --help) is
 * generated from it. Internal to tools/agmm/cli/; the public face is cli.h.
 *
 *   options.c  the table, the word lists, the defaults
 *   defaults.c a command's starting values from the table, this host's
 *              cores
 *   parse.c    getopt_long over the table; one error line
 *   numbers.c  strict numbers, the --m-local / --k-local lists
 *   checks.c   what one row cannot say: --schedule against --mode, and
 *              opt_validate running every check in order: output paths,
 *              MPI, the link, the GEMM path, then the dtype
 *              (dtype_checks.c, gated_checks.c, wq_checks.c), the shapes
 *              and the plan (shape_checks.c), --bind (placement.c) and the
 *              cores (core_checks.c); the memory after parsing
 *              (memory_check.c)
 *   model_checks.c  agmm model's machine: --hosts/--ranks-per-host
 *              against --ranks, the transport, --gemm-rates
 *   usage.c    --help / --version text from the table
 *   desc.c     the plan description and shapes of the parsed options
 *              (desc.h), which the checks and every command use
 *
 * Names are unique except where a command has its own row of a name
 * (agmm model's --transport, --link-gbps, --link-latency-us: another
 * meaning, another help text); parse.c gives getopt_long, for each name,
 * the row of the command being parsed.
 */
#ifndef AGMM_TOOL_OPTIONS_H
#define AGMM_TOOL_OPTIONS_H

#include "cli.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What an option's value is, and so how it is parsed and stored. */
typedef enum {
    OPTK_HELP,    /* prints the usage text (parse returns -1) */
    OPTK_VERSION, /* prints the version (parse returns -1) */
    OPTK_COUNT,   /* no value; int field += 1 per use (-v -v) */
    OPTK_FLAG,    /* no value; int field = flag_value */
    OPTK_INT,     /* strict decimal in [min, max], int field */
    OPTK_INT64,   /* strict decimal in [min, max], int64_t field */
    OPTK_UINT64,  /* strict decimal 0..UINT64_MAX, uint64_t field */
    OPTK_DOUBLE, /* finite decimal in (min, max], or [min, max] with min_incl */
    OPTK_CHOICE, /* one word of `choices`; int-sized (enum) field */
    OPTK_LIST, /* comma-separated words of `choices`, values OR-ed; unsigned */
    OPTK_ROWS, /* --m-local: ROWS[,ROWS...] into the int64_t array field */
    OPTK_PATH, /* a file name (const char *); checked after parsing */
    OPTK_WORD, /* a word (const char *) the row's `accept` checks (value 0) */
} opt_kind_t;

/* Which commands take an option (a row is in --help only for those). */
enum {
    OPT_FOR_RUN = 1 << AGMM_CMD_RUN,
    OPT_FOR_BENCH = 1 << AGMM_CMD_BENCH,
    OPT_FOR_ALL = OPT_FOR_RUN | OPT_FOR_BENCH,
    OPT_FOR_CLEANUP = 1 << AGMM_CMD_CLEANUP,
    OPT_FOR_MODEL = 1 << AGMM_CMD_MODEL,
    /* the problem options: run, bench and model */
    OPT_FOR_PROBLEM = OPT_FOR_ALL | OPT_FOR_MODEL
};

/* The --help sections, in order. */
/* A section without rows for the command is left out of its --help. */
typedef enum {
    SEC_PROBLEM,
    SEC_THREADS,
    SEC_SCHEDULE,
    SEC_MACHINE, /* agmm model: hosts, transport, link */
    SEC_RATES,   /* agmm model: GEMM and memory rates, overheads */
    SEC_CLEANUP,
    SEC_RUN,
    SEC_COUNT
} opt_section_t;

/* A word an option accepts and the value it stands for. */
typedef struct opt_choice {
    const char *name;
    int value;
} opt_choice_t;

#define OPT_NO_FIELD ((size_t)-1)

typedef struct opt_row {
    const char *name; /* long name without "--" */
    char short_name;  /* 'h', 'v' or 0 */
    opt_kind_t kind;
    size_t field; /* offsetof(agmm_cli_t, ...), or OPT_NO_FIELD */
    /* an int set to 1 when given (e.g. ranks_set), or OPT_NO_FIELD */
    size_t set_field;
    /* OPTK_INT/INT64: the range; OPTK_DOUBLE: the range and its unit */
    int64_t min, max;
    double dmin, dmax;
    int min_incl; /* OPTK_DOUBLE: min itself allowed */
    /* OPTK_DOUBLE: "seconds" in "a number of seconds > 0 ..." */
    const char *unit;
    /* OPTK_CHOICE/LIST: the words, NULL-terminated */
    const opt_choice_t *choices;
    /* OPTK_CHOICE, instead of choices: makes the words (at the first use)
     * from the library's names, so that the tool lists none itself */
    const opt_choice_t *(*choices_fn)(void);
    /* OPTK_CHOICE: refuses a value (one error line; returns nonzero) */
    int (*accept)(FILE *err, const char *arg, int value);
    int flag_value; /* OPTK_FLAG */
    /* The default, per command ([AGMM_CMD_RUN], [AGMM_CMD_BENCH]); with
     * from_lib, agmm_plan_desc_init()'s value at lib_field instead. */
    int64_t def[2];
    double ddef;
    int from_lib;
    size_t lib_field; /* offsetof(agmm_plan_desc_t, ...) */
    unsigned cmds;    /* OPT_FOR_* */
    /* given to a command not in cmds: the error's tail */
    const char *only_hint;
    /* --help: section, label ("--ranks P"; NULL: "--name"), the text.
     * Lines after the first are indented to the text column. Templates:
     * {min} {max} {def} {choices} {cmd} {auto_rounds} {auto_engine}.
     * help_bench: the text for bench when it differs. help_fn: prints the
     * whole entry itself (defaults that depend on the host). */
    opt_section_t section;
    const char *label;
    const char *help;
    const char *help_bench;
    void (*help_fn)(FILE *out, const agmm_cli_t *resolved);
} opt_row_t;

/* The table (options.c), opt_count rows. */
extern const opt_row_t opt_table[];
extern const int opt_count;

/* The row of a long name, or NULL. */
const opt_row_t *opt_find(const char *name);

/* The row's words: its choices, or those its choices_fn makes. */
const opt_choice_t *opt_choices(const opt_row_t *row);

/* The word of a choice value, or "?". */
const char *opt_choice_name(const opt_row_t *row, int value);

/* All defaults for `cmd` (the table's and the library's), usable_cores
 * (defaults.c). */
void opt_defaults(agmm_cli_t *cli, agmm_cmd_t cmd);

/* The --help text for one row (options.c's help_fn rows, usage.c). */
void opt_help_cores_comm(FILE *out, const agmm_cli_t *resolved);
void opt_help_cores_gemm(FILE *out, const agmm_cli_t *resolved);

/* "run" / "bench" / "cleanup" / "model" */
const char *opt_cmd_name(agmm_cmd_t cmd);

/* Strict numbers (numbers.c): no whitespace, no junk, '+' allowed. */
typedef enum { NUM_OK, NUM_JUNK, NUM_RANGE } num_result_t;
num_result_t opt_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Strict decimal uint64 (numbers.c): a leading '-' is a range error. */
num_result_t opt_parse_u64(const char *s, uint64_t *out);
/* Strict finite decimal double in (lo_excl, hi] (numbers.c): digits or
 * ".5" first, no "inf", "nan" or hex. */
num_result_t opt_parse_double(const char *s, double lo_excl, double hi,
                              double *out);
/* "out of range; give " or "give ": how a refusal message starts. */
const char *opt_range_prefix(num_result_t r);

/* --m-local / --k-local N[,N...] into dst[] and *count (numbers.c; `name`
 * without dashes). Returns 0, or -1 after one error line. */
int opt_get_rows(FILE *err, const char *name, const char *arg, int64_t *dst,
                 int *count);

/* bench: --schedule S alone means --mode S, and conflicts with another
 * --mode (checks.c). Returns 0 or 2 after one error line. */
int opt_check_schedule_mode(agmm_cli_t *cli, FILE *err, int mode_given);

/* --dtype against --a-scale/--w-scale, --gemm-engine and --gemm-path
 * (int8; dtype_checks.c): 0 or 2 after one error line. */
int opt_check_dtype(const agmm_cli_t *cli, FILE *err);

/* --activation silu-mul / gelu-tanh-mul against --op and --n
 * (gated_checks.c): 0 or 2 after one error line. */
int opt_check_gated(const agmm_cli_t *cli, FILE *err);
/* --weight-dtype, --group-size, --zero-point against the rest (wq_checks.c):
 * one line and 2, or 0. */
int opt_check_wq(const agmm_cli_t *cli, FILE *err);

/* --n (the weights) and --m-local-per-round, then --m-local against
 * --ranks, M and the byte counts, --k-local (shape_checks.c): 0 or 2 after
 * one error line. opt_check_weights sets n, n_count, n_sum;
 * opt_check_rows fills m_local[] for every rank and m_total. */
int opt_check_weights(agmm_cli_t *cli, FILE *err);
int opt_check_rows(agmm_cli_t *cli, FILE *err);
/* The library's check of the description (agmm_plan_desc_check, quietly;
 * shape_checks.c), once the cores are resolved: 0 or 2 after one line. */
int opt_check_plan(const agmm_cli_t *cli, FILE *err);
/* The core budget and the idle-core warnings, after agmm_cli_resolve_cores
 * (core_checks.c): 0, or 2 after one error line (bench over budget
 * without --oversubscribe); warnings do not fail. */
int opt_check_cores(const agmm_cli_t *cli, FILE *err);

/* a * b of two counts >= 0 into *out: 0, or -1 if negative or over
 * INT64_MAX (shape_checks.c, core_checks.c). */
static inline int opt_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return -1;
    if (a != 0 && b > INT64_MAX / a) return -1;
    *out = a * b;
    return 0;
}

/* The cross-option checks after all options were read (checks.c):
 * returns 0 or 2 after one error line; warnings do not fail. */
int opt_validate(agmm_cli_t *cli, FILE *err, int world_size, int ranks_here);

/* agmm model (model_checks.c): --gemm-rates ROWS:GFLOPS[,...] into
 * out[AGMM_MODEL_MAX_RATES] and *n (rows increasing); 0, or -1 after one
 * error line. */
int opt_parse_rates(FILE *err, const char *arg, agmm_model_rate_t *out, int *n);
/* agmm model's machine against the problem, before the --m-local checks:
 * --ranks from --hosts x --ranks-per-host (or the other way), the
 * transport's default and its checks, the rates. 0 or 2 after one error
 * line. */
int opt_check_model(agmm_cli_t *cli, FILE *err);

/* The version text (usage.c). */
void opt_print_version(FILE *out);

#endif /* AGMM_TOOL_OPTIONS_H */
