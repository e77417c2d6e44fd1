/* agmm launch: the options, the plan and --dry-run (launch.h).
 *
 *   agmm launch -n P [--bind auto|none|LIST] [--job NAME] [--tag-output]
 *               [--timeout S] [--dry-run] -- PROGRAM ARGS...
 *
 * Bad input is one line on stderr naming the option, exit 2. Under
 * HWLOC_SYNTHETIC / HWLOC_XMLFILE the plan is for the machine they
 * describe: --dry-run prints it; starting ranks on it is refused. */
#include "launch.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/param.h"
#include "placement.h"

static const char usage_text[] =
    "usage: agmm launch -n P [--bind auto|none|LIST] [--job NAME]\n"
    "                   [--tag-output] [--timeout S] [--dry-run] -- PROGRAM "
    "ARGS...\n"
    "\n"
    "Start P processes of PROGRAM on this host, rank r with AGMM_RANK=r,\n"
    "AGMM_WORLD_SIZE=P, AGMM_JOB=NAME (agmm_world_from_env, World.from_env)\n"
    "and torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
    "MASTER_ADDR=127.0.0.1, MASTER_PORT (a free port), and USE_LIBUV=0\n"
    "unless set (torch.distributed's env:// store then works on a torch\n"
    "built without libuv; agmm launch says so in one line on stderr).\n"
    "\n"
    "  -n P             ranks, 1..1024\n"
    "  --bind HOW       auto (default): each rank its own NUMA node(s) or an\n"
    "                   equal group of physical cores, its memory on their\n"
    "                   nodes; none; or one CPU list per rank: 0-31|32-63.\n"
    "                   A bound rank gets AGMM_BIND_CPUS and OMP_NUM_THREADS\n"
    "                   (its CPU count, unless set; when set, auto gives a\n"
    "                   rank with fewer cores their hardware threads)\n"
    "  --job NAME       the job name, 1..48 of [A-Za-z0-9._-] (default\n"
    "                   launch-<pid>)\n"
    "  --tag-output     prefix every line of the ranks' output with \"[rank "
    "N] \"\n"
    "  --timeout S      end the job after S seconds (exit 124)\n"
    "  --dry-run        print each rank's cores and environment, start "
    "nothing\n"
    "                   (under HWLOC_SYNTHETIC / HWLOC_XMLFILE: for that "
    "machine)\n"
    "  -h, --help       this text\n"
    "\n"
    "Ctrl-C and SIGTERM go to every rank; the first rank to fail ends the\n"
    "others after a grace period of 2 s and agmm launch exits with its\n"
    "status (128 + N for a signal). The ranks' leftover agmm segments of\n"
    "the job are removed at the end.\n";

static int bad(const char *opt, const char *fmt, const char *arg)
{
    fprintf(stderr, "agmm launch: %s: ", opt);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

static int job_ok(const char *s)
{
    size_t n = strlen(s);
    int ok = n >= 1 && n <= 48 && strcmp(s, ".") && strcmp(s, "..");
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' ||
             s[i] == '-';
    return ok;
}

/* A port nobody listens on now (the kernel's pick), 0 if none. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int parse(int argc, char **argv, agmm_launch_job_t *j)
{
    static const struct option longs[] = {
        {"bind", required_argument, NULL, 'b'},
        {"job", required_argument, NULL, 'j'},
        {"tag-output", no_argument, NULL, 't'},
        {"timeout", required_argument, NULL, 'T'},
        {"dry-run", no_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int n_given = 0;
    optind = 1;
    opterr = 0;
    int c;
    /* '+': stop at PROGRAM, whose own options are not ours. */
    while ((c = getopt_long(argc, argv, "+:n:h", longs, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'n': {
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || v < 1 ||
                v > AGMM_LAUNCH_MAX_RANKS)
                return bad("-n", "ranks 1..1024 (got '%s')", optarg);
            j->nranks = (int)v;
            n_given = 1;
            break;
        }
        case 'b':
            j->bind = optarg;
            break;
        case 'j':
            if (!job_ok(optarg))
                return bad("--job",
                           "a job name is 1..48 characters of [A-Za-z0-9._-] "
                           "(got '%s')",
                           optarg);
            snprintf(j->job, sizeof j->job, "%s", optarg);
            break;
        case 't':
            j->tag_output = 1;
            break;
        case 'T':
            errno = 0;
            j->timeout_s = strtod(optarg, &end);
            if (errno || *end || end == optarg || !isfinite(j->timeout_s) ||
                !(j->timeout_s > 0) || j->timeout_s > 1e7)
                return bad("--timeout",
                           "seconds, a number > 0 and <= 1e7 (got '%s')",
                           optarg);
            break;
        case 'd':
            j->dry_run = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        case ':':
            return bad(argv[optind - 1], "%s", "needs a value");
        default:
            return bad(argv[optind - 1], "%s",
                       "unknown option (see agmm launch --help)");
        }
    }
    if (!n_given) return bad("-n", "%s", "give the number of ranks, -n P");
    if (optind >= argc)
        return bad("PROGRAM", "%s",
                   "nothing to start (agmm launch -n P -- PROGRAM ARGS...)");
    j->argv = argv + optind;
    if (!j->job[0])
        snprintf(j->job, sizeof j->job, "launch-%ld", (long)getpid());
    return 0;
}

static void print_dry_run(const agmm_launch_job_t *j, const agmm_topo_t *t)
{
    char machine[200];
    agmm_topo_describe(t, machine, sizeof machine);
    printf("agmm launch: %d %s of", j->nranks,
           j->nranks == 1 ? "rank" : "ranks");
    for (char **a = j->argv; *a; a++)
        printf(" %s", *a);
    printf("\nmachine: %s\n", machine);
    printf("placement: --bind %s: %s\n", j->bind, j->place.note);
    for (int r = 0; r < j->nranks; r++) {
        char d[600], store[8192];
        char *env[32];
        agmm_place_describe_rank(&j->place, t, r, d, sizeof d);
        printf("rank %d: %s\n", r, d);
        int n = agmm_launch_env(j, r, env, 32, store, sizeof store);
        printf("rank %d env:", r);
        for (int i = 0; i < n; i++)
            printf(" %s", env[i]);
        printf("\n");
    }
}

int agmm_tool_launch_main(int argc, char **argv)
{
    agmm_launch_job_t j;
    memset(&j, 0, sizeof j);
    j.bind = "auto";
    int rc = parse(argc, argv, &j);
    if (rc < 0) return 0;
    if (rc) return rc;
    const agmm_topo_t *t = agmm_tool_topo(NULL);
    if (!t) {
        fprintf(stderr, "agmm launch: --bind: %s\n", agmm_last_error());
        return 2;
    }
    if (t->described && !j.dry_run) {
        fprintf(stderr,
                "agmm launch: HWLOC_SYNTHETIC/HWLOC_XMLFILE describe another "
                "machine: plan for it with --dry-run, or unset them to start "
                "ranks here\n");
        return 2;
    }
    /* The threads a rank asks for, if the user said (OMP_NUM_THREADS): a
     * group with fewer physical cores then gets their hardware threads. */
    int threads = (int)agmm_param_int(AGMM_PARAM_EXT_OMP_NUM_THREADS);
    char why[300];
    if (agmm_place_plan(t, j.nranks, j.bind, threads > 0 ? threads : 0,
                        &j.place, why, sizeof why)) {
        fprintf(stderr, "agmm launch: --bind: %s\n", why);
        return 2;
    }
    j.master_port = free_port();
    if (j.dry_run) {
        print_dry_run(&j, t);
        agmm_place_free(&j.place);
        return 0;
    }
    if (!j.place.bound && strcmp(j.bind, "none"))
        fprintf(stderr, "agmm launch: --bind %s: %s\n", j.bind, j.place.note);
    rc = agmm_launch_run(&j, t->nnodes);
    agmm_place_free(&j.place);
    return rc;
}
