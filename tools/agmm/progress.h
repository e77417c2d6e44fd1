/* A progress line on stderr for long commands (progress.c). */
#ifndef AGMM_TOOL_PROGRESS_H
#define AGMM_TOOL_PROGRESS_H

typedef struct agmm_progress {
    int on;           /* rank 0, stderr a terminal, more than one step */
    int total;        /* steps */
    const char *what; /* "round", "bench round" */
    double t0, last;  /* start, last redraw */
    int shown;        /* a line is on the terminal */
} agmm_progress_t;

/* Off unless rank == 0, total > 1 and stderr is a terminal. */
void agmm_progress_begin(agmm_progress_t *p, int rank, int total,
                         const char *what);
/* `done` of total steps finished: redraw (at most 5 times a second, and at
 * the last step) "agmm: WHAT D/T, E s elapsed, ~L s left". */
void agmm_progress_step(agmm_progress_t *p, int done);
/* Erase the line (before printing output, and at the end). */
void agmm_progress_clear(agmm_progress_t *p);

#endif
