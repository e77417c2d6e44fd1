/* agmm launch: starting the ranks and supervising them (launch.h).
 *
 * Each rank is forked, put in its own process group (so a signal sent to
 * the group also reaches what the rank started, and the terminal's Ctrl-C
 * reaches the ranks only through the launcher, once), bound to its share
 * (affinity and memory policy, before exec), given its environment and
 * /dev/null as stdin, and exec'd. PR_SET_PDEATHSIG kills it if the
 * launcher dies.
 *
 * The launcher is one thread: SIGCHLD, SIGINT, SIGTERM and SIGHUP are
 * blocked and read from a signalfd in the same poll() as the ranks'
 * output pipes (--tag-output), so no handler races with waitpid.
 *   - a rank fails (non-zero exit, or killed): said once, the others get
 *     GRACE_S to end on their own, then SIGTERM, then after GRACE_S more
 *     SIGKILL; exit code: that rank's (128 + signal when killed);
 *   - SIGINT/SIGTERM/SIGHUP: sent on to every rank's group, SIGKILL after
 *     GRACE_S; exit 128 + the signal;
 *   - --timeout: the ranks still running named, SIGTERM, SIGKILL after
 *     GRACE_S; exit 124 (as timeout(1));
 * whichever comes first decides the exit code. At the end every rank's
 * group is SIGKILLed (nothing left running) and the job's leftover agmm
 * segments are removed (agmm_cleanup). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/param.h"
#include "launch.h"

#define GRACE_S          2.0
#define LINE_MAX_PENDING 4096

typedef struct {
    int fd; /* read end, -1 once at EOF */
    int to; /* 1 or 2 */
    size_t len;
    char buf[LINE_MAX_PENDING];
} stream_t;

typedef struct {
    pid_t pid;  /* 0 once reaped */
    pid_t pgid; /* its process group (= its first pid), kept after reaping */
    stream_t out, err;
} rank_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

/* Emit s's complete lines (all of it at EOF), each after "[rank r] ". */
static void emit(stream_t *s, int r, int eof)
{
    char tag[32];
    int tl = snprintf(tag, sizeof tag, "[rank %d] ", r);
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++) {
        if (s->buf[i] != '\n') continue;
        write_all(s->to, tag, (size_t)tl);
        write_all(s->to, s->buf + start, i + 1 - start);
        start = i + 1;
    }
    /* A line longer than the buffer, or the last one without a newline. */
    if ((eof || s->len == sizeof s->buf) && start < s->len) {
        write_all(s->to, tag, (size_t)tl);
        write_all(s->to, s->buf + start, s->len - start);
        write_all(s->to, "\n", 1);
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

static void drain(stream_t *s, int r)
{
    if (s->fd < 0) return;
    ssize_t n = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        emit(s, r, 1);
        close(s->fd);
        s->fd = -1;
        return;
    }
    s->len += (size_t)n;
    emit(s, r, 0);
}

static void child(const agmm_launch_job_t *j, int r, int nnodes, int out_w,
                  int err_w, pid_t launcher, const sigset_t *old)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, old, NULL);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    if (out_w >= 0) dup2(out_w, 1); /* dup2 clears O_CLOEXEC on 1 and 2 */
    if (err_w >= 0) dup2(err_w, 2);
    if (j->place.bound && agmm_bind_apply(&j->place.rank[r], nnodes) != 0) {
        fprintf(stderr, "agmm launch: rank %d: could not bind it\n", r);
        _exit(127);
    }
    char store[8192];
    char *env[32];
    int n = agmm_launch_env(j, r, env, 32, store, sizeof store);
    for (int i = 0; i < n; i++)
        putenv(env[i]);
    execvp(j->argv[0], j->argv);
    fprintf(stderr, "agmm launch: rank %d: cannot start '%s': %s\n", r,
            j->argv[0], strerror(errno));
    _exit(127);
}

static void signal_all(rank_t *rk, int n, int sig)
{
    for (int r = 0; r < n; r++) {
        if (rk[r].pid <= 0) continue;
        if (kill(-rk[r].pid, sig) != 0) kill(rk[r].pid, sig);
    }
}

typedef enum { END_NONE, END_FAIL, END_SIGNAL, END_TIMEOUT } end_t;

int agmm_launch_run(agmm_launch_job_t *j, int nnodes)
{
    int n = j->nranks;
    rank_t *rk = calloc((size_t)n, sizeof *rk);
    if (!rk) {
        fprintf(stderr, "agmm launch: out of memory\n");
        return 1;
    }
    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &old);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    fflush(stdout);
    fflush(stderr);

    if (!agmm_param_is_set(AGMM_PARAM_EXT_USE_LIBUV))
        fprintf(stderr, "agmm launch: USE_LIBUV=0 for the ranks "
                        "(torch.distributed's store without libuv; set "
                        "USE_LIBUV to choose)\n");
    pid_t self = getpid();
    int running = 0, code = 0, start_failed = 0;
    end_t ended = END_NONE;
    for (int r = 0; r < n; r++) {
        int po[2] = {-1, -1}, pe[2] = {-1, -1};
        rk[r].out.fd = rk[r].err.fd = -1;
        rk[r].out.to = 1;
        rk[r].err.to = 2;
        if (j->tag_output &&
            (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0)) {
            fprintf(stderr, "agmm launch: pipe: %s\n", strerror(errno));
            start_failed = 1;
            break;
        }
        pid_t pid = fork();
        if (pid == 0) child(j, r, nnodes, po[1], pe[1], self, &old);
        if (po[1] >= 0) close(po[1]);
        if (pe[1] >= 0) close(pe[1]);
        rk[r].out.fd = po[0];
        rk[r].err.fd = pe[0];
        if (pid < 0) {
            fprintf(stderr, "agmm launch: fork rank %d: %s\n", r,
                    strerror(errno));
            start_failed = 1;
            break;
        }
        setpgid(pid, pid); /* also here: no signal may miss the group */
        rk[r].pid = rk[r].pgid = pid;
        running++;
    }

    double t0 = now(), term_at = 0, kill_at = 0;
    if (start_failed) {
        ended = END_FAIL;
        code = 1;
        signal_all(rk, n, SIGTERM);
        kill_at = now() + GRACE_S;
    }
    double drain_until = 0; /* after the last rank: its pipes' rest */
    for (;;) {
        int open_fds = 0;
        for (int r = 0; r < n; r++)
            open_fds += (rk[r].out.fd >= 0) + (rk[r].err.fd >= 0);
        if (running == 0 &&
            (open_fds == 0 || (drain_until > 0 && now() >= drain_until)))
            break;
        if (running == 0 && drain_until == 0) drain_until = now() + 1.0;

        struct pollfd pf[1 + 2 * AGMM_LAUNCH_MAX_RANKS];
        int who[1 + 2 * AGMM_LAUNCH_MAX_RANKS];
        int np = 0;
        pf[np].fd = sfd;
        pf[np].events = POLLIN;
        who[np++] = -1;
        for (int r = 0; r < n && np + 2 <= 1 + 2 * AGMM_LAUNCH_MAX_RANKS; r++) {
            if (rk[r].out.fd >= 0) {
                pf[np].fd = rk[r].out.fd;
                pf[np].events = POLLIN;
                who[np++] = 2 * r;
            }
            if (rk[r].err.fd >= 0) {
                pf[np].fd = rk[r].err.fd;
                pf[np].events = POLLIN;
                who[np++] = 2 * r + 1;
            }
        }
        poll(pf, (nfds_t)np, 100);
        for (int i = 1; i < np; i++) {
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            rank_t *x = &rk[who[i] / 2];
            drain(who[i] % 2 ? &x->err : &x->out, who[i] / 2);
        }

        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            int sig = (int)si.ssi_signo;
            if (sig == SIGCHLD) continue; /* reaped below */
            if (ended == END_SIGNAL) {    /* a second one: no more waiting */
                signal_all(rk, n, SIGKILL);
                continue;
            }
            fprintf(stderr,
                    "agmm launch: interrupted by signal %d (%s); stopping all "
                    "ranks\n",
                    sig, strsignal(sig));
            if (ended == END_NONE) {
                ended = END_SIGNAL;
                code = 128 + sig;
            }
            signal_all(rk, n, sig);
            kill_at = now() + GRACE_S;
        }

        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            int r = -1;
            for (int q = 0; q < n; q++)
                if (rk[q].pid == pid) r = q;
            if (r < 0) continue;
            rk[r].pid = 0;
            running--;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
            if (ended != END_NONE) continue;
            ended = END_FAIL;
            if (WIFSIGNALED(status)) {
                code = 128 + WTERMSIG(status);
                fprintf(stderr,
                        "agmm launch: rank %d was killed by signal %d (%s)%s\n",
                        r, WTERMSIG(status), strsignal(WTERMSIG(status)),
                        running ? "; stopping the other ranks" : "");
            } else {
                code = WEXITSTATUS(status);
                fprintf(stderr,
                        "agmm launch: rank %d exited with status %d%s\n", r,
                        code, running ? "; stopping the other ranks" : "");
            }
            term_at = now() + GRACE_S;
        }

        double t = now();
        if (ended == END_NONE && j->timeout_s > 0 && t - t0 >= j->timeout_s &&
            running > 0) {
            ended = END_TIMEOUT;
            code = 124;
            char names[256] = "";
            size_t at = 0;
            for (int r = 0; r < n && at + 16 < sizeof names; r++)
                if (rk[r].pid > 0)
                    at += (size_t)snprintf(names + at, sizeof names - at,
                                           "%s%d", at ? ", " : "", r);
            fprintf(
                stderr,
                "agmm launch: --timeout %g s reached; still running: %s %s; "
                "stopping them\n",
                j->timeout_s, running == 1 ? "rank" : "ranks", names);
            signal_all(rk, n, SIGTERM);
            kill_at = t + GRACE_S;
        }
        if (term_at > 0 && t >= term_at) {
            signal_all(rk, n, SIGTERM);
            term_at = 0;
            kill_at = t + GRACE_S;
        }
        if (kill_at > 0 && t >= kill_at) {
            signal_all(rk, n, SIGKILL);
            kill_at = t + 3600; /* only reaping is left */
        }
    }
    /* What the ranks started and left behind (their groups outlive them). */
    for (int r = 0; r < n; r++)
        if (rk[r].pgid > 0) kill(-rk[r].pgid, SIGKILL);
    for (int r = 0; r < n; r++) {
        if (rk[r].out.fd >= 0) close(rk[r].out.fd);
        if (rk[r].err.fd >= 0) close(rk[r].err.fd);
    }
    close(sfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(rk);
    /* Every rank is gone: their agmm segments of the job are leftovers. */
    agmm_cleanup(j->job, NULL);
    return code;
}
