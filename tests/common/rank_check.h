/* CHECK counters across forked ranks: each rank saves its counts into a
 * shared anonymous mapping made before agmm_launch(); the test's main
 * process adds them to its own before CHECK_DONE. */
#ifndef AGMM_TESTS_RANK_CHECK_H
#define AGMM_TESTS_RANK_CHECK_H

#include <sys/mman.h>

#include "check.h"

typedef struct {
    long passed, failed;
} rank_counts_t;

static rank_counts_t *rank_counts_;

static inline void rank_checks_init(int max_ranks)
{
    rank_counts_ =
        mmap(NULL, sizeof(rank_counts_t) * (size_t)max_ranks,
             PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (rank_counts_ == MAP_FAILED) rank_counts_ = NULL;
}

/* In a rank, at its start: count from zero (the fork copied the parent's
 * counts). */
static inline void rank_checks_begin(void)
{
    check_passed_ = check_failed_ = 0;
}

/* In a rank, at its end: publish and reset this process's counts. */
static inline int rank_checks_save(int rank)
{
    int failed = check_failed_ != 0;
    if (rank_counts_) {
        rank_counts_[rank].passed += check_passed_;
        rank_counts_[rank].failed += check_failed_;
    }
    return failed;
}

/* In the main process, after agmm_launch(): add every rank's counts. */
static inline void rank_checks_collect(int nranks)
{
    for (int r = 0; rank_counts_ && r < nranks; r++) {
        check_passed_ += rank_counts_[r].passed;
        check_failed_ += rank_counts_[r].failed;
        rank_counts_[r].passed = rank_counts_[r].failed = 0;
    }
}

#endif
