/* Named shared-memory segments (POSIX shm, /dev/shm) for ranks that were not
 * forked from one parent: the joined worlds' control segment (world/join.c)
 * and every shm window (transport/shm/window.c), and same-host ranks under
 * MPI. Private to the library.
 *
 * Naming. Every name is
 *
 *     /agmm:<uid>:<job>:<pid>:<tag>
 *
 *   uid  the creating user's effective uid (decimal): users never share a
 *        name, and cleanup looks only at its own user's names;
 *   job  1..AGMM_SEG_JOB_MAX characters of [A-Za-z0-9._-] (no ':' or '/'):
 *        the job the segment belongs to;
 *   pid  the process that created it and whose death makes it garbage, or 0
 *        for a segment shared by the whole job (the control segment: its
 *        liveness is the pids recorded inside it, world/join.h);
 *   tag  [A-Za-z0-9.]+, what it is ("ctl", "w3" for window 3, ...).
 *
 * ':' is outside the job alphabet, so a name splits unambiguously.
 *
 * Security. Segments are created with O_CREAT | O_EXCL and mode 0600 (the
 * umask cannot widen it; fchmod makes it exact), and opened only after
 * fstat shows a regular file owned by this user with no group or other
 * permission bits: another user's segment (or one with a wider mode) is
 * refused, never attached. glibc's shm_open adds O_NOFOLLOW | O_CLOEXEC.
 *
 * Lifetime. A segment lives until unlinked and unmapped by everyone. The
 * owners unlink as early as they can (windows: once every peer has mapped
 * them); leftovers of processes that died are found by name and removed by
 * agmm_cleanup (world/cleanup.c) and by the next join of the same job. */
#ifndef AGMM_TRANSPORT_SHM_SEGMENT_H
#define AGMM_TRANSPORT_SHM_SEGMENT_H

#include <stddef.h>
#include <sys/types.h>

#include "agmm.h"

#define AGMM_SEG_JOB_MAX 48
#define AGMM_SEG_TAG_MAX 16
/* "/agmm:" + uid + ':' + job + ':' + pid + ':' + tag + NUL, with room. */
#define AGMM_SEG_NAME_MAX 128
/* Where glibc's shm_open keeps the names (cleanup lists it). */
#define AGMM_SEG_DIR "/dev/shm"

/* A mapping of a segment. The file descriptor is closed once mapped. */
typedef struct agmm_seg {
    char name[AGMM_SEG_NAME_MAX]; /* with the leading '/' */
    void *addr;                   /* NULL when not mapped */
    size_t bytes;
} agmm_seg_t;

/* The parts of a name (agmm_seg_parse). */
typedef struct agmm_seg_name {
    unsigned uid;
    char job[AGMM_SEG_JOB_MAX + 1];
    pid_t pid; /* 0: a job-wide segment */
    char tag[AGMM_SEG_TAG_MAX + 1];
} agmm_seg_name_t;

/* AGMM_OK when `job` is a valid job name; else AGMM_ERR_INVALID_ARG with a
 * message naming `what` (e.g. "AGMM_JOB") and what is allowed. */
agmm_status_t agmm_seg_check_job(const char *job, const char *what);

/* Write the name of (this user, job, pid, tag) into buf[AGMM_SEG_NAME_MAX].
 * job must have passed agmm_seg_check_job; tag is [A-Za-z0-9.]+. */
agmm_status_t agmm_seg_name(char *buf, const char *job, pid_t pid,
                            const char *tag);

/* Split a name (with or without the leading '/', as listed in /dev/shm).
 * Returns 1 when it is a well-formed agmm name, else 0. */
int agmm_seg_parse(const char *name, agmm_seg_name_t *out);

/* Create `name` (O_EXCL, 0600), size it to `bytes` (zero-filled) and map it
 * read-write. When it exists already: *exists = 1, AGMM_ERR_BAD_STATE,
 * nothing recorded (the caller decides what that means); every other
 * failure records a message naming the segment. */
agmm_status_t agmm_seg_create(const char *name, size_t bytes, agmm_seg_t *out,
                              int *exists);

/* Open an existing segment and map all of it read-write, after checking it
 * is a regular file of this user with mode 0600 and at least `min_bytes`.
 * When `missing` is not NULL, two outcomes return AGMM_ERR_BAD_STATE
 * without a message: *missing = 1, there is no such segment; *missing = 2,
 * it exists but is still empty (its creator has not sized it yet, or died
 * before). Every other failure records a message. */
agmm_status_t agmm_seg_open(const char *name, size_t min_bytes, agmm_seg_t *out,
                            int *missing);

/* Unmap (the name stays). NULL or unmapped: nothing. */
void agmm_seg_unmap(agmm_seg_t *seg);

/* Remove the name (mappings stay valid). Returns 0, or errno (ENOENT when
 * someone removed it first). */
int agmm_seg_unlink(const char *name);

/* 1 while process `pid` exists and has not exited (a zombie counts as
 * gone), 0 when it is gone. A process of another user counts as alive. */
int agmm_seg_pid_alive(pid_t pid);

#endif
