/*
 * The --help and --version texts of the `agmm` tool. The option entries are
 * generated from the option table (options.h): a label column, then the
 * row's text with its templates filled from the row's range and default;
 * docs/cli.md quotes the result.
 */
#include "options.h"

#include <inttypes.h>
#include <string.h>

/* The column where an option's text starts. */
#define HELP_LABEL_WIDTH 20

static const char *const k_section_titles[SEC_COUNT] = {
    [SEC_PROBLEM] = "Problem:",
    [SEC_THREADS] =
        "Threads (per rank; ranks x (comm + GEMM) must fit the usable cores):",
    [SEC_SCHEDULE] = "Schedule:",
    [SEC_MACHINE] = "Machine:",
    [SEC_RATES] = "Rates:",
    [SEC_RUN] = "Run:",
    [SEC_CLEANUP] = "Cleanup:",
};

/* The texts below keep one printed line per source line, so clang-format
 * does not break their strings. */
/* clang-format off */
void agmm_cli_usage_top(FILE *out)
{
    fprintf(out,
            "agmm %s: the operations of a tensor-parallel layer on CPU ranks (all-gather\n"
            "+ GEMM, GEMM + reduce-scatter, GEMM + all-reduce), communication overlapped\n"
            "with the GEMM.\n"
            "\n"
            "usage: agmm run   [options]   run one operation (--op) on P ranks and check\n"
            "                              C against a reference\n"
            "       agmm bench [options]   time repeated rounds (fused vs. baseline)\n"
            "       agmm model [options]   predict a round (fused vs. baseline) on a\n"
            "                              described machine, or on this one measured\n"
            "       agmm cleanup [--job NAME]  remove this user's shared-memory segments\n"
            "                              left by ranks that are gone\n"
            "       agmm launch -n P [options] -- PROGRAM ARGS...\n"
            "                              start P ranks of PROGRAM, each on its cores\n"
            "                              (agmm launch --help)\n"
            "       agmm --help | --help-env | --version\n"
            "\n"
            "Run 'agmm run --help', 'agmm bench --help' or 'agmm model --help' for the\n"
            "options, 'agmm --help-env' for the environment variables agmm reads.\n"
            "Exit codes: 0 ok, 1 check failed or a rank failed, 2 bad input.\n",
            AGMM_VERSION_STRING);
}

void opt_print_version(FILE *out)
{
    fprintf(out, "agmm %s\n", AGMM_VERSION_STRING);
    fprintf(out, "all-gather + GEMM, GEMM + reduce-scatter, GEMM + all-reduce with\n"
                 "communication/computation overlap, on CPUs\n");
    /* the engines of plain weights built in, by the library's names (wq,
     * agmm's own kernels, always is and takes only quantized or bf16 W) */
    fputs("gemm engines:", out);
    static const agmm_gemm_engine_kind_t plain[] = {AGMM_GEMM_ENGINE_ONEDNN,
                                                    AGMM_GEMM_ENGINE_OPENBLAS};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (agmm_gemm_engine_available(plain[i]))
            fprintf(out, " %s", agmm_gemm_engine_name(plain[i]));
    fputc('\n', out);
}

/* ------------------------------------------------------------ cores */

/* The two rows whose defaults depend on the ranks and the host. */
void opt_help_cores_comm(FILE *out, const agmm_cli_t *t)
{
    if (t->comm_cores_set)
        fprintf(out, "  --comm-cores C        communication threads per rank, 0..%d (given: %d)\n",
                AGMM_CLI_MAX_CORES, t->comm_cores);
    else
        fprintf(out,
                "  --comm-cores C        communication threads per rank, 0..%d; 0: GEMM threads\n"
                "                        send (default here: %d for %d %s on %d usable %s)\n",
                AGMM_CLI_MAX_CORES, t->comm_cores, t->ranks,
                t->ranks == 1 ? "rank" : "ranks", t->usable_cores,
                t->usable_cores == 1 ? "core" : "cores");
}

void opt_help_cores_gemm(FILE *out, const agmm_cli_t *t)
{
    const char *ranks_s = t->ranks == 1 ? "rank" : "ranks";
    const char *cores_s = t->usable_cores == 1 ? "core" : "cores";
    if (t->gemm_cores_set)
        fprintf(out, "  --gemm-cores G        GEMM threads per rank, 1..%d (given: %d)\n",
                AGMM_CLI_MAX_CORES, t->gemm_cores);
    else if (t->comm_cores_set)
        fprintf(out,
                "  --gemm-cores G        GEMM threads per rank, 1..%d (default here: %d for %d\n"
                "                        %s with %d comm on %d usable %s)\n",
                AGMM_CLI_MAX_CORES, t->gemm_cores, t->ranks, ranks_s,
                t->comm_cores, t->usable_cores, cores_s);
    else
        fprintf(out,
                "  --gemm-cores G        GEMM threads per rank, 1..%d (default here: %d for %d\n"
                "                        %s on %d usable %s)\n",
                AGMM_CLI_MAX_CORES, t->gemm_cores, t->ranks, ranks_s,
                t->usable_cores, cores_s);
}

/* agmm run|bench|model|cleanup --help: the text before the options and
 * after. */
static const char k_intro_cleanup[] =
    "Removes this user's agmm shared-memory segments (/dev/shm/agmm:*) whose\n"
    "processes are all gone: what a killed job leaves behind. Segments of\n"
    "running jobs and of other users are never touched.\n\n";
static const char k_intro_bench[] =
    "Times repeated rounds of one operation (--op: all-gather + GEMM,\n"
    "C_i = gather(A_0..A_{P-1}) @ W_i; GEMM + reduce-scatter or GEMM +\n"
    "all-reduce, C = sum_r A_r @ W_r) on P ranks (forked processes on this\n"
    "host, shared memory).\n\n";
static const char k_intro_run[] =
    "Runs one operation (--op: all-gather + GEMM, C_i = gather(A_0..A_{P-1})\n"
    "@ W_i; GEMM + reduce-scatter or GEMM + all-reduce, C = sum_r A_r @ W_r)\n"
    "on P ranks (forked processes on this host, shared memory) and checks C\n"
    "against a reference.\n\n";
static const char k_intro_model[] =
    "Predicts one round of the plan the options describe, fused and baseline,\n"
    "on the machine they describe (hosts, ranks per host, transport, link,\n"
    "rates): a discrete-event simulation of the round's puts and GEMM calls\n"
    "(docs/model.md). With no GEMM rate given it first measures this host's\n"
    "rates (its GEMM engine and path, copies, sums, conversion; no ranks);\n"
    "with one given it runs nothing. A rate neither given nor measured is the\n"
    "model's default.\n\n";
static const char k_exit_model[] =
    "Exit codes: 0 ok, 1 the measurement or the model failed, 2 bad input.\n";
static const char k_exit_cleanup[] =
    "Exit codes: 0 ok, 1 the segments could not be listed, 2 bad input.\n";
static const char k_exit_run[] =
    "Exit codes: 0 ok, 1 check failed or a rank failed, 2 bad input.\n";
/* clang-format on */

/* ------------------------------------------------------------ templates */

/* {min} / {max} of a row. */
static void print_bound(FILE *out, const opt_row_t *r, int max)
{
    if (r->kind == OPTK_DOUBLE)
        fprintf(out, "%.0f", max ? r->dmax : r->dmin);
    else if (r->kind == OPTK_UINT64)
        fprintf(out, "%" PRIu64, max ? UINT64_MAX : (uint64_t)0);
    else
        fprintf(out, "%" PRId64, max ? r->max : r->min);
}

/* {def}: the value the defaults put in the row's field. */
static void print_default(FILE *out, const opt_row_t *r, const agmm_cli_t *d)
{
    const void *f = (const char *)d + r->field;
    switch (r->kind) {
    case OPTK_INT64:
    case OPTK_ROWS: {
        int64_t v;
        memcpy(&v, f, sizeof v);
        fprintf(out, "%" PRId64, v);
        break;
    }
    case OPTK_UINT64: {
        uint64_t v;
        memcpy(&v, f, sizeof v);
        fprintf(out, "%" PRIu64, v);
        break;
    }
    case OPTK_DOUBLE: {
        double v;
        memcpy(&v, f, sizeof v);
        fprintf(out, "%.0f", v);
        break;
    }
    case OPTK_CHOICE: {
        int v;
        memcpy(&v, f, sizeof v);
        fputs(opt_choice_name(r, v), out);
        break;
    }
    case OPTK_LIST: { /* the single words the default set holds:
                         "fused,baseline" */
        unsigned v, n = 0;
        memcpy(&v, f, sizeof v);
        for (const opt_choice_t *c = opt_choices(r); c->name; c++)
            if (c->value != 0 && ((unsigned)c->value & ~v) == 0)
                fprintf(out, "%s%s", n++ ? "," : "", c->name);
        break;
    }
    default: {
        int v;
        memcpy(&v, f, sizeof v);
        fprintf(out, "%d", v);
        break;
    }
    }
}

/* Prints `text` with its templates filled in; after each '\n' the text
 * column's indent. */
static void print_text(FILE *out, const opt_row_t *r, const char *text,
                       agmm_cmd_t cmd, const agmm_cli_t *d)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            fprintf(out, "\n%*s", HELP_LABEL_WIDTH + 4, "");
            continue;
        }
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (!close) {
            fputc(*p, out);
            continue;
        }
        size_t len = (size_t)(close - p + 1);
#define IS(t) (len == sizeof t - 1 && !strncmp(p, t, len))
        if (IS("{min}") || IS("{max}")) {
            print_bound(out, r, IS("{max}"));
        } else if (IS("{def}")) {
            print_default(out, r, d);
        } else if (IS("{choices}")) {
            const opt_choice_t *const words = opt_choices(r);
            for (const opt_choice_t *c = words; c->name; c++)
                fprintf(out, "%s%s", c == words ? "" : " | ", c->name);
        } else if (IS("{cmd}")) {
            fputs(opt_cmd_name(cmd), out);
        } else if (IS("{auto_rounds}")) {
            fprintf(out, "%d", 2 * AGMM_AUTO_TRIALS);
        } else if (IS("{auto_engine}")) {
            fputs(agmm_gemm_engine_name(
                      agmm_gemm_engine_available(AGMM_GEMM_ENGINE_ONEDNN)
                          ? AGMM_GEMM_ENGINE_ONEDNN
                          : AGMM_GEMM_ENGINE_OPENBLAS),
                  out);
        } else {
            fwrite(p, 1, len, out); /* not a template: as written */
        }
#undef IS
        p = close;
    }
}

static void print_row(FILE *out, const opt_row_t *r, agmm_cmd_t cmd,
                      const agmm_cli_t *d, const agmm_cli_t *resolved)
{
    if (r->help_fn) {
        r->help_fn(out, resolved);
        return;
    }
    char label[64];
    if (r->label)
        snprintf(label, sizeof label, "%s", r->label);
    else if (r->short_name)
        snprintf(label, sizeof label, "-%c, --%s", r->short_name, r->name);
    else
        snprintf(label, sizeof label, "--%s", r->name);
    fprintf(out, "  %-*s  ", HELP_LABEL_WIDTH, label);
    const char *text =
        cmd == AGMM_CMD_BENCH && r->help_bench ? r->help_bench : r->help;
    print_text(out, r, text, cmd, d);
    fputc('\n', out);
}

/* ------------------------------------------------------------ usage */

void agmm_cli_usage(FILE *out, const agmm_cli_t *cli_or_null, agmm_cmd_t cmd)
{
    /* The defaults for the {def} templates; the core rows show what the
     * given command line resolves to. */
    agmm_cli_t defaults, tmp;
    opt_defaults(&defaults, cmd);
    tmp = cli_or_null ? *cli_or_null : defaults;
    if (tmp.usable_cores < 1) tmp.usable_cores = 1;
    if (tmp.ranks < 1) tmp.ranks = 1;
    agmm_cli_resolve_cores(&tmp);

    fprintf(out, "usage: agmm %s [options]\n\n", opt_cmd_name(cmd));
    fputs(cmd == AGMM_CMD_CLEANUP ? k_intro_cleanup
          : cmd == AGMM_CMD_BENCH ? k_intro_bench
          : cmd == AGMM_CMD_MODEL ? k_intro_model
                                  : k_intro_run,
          out);

    for (int s = 0; s < SEC_COUNT; s++) {
        int rows = 0;
        for (int i = 0; i < opt_count; i++)
            rows += opt_table[i].section == (opt_section_t)s &&
                    (opt_table[i].cmds & (1u << cmd));
        if (!rows) continue;
        fprintf(out, "%s\n",
                cmd == AGMM_CMD_MODEL && s == SEC_THREADS
                    ? "Threads (per rank; the default split is this host's "
                      "for --ranks-per-host):"
                    : k_section_titles[s]);
        for (int i = 0; i < opt_count; i++)
            if (opt_table[i].section == (opt_section_t)s &&
                (opt_table[i].cmds & (1u << cmd)))
                print_row(out, &opt_table[i], cmd, &defaults, &tmp);
        fputc('\n', out);
    }
    fputs(cmd == AGMM_CMD_CLEANUP ? k_exit_cleanup
          : cmd == AGMM_CMD_MODEL ? k_exit_model
                                  : k_exit_run,
          out);
}
