/* The embedded launcher: fork one process per rank over the shared-memory
 * transport, watch them, and end the whole run as soon as one fails.
 *
 * Threads: the launcher is the calling thread of agmm_launch(); it blocks
 * SIGCHLD/SIGINT/SIGTERM/SIGHUP and takes them with sigtimedwait, so no
 * signal handler runs and nothing races with waitpid.
 *
 * Failure handling, in order:
 *   1. a rank exits non-zero or is killed: the launcher records "rank R
 *      exited with status S" / "rank R was killed by signal N (NAME)" as the
 *      world's abort reason (unless a rank already aborted with a better
 *      one), which wakes every rank blocked in a wait;
 *   2. the surviving ranks get `grace_s` to return on their own;
 *   3. then they are killed with SIGKILL and reaped.
 * Ranks also die with the launcher (PR_SET_PDEATHSIG), so killing the
 * launcher leaves no process behind either. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "place/place.h"
#include "transport/shm/shm.h"
#include "world/world.h"

/* In an AddressSanitizer / LeakSanitizer build, a rank checks for leaks
 * before _exit, which skips the sanitizer's at-exit check. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_LEAK__)
#define AGMM_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define AGMM_LEAK_CHECK 1
#endif
#endif
#ifdef AGMM_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif

typedef struct launch_state {
    int nranks;
    pid_t *pids; /* 0 once reaped */
    int running;
    int first_failed_rank; /* -1: none */
    char first_what[128];  /* how it ended ("rank 1 was killed by ...") */
    int exit_code;         /* of the first failure */
} launch_state_t;

static int rank_of_pid(const launch_state_t *ls, pid_t pid)
{
    for (int r = 0; r < ls->nranks; r++)
        if (ls->pids[r] == pid) return r;
    return -1;
}

static void describe_exit(int rank, int status, char *buf, size_t len,
                          int *code)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(buf, len, "rank %d was killed by signal %d (%s)", rank, sig,
                 strsignal(sig));
        *code = 128 + sig;
    } else {
        int st = WEXITSTATUS(status);
        snprintf(buf, len, "rank %d exited with status %d", rank, st);
        *code = st;
    }
}

/* Reap every child that has exited; on the first failure abort the world. */
static void reap(launch_state_t *ls, agmm_shm_shared_t *sh, int quiet)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        int r = rank_of_pid(ls, pid);
        if (r < 0) continue; /* not ours */
        ls->pids[r] = 0;
        ls->running--;
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (ok) continue;
        char what[128];
        int code;
        describe_exit(r, status, what, sizeof what, &code);
        if (ls->first_failed_rank < 0) {
            ls->first_failed_rank = r;
            ls->exit_code = code;
            snprintf(ls->first_what, sizeof ls->first_what, "%s", what);
            /* Exit code 1 means the rank reported its failure itself; a
             * rank that was killed, or exited with another code, printed
             * nothing: this line is the only report. */
            if (!quiet && (WIFSIGNALED(status) || WEXITSTATUS(status) != 1))
                fprintf(stderr, "agmm: %s; stopping the other ranks\n", what);
        }
        agmm_shm_abort_all(sh, what);
    }
}

static void kill_all(launch_state_t *ls, int sig)
{
    for (int r = 0; r < ls->nranks; r++)
        if (ls->pids[r] > 0) kill(ls->pids[r], sig);
}

/* The control table of a forked world: the shm backend's entries over its
 * shared control block (transport/shm/shm.h). Read-only, shared by every
 * thread of the rank. */
static const agmm_world_ops_t forked_world_ops = {
    .name = "shm",
    .barrier = agmm_shm_barrier,
    .allgather = agmm_shm_allgather,
    .abort = agmm_shm_abort,
    .aborted = agmm_shm_aborted,
    .link = agmm_shm_link,
};

static void rank_process(agmm_shm_shared_t *sh, int rank, double timeout_s,
                         int oversubscribed, pid_t launcher,
                         const sigset_t *old_mask, const agmm_place_t *place,
                         int nnodes, agmm_rank_main_fn rank_main, void *arg)
{
    /* Die with the launcher; if it is already gone, stop now. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);
    /* The share first, before anything of the rank allocates or starts a
     * thread (its pages and threads then begin on its own cores). */
    agmm_log_set_rank(rank);
    if (place->bound && agmm_bind_apply(&place->rank[rank], nnodes) != 0)
        _exit(1);
    sigprocmask(SIG_SETMASK, old_mask, NULL);

    agmm_world_t world = {.ctl = &forked_world_ops};
    if (agmm_shm_world_init(sh, rank, &world) != AGMM_OK) _exit(1);
    world.timeout_s = timeout_s;
    world.oversubscribed = oversubscribed;
    int code = rank_main(&world, arg);
    if (code < 0 || code > 125) code = 1;
    agmm_shm_world_fini(&world);
    fflush(stdout);
    fflush(stderr);
#ifdef AGMM_LEAK_CHECK
    /* A failed rank skips its cleanup on purpose; a successful one must
     * have freed everything (a leak ends the process with an error). */
    if (code == 0) __lsan_do_leak_check();
#endif
    _exit(code);
}

/* opts->bind as a plan for this machine (place.h); *nnodes its NUMA nodes.
 * A bad list, or a machine hwloc cannot read, is an error; a machine
 * HWLOC_SYNTHETIC / HWLOC_XMLFILE describe binds nothing. */
static agmm_status_t plan_placement(const agmm_launch_opts_t *opts,
                                    agmm_place_t *place, int *nnodes)
{
    memset(place, 0, sizeof *place);
    if (!opts->bind || !strcmp(opts->bind, "none")) return AGMM_OK;
    agmm_topo_t *t = malloc(sizeof *t);
    if (!t) return agmm_error(AGMM_ERR_NO_MEMORY, "launch: out of memory");
    agmm_status_t st = agmm_topo_load(t);
    char why[300] = "";
    if (st == AGMM_OK && t->described) {
        snprintf(why, sizeof why,
                 "HWLOC_SYNTHETIC/HWLOC_XMLFILE describe "
                 "another machine");
    } else if (st == AGMM_OK &&
               agmm_place_plan(t, opts->nranks, opts->bind, opts->bind_threads,
                               place, why, sizeof why) != 0) {
        st = agmm_error(AGMM_ERR_INVALID_ARG, "launch: bind '%.60s': %s",
                        opts->bind, why);
    } else if (st == AGMM_OK && !place->bound) {
        snprintf(why, sizeof why, "%s", place->note);
    }
    *nnodes = st == AGMM_OK ? t->nnodes : 1;
    free(t);
    if (st != AGMM_OK) return st;
    if (!place->bound && why[0] && !opts->quiet)
        fprintf(stderr, "agmm: bind %s: %s\n", opts->bind, why);
    return AGMM_OK;
}

agmm_status_t agmm_launch(const agmm_launch_opts_t *opts,
                          agmm_rank_main_fn rank_main, void *arg,
                          int *exit_code)
{
    if (!opts || !rank_main)
        return agmm_error(AGMM_ERR_INVALID_ARG, "launch: NULL argument");
    if (opts->nranks < 1 || opts->nranks > 4096)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "launch: nranks %d (allowed 1..4096)", opts->nranks);
    double timeout_s = opts->timeout_s > 0 ? opts->timeout_s : 60.0;
    double grace_s = opts->grace_s > 0 ? opts->grace_s : 2.0;
    if (opts->link_gbps > 0 &&
        !(opts->link_latency_us >= 0 && opts->link_latency_us <= 1e9))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "launch: link_latency_us %g (allowed 0..1e9)",
                          opts->link_latency_us);

    agmm_place_t place;
    int nnodes = 1;
    AGMM_CHECK(plan_placement(opts, &place, &nnodes));

    /* The BLAS must be single-threaded before the fork: agmm's workers are
     * the parallelism, and a forked BLAS thread pool would not survive. */
    agmm_world_threads(AGMM_WORLD_FORKED);

    agmm_shm_shared_t *sh;
    agmm_status_t pst = agmm_shm_prepare(opts->nranks, opts->link_gbps,
                                         opts->link_latency_us, &sh);
    if (pst != AGMM_OK) {
        agmm_place_free(&place);
        return pst;
    }

    launch_state_t ls = {.nranks = opts->nranks, .first_failed_rank = -1};
    ls.pids = calloc((size_t)opts->nranks, sizeof *ls.pids);
    if (!ls.pids) {
        agmm_place_free(&place);
        agmm_shm_release(sh);
        return agmm_error(AGMM_ERR_NO_MEMORY, "launch: out of memory");
    }

    sigset_t mask, old_mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &old_mask);

    /* Anything buffered must not be written once per child. */
    fflush(stdout);
    fflush(stderr);
    pid_t self = getpid();
    int oversubscribed = opts->nranks > sysconf(_SC_NPROCESSORS_ONLN);
    agmm_status_t st = AGMM_OK;
    for (int r = 0; r < opts->nranks; r++) {
        pid_t pid = fork();
        if (pid == 0)
            rank_process(sh, r, timeout_s, oversubscribed, self, &old_mask,
                         &place, nnodes, rank_main, arg);
        if (pid < 0) {
            st = agmm_error(AGMM_ERR_SYSTEM, "launch: fork rank %d: %s", r,
                            strerror(errno));
            agmm_shm_abort_all(sh, "the launcher could not start every rank");
            break;
        }
        ls.pids[r] = pid;
        ls.running++;
    }

    double kill_at = 0; /* when to SIGKILL the survivors; 0: not yet */
    int interrupted = 0;
    int interrupt_first = 0; /* the signal, not a rank, ended the run */
    if (st != AGMM_OK) kill_at = agmm_now() + grace_s;
    sigset_t stops; /* the interrupting signals alone */
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    int sig = 0; /* taken by the last wait, handled at the loop's top */
    while (ls.running > 0) {
        /* A signal to the whole group (Ctrl-C) reaches the launcher and
         * the ranks at once: take a pending one before reaping a rank it
         * ended, so the run counts as interrupted, not as that rank's
         * failure (its exit status would become the job's). */
        const struct timespec now = {0, 0};
        if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP)
            sig = sigtimedwait(&stops, NULL, &now);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            if (!opts->quiet && !interrupted)
                fprintf(stderr,
                        "agmm: interrupted by signal %d (%s); stopping all "
                        "ranks\n",
                        sig, strsignal(sig));
            if (!interrupted && ls.first_failed_rank < 0) interrupt_first = 1;
            interrupted = 128 + sig;
            agmm_shm_abort_all(sh, "the run was interrupted");
            kill_all(&ls, SIGTERM);
            if (kill_at == 0 || kill_at > agmm_now() + grace_s)
                kill_at = agmm_now() + grace_s;
        }
        /* After an interrupt the ranks die of the launcher's own SIGTERM:
         * "rank R was killed by signal 15" would mislead. */
        reap(&ls, sh, opts->quiet || interrupt_first);
        if (ls.running == 0) break;
        if (kill_at == 0 && agmm_shm_abort_reason(sh))
            kill_at = agmm_now() + grace_s; /* a rank aborted the world */
        if (kill_at > 0 && agmm_now() >= kill_at) {
            kill_all(&ls, SIGKILL);
            kill_at = agmm_now() + 3600; /* only reaping is left */
        }
        struct timespec tick = {0, 50 * 1000 * 1000};
        sig = sigtimedwait(&mask, NULL, &tick);
    }

    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    /* The caller's agmm_last_error() says which rank ended the run and how
     * (printed above already, or by the rank itself: recorded quietly). */
    if (ls.first_failed_rank >= 0 && !interrupt_first)
        agmm_error_quiet(AGMM_ERR_ABORTED, "%s", ls.first_what);
    free(ls.pids);
    agmm_place_free(&place);
    /* A rank killed while its plan was being created may leave its window
     * segment named (transport/shm/window.c, steps 1-5); every rank is
     * gone now, so nothing of this launch is alive: remove it all. */
    agmm_cleanup(agmm_shm_job(sh), NULL);
    agmm_shm_release(sh);
    if (exit_code) {
        *exit_code = ls.first_failed_rank >= 0 ? ls.exit_code : 0;
        if (interrupted && (*exit_code == 0 || interrupt_first))
            *exit_code = interrupted; /* 130 SIGINT, 143 SIGTERM */
        if (st != AGMM_OK && *exit_code == 0) *exit_code = 1;
    }
    return st;
}
