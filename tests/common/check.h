/*
 * Minimal assertions for the agmm test programs.
 *
 *   CHECK(cond, "fmt", ...)  counts a pass, or counts a failure and prints
 *                            file:line, the condition and the message.
 *   CHECK_DONE("name")       prints "name: N passed, M failed" and returns
 *                            0 from the calling function (main) if nothing
 *                            failed, 1 otherwise.
 *
 * Only the first CHECK_MAX_PRINT failures are printed (all are counted), so
 * an exhaustive loop that goes wrong does not flood the log.
 */
#ifndef AGMM_TESTS_CHECK_H
#define AGMM_TESTS_CHECK_H

#include <stdio.h>

#ifndef CHECK_MAX_PRINT
#define CHECK_MAX_PRINT 50
#endif

static long check_passed_;
static long check_failed_;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (cond) {                                                            \
            check_passed_++;                                                   \
        } else if (++check_failed_ <= CHECK_MAX_PRINT) {                       \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            if (check_failed_ == CHECK_MAX_PRINT)                              \
                fprintf(stderr, "(further failures not printed)\n");           \
        }                                                                      \
    } while (0)

#define CHECK_DONE(name)                                                       \
    do {                                                                       \
        fflush(stderr);                                                        \
        printf("%s: %ld passed, %ld failed\n", (name), check_passed_,          \
               check_failed_);                                                 \
        fflush(stdout);                                                        \
        return check_failed_ ? 1 : 0;                                          \
    } while (0)

#endif /* AGMM_TESTS_CHECK_H */
