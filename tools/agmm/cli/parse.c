/*
 * Parsing the `agmm` command line from the option table (options.h):
 * getopt_long's table is built from the rows, each value is read by its
 * row's kind with strict number rules (numbers.c), and every refusal is
 * one line
 * "agmm: --option: what is allowed (got 'X')". See cli.h and docs/cli.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "options.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/param.h"

/* getopt_long's value for a row: its short letter, else 256 + its index. */
#define OPT_VAL_BASE 256

static const opt_row_t *row_of_val(int val)
{
    for (int i = 0; i < opt_count; i++) {
        const opt_row_t *r = &opt_table[i];
        if ((r->short_name && r->short_name == val) ||
            (!r->short_name && val == OPT_VAL_BASE + i))
            return r;
    }
    return NULL;
}

/* ------------------------------------------------------------ values */

/* One word of opt_choices(row) (CHOICE), or a comma-separated set of them
 * (LIST, values OR-ed). Prints "agmm: --opt: one of a, b, c (got 'x')" or
 * "agmm: --opt: a comma-separated list of a, b, c (got 'x')". */
static int get_words(FILE *err, const opt_row_t *row, const char *arg, int *out)
{
    const int list = row->kind == OPTK_LIST;
    int set = 0;
    const char *p = arg;
    for (;;) {
        size_t len = list ? strcspn(p, ",") : strlen(p);
        const opt_choice_t *const words = opt_choices(row);
        const opt_choice_t *c = words;
        while (c->name &&
               !(strlen(c->name) == len && !strncmp(p, c->name, len)))
            c++;
        if (!c->name) {
            fprintf(err, "agmm: --%s: %s", row->name,
                    list ? "a comma-separated list of " : "one of ");
            for (c = words; c->name; c++)
                fprintf(err, "%s%s", c == words ? "" : ", ", c->name);
            fprintf(err, " (got '%s')\n", arg);
            return -1;
        }
        set = list ? set | c->value : c->value;
        if (!p[len]) break;
        p += len + 1;
    }
    *out = set;
    return 0;
}

/* Reads `arg` by the row's kind into its field. Returns 0, or -1 after one
 * error line naming the option. */
static int get_value(FILE *err, const opt_row_t *row, const char *arg,
                     agmm_cli_t *cli)
{
    void *f = (char *)cli + row->field;
    switch (row->kind) {
    case OPTK_INT:
    case OPTK_INT64: {
        int64_t v = 0;
        num_result_t r = opt_parse_i64(arg, row->min, row->max, &v);
        if (r != NUM_OK) {
            fprintf(err,
                    "agmm: --%s: %san integer from %" PRId64 " to %" PRId64
                    " (got '%s')\n",
                    row->name, opt_range_prefix(r), row->min, row->max, arg);
            return -1;
        }
        if (row->kind == OPTK_INT) {
            int i = (int)v;
            memcpy(f, &i, sizeof i);
        } else {
            memcpy(f, &v, sizeof v);
        }
        return 0;
    }
    case OPTK_UINT64: {
        uint64_t v = 0;
        num_result_t r = opt_parse_u64(arg, &v);
        if (r != NUM_OK) {
            fprintf(err,
                    "agmm: --%s: %sa decimal integer from 0 to %" PRIu64
                    " (got '%s')\n",
                    row->name, opt_range_prefix(r), UINT64_MAX, arg);
            return -1;
        }
        memcpy(f, &v, sizeof v);
        return 0;
    }
    case OPTK_DOUBLE: {
        /* parse_double takes (lo_excl, hi]: widen, then apply the bound. */
        double v = 0, lo = row->dmin;
        num_result_t r =
            opt_parse_double(arg, row->min_incl ? -1.0 : lo, row->dmax, &v);
        if (r == NUM_OK && (v < lo || (!row->min_incl && v <= lo)))
            r = NUM_RANGE;
        if (r != NUM_OK) {
            fprintf(err,
                    "agmm: --%s: %sa number of %s %s %g and <= %g (got '%s')\n",
                    row->name, opt_range_prefix(r), row->unit,
                    row->min_incl ? ">=" : ">", lo, row->dmax, arg);
            return -1;
        }
        memcpy(f, &v, sizeof v);
        return 0;
    }
    case OPTK_CHOICE: {
        int v = 0;
        if (get_words(err, row, arg, &v) ||
            (row->accept && row->accept(err, arg, v)))
            return -1;
        memcpy(f, &v, sizeof v);
        return 0;
    }
    case OPTK_LIST: {
        int v = 0;
        if (get_words(err, row, arg, &v)) return -1;
        unsigned u = (unsigned)v;
        memcpy(f, &u, sizeof u);
        return 0;
    }
    case OPTK_ROWS:
        return opt_get_rows(err, row->name, arg, (int64_t *)f,
                            !strcmp(row->name, "k-local") ? &cli->k_local_count
                            : !strcmp(row->name, "n")     ? &cli->n_count
                            : !strcmp(row->name, "m-local")
                                ? &cli->m_local_count
                                : &cli->rows_per_round_count);
    case OPTK_PATH: /* checked once all options are read (checks.c) */
        memcpy(f, &arg, sizeof arg);
        return 0;
    case OPTK_WORD:
        if (row->accept && row->accept(err, arg, 0)) return -1;
        memcpy(f, &arg, sizeof arg);
        return 0;
    case OPTK_COUNT: {
        int v;
        memcpy(&v, f, sizeof v);
        v++;
        memcpy(f, &v, sizeof v);
        return 0;
    }
    case OPTK_FLAG:
        memcpy(f, &row->flag_value, sizeof row->flag_value);
        return 0;
    case OPTK_HELP:
    case OPTK_VERSION:
        break;
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
        if (v) mpi = strcmp(v, "shm") != 0 && (mpi || !strcmp(v, "mpi"));
    }
    return mpi;
}

/* The word getopt_long just read: for "--k 5" (value in the next word)
 * the option word is one before the value. */
static const char *option_word(char **sub_argv, const struct option *lo)
{
    int sep = lo->has_arg != no_argument && optarg && optind >= 2 &&
              optarg == sub_argv[optind - 1];
    return sub_argv[optind - 1 - sep];
}

/* Reports what getopt_long refused (':' missing value, '?' unknown). */
static void report_getopt_error(FILE *err, int o, int sub_argc, char **sub_argv,
                                agmm_cmd_t cmd)
{
    const opt_row_t *known = optopt != 0 ? row_of_val(optopt) : NULL;
    const char *cn = opt_cmd_name(cmd);
    if (o == ':') {
        /* Missing argument: the option is the last word consumed. */
        if (optopt >= OPT_VAL_BASE && known)
            fprintf(err, "agmm: --%s: missing value (see agmm %s --help)\n",
                    known->name, cn);
        else
            fprintf(err, "agmm: %s: missing value (see agmm %s --help)\n",
                    sub_argv[optind - 1], cn);
        return;
    }
    const char *word =
        (optind >= 1 && optind <= sub_argc) ? sub_argv[optind - 1] : "";
    if (known && word[0] == '-' && word[1] == '-') {
        /* "--json=1": a flag given a value. */
        fprintf(err, "agmm: --%s: takes no value (got '%s')\n", known->name,
                word);
    } else if (optopt != 0 && optopt < OPT_VAL_BASE) {
        fprintf(err, "agmm: unknown option '-%c' (see agmm %s --help)\n",
                optopt, cn);
    } else {
        const char *eq = strchr(word, '=');
        int len = eq ? (int)(eq - word) : (int)strlen(word);
        /* An ambiguous abbreviation is reported the same way. */
        fprintf(err, "agmm: unknown option '%.*s' (see agmm %s --help)\n", len,
                word, cn);
    }
}

/* A row another row of its name replaces for `cmd` (that one is cmd's,
 * this one is not): getopt_long sees one row per name. */
static int shadowed(const opt_row_t *r, agmm_cmd_t cmd)
{
    if (r->cmds & (1u << cmd)) return 0;
    for (int i = 0; i < opt_count; i++)
        if (&opt_table[i] != r && !strcmp(opt_table[i].name, r->name) &&
            (opt_table[i].cmds & (1u << cmd)))
            return 1;
    return 0;
}

static int parse_impl(int argc, char **argv, agmm_cli_t *cli, FILE *out,
                      FILE *err, int world_size, int ranks_here)
{
    if (!cli) return 2;
    if (!out) out = stdout;
    if (!err) err = stderr;
    opt_defaults(cli, AGMM_CMD_RUN);

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
        opt_print_version(out);
        return -1;
    }
    if (!strcmp(c, "--help-env")) {
        agmm_param_print(out);
        return -1;
    }
    agmm_cmd_t cmd;
    if (!strcmp(c, "run")) {
        cmd = AGMM_CMD_RUN;
    } else if (!strcmp(c, "bench")) {
        cmd = AGMM_CMD_BENCH;
    } else if (!strcmp(c, "cleanup")) {
        cmd = AGMM_CMD_CLEANUP;
    } else if (!strcmp(c, "model")) {
        cmd = AGMM_CMD_MODEL;
    } else {
        if (c[0] == '-' && c[1] != '\0')
            fprintf(err,
                    "agmm: unknown command '%s' (allowed: run, bench, model, "
                    "cleanup; options go after the command)\n",
                    c);
        else
            fprintf(err,
                    "agmm: unknown command '%s' (allowed: run, bench, model, "
                    "cleanup)\n",
                    c);
        return 2;
    }
    opt_defaults(cli, cmd);

    /* getopt_long's tables from the rows: "+:" then the short letters. */
    struct option longs[opt_count + 1];
    char shorts[8 + 2 * opt_count];
    size_t ns = 0;
    int nl = 0;
    shorts[ns++] = '+';
    shorts[ns++] = ':';
    for (int i = 0; i < opt_count; i++) {
        const opt_row_t *r = &opt_table[i];
        if (shadowed(r, cmd)) continue;
        int takes_value = r->kind != OPTK_HELP && r->kind != OPTK_VERSION &&
                          r->kind != OPTK_COUNT && r->kind != OPTK_FLAG;
        longs[nl++] = (struct option){
            r->name, takes_value ? required_argument : no_argument, NULL,
            r->short_name ? r->short_name : OPT_VAL_BASE + i};
        if (r->short_name) {
            shorts[ns++] = r->short_name;
            if (takes_value) shorts[ns++] = ':';
        }
    }
    longs[nl] = (struct option){NULL, 0, NULL, 0};
    shorts[ns] = '\0';

    /* getopt over argv[1..]: "run" plays argv[0]. '+': stop at the first
     * non-option (no permutation, argv untouched); ':': report a missing
     * argument as ':'. optind = 0 re-initialises glibc's getopt fully. */
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    int mode_given = 0;
    optind = 0;
    opterr = 0;
    for (;;) {
        int longidx = -1;
        optopt = 0;
        int o = getopt_long(sub_argc, sub_argv, shorts, longs, &longidx);
        if (o == -1) break;
        if (o == ':' || o == '?') {
            report_getopt_error(err, o, sub_argc, sub_argv, cmd);
            return 2;
        }
        if (longidx >= 0) {
            /* Refuse abbreviations ("--ran" for --ranks): getopt_long accepts
             * unique prefixes, which would make typos silently valid. */
            const struct option *lo = &longs[longidx];
            const char *word = option_word(sub_argv, lo);
            size_t len = strlen(lo->name);
            if (strncmp(word, "--", 2) != 0 ||
                strncmp(word + 2, lo->name, len) != 0 ||
                (word[2 + len] != '\0' && word[2 + len] != '=')) {
                const char *eq = strchr(word, '=');
                int wl = eq ? (int)(eq - word) : (int)strlen(word);
                fprintf(err,
                        "agmm: unknown option '%.*s' (did you mean --%s? see "
                        "agmm %s --help)\n",
                        wl, word, lo->name, opt_cmd_name(cmd));
                return 2;
            }
        }
        const opt_row_t *row = row_of_val(o);
        if (!row) { /* cannot happen: every value getopt returns is a row's */
            fprintf(err, "agmm: unknown option (see agmm %s --help)\n",
                    opt_cmd_name(cmd));
            return 2;
        }
        if (!(row->cmds & (1u << cmd)) && cmd == AGMM_CMD_CLEANUP) {
            fprintf(
                err,
                "agmm: --%s: not an option of agmm cleanup (allowed: --job, "
                "--help, --version)\n",
                row->name);
            return 2;
        }
        if (!(row->cmds & (1u << cmd)) && cmd == AGMM_CMD_MODEL) {
            fprintf(err,
                    "agmm: --%s: not an option of agmm model (it runs "
                    "nothing; see agmm model --help)\n",
                    row->name);
            return 2;
        }
        if (!(row->cmds & (1u << cmd))) {
            agmm_cmd_t other = row->cmds == OPT_FOR_MODEL     ? AGMM_CMD_MODEL
                               : row->cmds == OPT_FOR_CLEANUP ? AGMM_CMD_CLEANUP
                               : cmd == AGMM_CMD_RUN          ? AGMM_CMD_BENCH
                                                              : AGMM_CMD_RUN;
            fprintf(err, "agmm: --%s: only for agmm %s%s\n", row->name,
                    opt_cmd_name(other), row->only_hint ? row->only_hint : "");
            return 2;
        }
        if (row->kind == OPTK_HELP) {
            agmm_cli_usage(out, cli, cmd);
            return -1;
        }
        if (row->kind == OPTK_VERSION) {
            opt_print_version(out);
            return -1;
        }
        if (get_value(err, row, optarg, cli)) return 2;
        if (row->set_field != OPT_NO_FIELD) {
            const int one = 1;
            memcpy((char *)cli + row->set_field, &one, sizeof one);
        }
        if (row->kind == OPTK_LIST) mode_given = 1;
    }
    if (cmd == AGMM_CMD_BENCH && opt_check_schedule_mode(cli, err, mode_given))
        return 2;
    if (optind < sub_argc) {
        fprintf(
            err,
            "agmm: unexpected argument '%s' (agmm %s takes only options; see "
            "agmm %s --help)\n",
            sub_argv[optind], opt_cmd_name(cmd), opt_cmd_name(cmd));
        return 2;
    }
    /* Leave getopt clean for any later caller. */
    optind = 0;
    if (cmd == AGMM_CMD_CLEANUP) return 0; /* nothing to cross-check */
    if (world_size > 0) cli->transport_mpi = 1;
    return opt_validate(cli, err, world_size, ranks_here);
}

int agmm_cli_parse(int argc, char **argv, agmm_cli_t *cli, FILE *out, FILE *err)
{
    return parse_impl(argc, argv, cli, out, err, 0, 0);
}

int agmm_cli_parse_mpi(int argc, char **argv, agmm_cli_t *cli, FILE *out,
                       FILE *err, int world_size, int ranks_here)
{
    return parse_impl(argc, argv, cli, out, err,
                      world_size < 1 ? 1 : world_size, ranks_here);
}
