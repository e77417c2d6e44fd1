/* Error recording: every failure is recorded once, where it is detected,
 * as one line that agmm_last_error() returns and (unless quiet) stderr
 * shows as "agmm: rank R: ...". */
#ifndef AGMM_COMMON_LOG_H
#define AGMM_COMMON_LOG_H

#include "agmm.h"

#if defined(__GNUC__)
#define AGMM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define AGMM_PRINTF(a, b)
#endif

/* The rank named in messages of this process (-1: none, e.g. the launcher). */
void agmm_log_set_rank(int rank);
/* That rank, -1 when none was set. */
int agmm_log_rank(void);
/* 1: record errors without printing them (the caller prints). */
void agmm_log_set_quiet(int quiet);
/* 1: this thread's failures are recorded for agmm_thread_error() only, not
 * printed and not kept as agmm_last_error() (a query that tries a
 * description quietly); 0: back to normal. */
void agmm_log_mute(int on);
/* Is this thread muted (a flag, not a count: a nested mute saves it and
 * puts it back)? */
int agmm_log_muted(void);

/* Record (and print) a failure; returns `status` so callers can write
 * `return agmm_error(AGMM_ERR_..., "...")`. */
agmm_status_t agmm_error(agmm_status_t status, const char *fmt, ...)
    AGMM_PRINTF(2, 3);
/* Record a failure that another rank already reported: kept for
 * agmm_last_error() but not printed again. */
agmm_status_t agmm_error_quiet(agmm_status_t status, const char *fmt, ...)
    AGMM_PRINTF(2, 3);
/* The last failure recorded by the calling thread. */
const char *agmm_thread_error(void);
void agmm_warn(const char *fmt, ...) AGMM_PRINTF(1, 2);
/* Print one line (the caller's format ends it) to stderr in one write(2),
 * up to 1 KiB: glibc 2.37+ writes an unbuffered stderr's fprintf in pieces
 * of 128 bytes, and under OpenMPI 5's launcher the pieces of several ranks'
 * lines interleave. Every line a rank prints goes through here. */
void agmm_log_line(const char *fmt, ...) AGMM_PRINTF(1, 2);

/* Propagate a failed status without logging it again. */
#define AGMM_CHECK(expr)                                                       \
    do {                                                                       \
        agmm_status_t agmm_check_st_ = (expr);                                 \
        if (agmm_check_st_ != AGMM_OK) return agmm_check_st_;                  \
    } while (0)

#endif
