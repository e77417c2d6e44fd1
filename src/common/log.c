/* Error recording and the last error; see log.h. */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Per-process state. Worker threads may record errors concurrently; the
 * message buffer is per thread so a message is never torn, and the shared
 * copy below is what agmm_last_error() returns from any thread. */
static int log_rank = -1;
static int log_quiet = 0;
static _Thread_local char thread_msg[512];
static _Thread_local int thread_muted; /* agmm_log_mute */
static char last_msg[512];
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;

void agmm_log_set_rank(int rank)
{
    log_rank = rank;
}
int agmm_log_rank(void)
{
    return log_rank;
}
void agmm_log_set_quiet(int quiet)
{
    log_quiet = quiet;
}
void agmm_log_mute(int on)
{
    thread_muted = on;
}
int agmm_log_muted(void)
{
    return thread_muted;
}
const char *agmm_last_error(void)
{
    return last_msg;
}
const char *agmm_thread_error(void)
{
    return thread_msg;
}

void agmm_log_line(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if ((size_t)n >= sizeof line) line[len - 1] = '\n'; /* cut, still a line */
    /* One write: a pipe takes up to PIPE_BUF (4096) bytes whole. */
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, line + off, len - off);
        if (w <= 0) return;
        off += (size_t)w;
    }
}

static void record(int print, const char *prefix, const char *fmt, va_list ap)
{
    /* Format into a local buffer first: an argument may be this thread's
     * own message (agmm_thread_error(), e.g. re-recording a peer's abort
     * reason), and vsnprintf into the buffer it reads from is undefined
     * behaviour (in practice an empty line). */
    char msg[sizeof thread_msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(thread_msg, msg, sizeof thread_msg);
    if (thread_muted) return;
    if (!prefix) {
        pthread_mutex_lock(&last_lock);
        memcpy(last_msg, thread_msg, sizeof last_msg);
        pthread_mutex_unlock(&last_lock);
    }
    if (!print || log_quiet) return;
    /* One write per line so lines from threads and ranks don't interleave. */
    if (log_rank >= 0)
        agmm_log_line("agmm: rank %d: %s%s\n", log_rank, prefix ? prefix : "",
                      thread_msg);
    else
        agmm_log_line("agmm: %s%s\n", prefix ? prefix : "", thread_msg);
}

agmm_status_t agmm_error(agmm_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(1, NULL, fmt, ap);
    va_end(ap);
    return status;
}

agmm_status_t agmm_error_quiet(agmm_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(0, NULL, fmt, ap);
    va_end(ap);
    return status;
}

void agmm_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(1, "warning: ", fmt, ap);
    va_end(ap);
}
