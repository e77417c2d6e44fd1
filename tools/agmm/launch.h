/* agmm launch (docs/cli.md, "agmm launch"): start P processes of a
 * program, each with its rank's environment (agmm's and torchrun's
 * variables) and its share of the cores, and watch them.
 *
 *   launch.c      the options, the plan, --dry-run, main
 *   launch_env.c  each rank's environment
 *   launch_run.c  starting the ranks and supervising them: signals
 *                 forwarded, the first failure ends the job, --timeout,
 *                 --tag-output, nothing left behind */
#ifndef AGMM_TOOL_LAUNCH_H
#define AGMM_TOOL_LAUNCH_H

#include "place/place.h"

#define AGMM_LAUNCH_MAX_RANKS 1024

typedef struct {
    int nranks;       /* 1..AGMM_LAUNCH_MAX_RANKS */
    const char *bind; /* "auto" (default), "none", or a LIST */
    char job[64];     /* --job, or launch-<pid> */
    int tag_output;
    double timeout_s; /* <= 0: none */
    int dry_run;
    char **argv; /* PROGRAM ARGS..., NULL-terminated */
    agmm_place_t place;
    int master_port;
} agmm_launch_job_t;

/* argv[0] is "launch". Returns the process exit code. */
int agmm_tool_launch_main(int argc, char **argv);

/* Rank r's variables as "NAME=VALUE" into env[] (at most `max`), for
 * execution (putenv'd by the child) and printing (--dry-run); returns the
 * count. OMP_NUM_THREADS only when the rank is bound and the user did not
 * set it. The strings live in `store` (len bytes). */
int agmm_launch_env(const agmm_launch_job_t *j, int r, char **env, int max,
                    char *store, size_t len);

/* Start every rank and supervise them to the end; the exit code. */
int agmm_launch_run(agmm_launch_job_t *j, int nnodes);

#endif
