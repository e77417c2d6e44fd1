/* The progress line of long commands: on stderr, only when it is a
 * terminal, only on rank 0; "\r"-updated at most 5 times a second and
 * cleared at the end (or before a line of output), so logs and pipes never
 * see it. */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "tool.h"

void agmm_progress_begin(agmm_progress_t *p, int rank, int total,
                         const char *what)
{
    p->on = rank == 0 && total > 1 && isatty(STDERR_FILENO);
    p->total = total;
    p->what = what;
    p->t0 = agmm_tool_now();
    p->last = 0;
    p->shown = 0;
}

void agmm_progress_step(agmm_progress_t *p, int done)
{
    if (!p->on) return;
    double now = agmm_tool_now();
    if (done < p->total && now - p->last < 0.2) return;
    p->last = now;
    double el = now - p->t0;
    double left = done > 0 ? el / done * (p->total - done) : 0;
    fprintf(stderr, "\ragmm: %s %d/%d, %.1f s elapsed, ~%.1f s left  ", p->what,
            done, p->total, el, left);
    fflush(stderr);
    p->shown = 1;
}

void agmm_progress_clear(agmm_progress_t *p)
{
    if (!p->on || !p->shown) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    p->shown = 0;
}
