/* libFuzzer target: the agmm command line (tools/agmm/cli/parse.c over the
 * option table in options.c) and, for every command line it accepts, the
 * library's plan validation.
 *
 * Input: the words after "agmm", one per line ('\n' separates words; a
 * word may hold any other byte). For each input the target checks what the
 * tool promises (docs/cli.md, docs/reliability.md):
 *   - parsing twice gives the same result and the same text: getopt_long
 *     keeps global state, and agmm_cli_parse() must reset it;
 *   - bad input (return 2): exactly one line on stderr, starting "agmm: ",
 *     nothing on stdout;
 *   - help/version (return -1): text on stdout, nothing on stderr;
 *   - accepted (return 0): only "agmm: warning: " lines on stderr, and
 *     (run, bench) the plan the tool would create passes
 *     agmm_plan_desc_check() with a non-zero size (anything the library
 *     refuses must be refused by the parser with exit 2 and the option's
 *     name, not fail later in a rank).
 * A violated promise aborts (a "crash" for libFuzzer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"
#include "cli/cli.h"
#include "tool.h"

#define MAX_WORDS 64

static void fail(const char *why, const char *detail)
{
    fprintf(stderr, "fuzz_cli: %s\n%s\n", why, detail ? detail : "");
    abort();
}

typedef struct parsed {
    int rc;
    char *out, *err;
    size_t out_len, err_len;
} parsed_t;

static void parse(int argc, char **argv, agmm_cli_t *cli, parsed_t *p)
{
    FILE *out = open_memstream(&p->out, &p->out_len);
    FILE *err = open_memstream(&p->err, &p->err_len);
    if (!out || !err) abort();
    p->rc = agmm_cli_parse(argc, argv, cli, out, err);
    fclose(out);
    fclose(err);
}

static int lines(const char *s, const char *prefix)
{
    int n = 0;
    for (const char *l = s; *l; n++) {
        if (strncmp(l, prefix, strlen(prefix)) != 0) return -1;
        const char *nl = strchr(l, '\n');
        if (!nl) return -1; /* a line must end */
        l = nl + 1;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* argv: "agmm" then the words; each a separate allocation so the
     * sanitizer sees any read past a word's end. */
    char *argv[MAX_WORDS + 2];
    int argc = 0;
    argv[argc++] = strdup("agmm");
    size_t start = 0;
    for (size_t i = 0; i <= size && argc <= MAX_WORDS; i++) {
        if (i < size && data[i] != '\n') continue;
        if (i == size && start == size && argc > 1) break; /* trailing \n */
        char *w = malloc(i - start + 1);
        memcpy(w, data + start, i - start);
        w[i - start] = '\0';
        argv[argc++] = w;
        start = i + 1;
    }
    argv[argc] = NULL;
    char *copy[MAX_WORDS + 2];
    memcpy(copy, argv, sizeof copy);

    static agmm_cli_t a, b; /* large */
    parsed_t pa = {0}, pb = {0};
    parse(argc, argv, &a, &pa);
    parse(argc, argv, &b, &pb);
    if (memcmp(copy, argv, sizeof(char *) * (size_t)(argc + 1)))
        fail("agmm_cli_parse modified argv", NULL);
    if (pa.rc != pb.rc || strcmp(pa.out, pb.out) || strcmp(pa.err, pb.err))
        fail("a second parse of the same argv differs", pa.err);
    if (pa.rc == 0 && memcmp(&a, &b, sizeof a))
        fail("a second parse of the same argv gave other options", NULL);

    if (pa.rc == 2 && argc >= 2) {
        if (lines(pa.err, "agmm: ") != 1 || pa.out_len != 0)
            fail("bad input must print one line 'agmm: ...' on stderr only",
                 pa.err);
    } else if (pa.rc == -1) {
        if (pa.out_len == 0 || pa.err_len != 0)
            fail("help/version must print to stdout only", pa.err);
    } else if (pa.rc == 0) {
        if (lines(pa.err, "agmm: warning: ") < 0 || pa.out_len != 0)
            fail("an accepted command line may only print warnings", pa.err);
        if (a.cmd != AGMM_CMD_CLEANUP) { /* cleanup makes no plan */
            agmm_plan_desc_t d;
            agmm_tool_desc(&a, &d);
            agmm_status_t st = agmm_plan_desc_check(&d);
            if (st != AGMM_OK)
                fail("the parser accepted a plan the library refuses",
                     agmm_last_error());
            if (agmm_plan_bytes_per_rank(&d) == 0)
                fail("an accepted plan has no size", NULL);
        }
    } else if (pa.rc != 2) {
        fail("agmm_cli_parse returned something other than 0, 2, -1", NULL);
    }
    free(pa.out);
    free(pa.err);
    free(pb.out);
    free(pb.err);
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return 0;
}
