/* agmm_world_gatherv: a variable-size gather to rank 0 over the data plane
 * (the small allgather caps at AGMM_ALLGATHER_MAX bytes per rank).
 *
 * Protocol (collective, any transport):
 *   1. a window of sum(bytes) (rounded up to a cache line) plus one signal
 *      line per rank is allocated collectively (same size everywhere; on
 *      shm only rank 0's pages are touched);
 *   2. with AGMM_TP_CAP_POSTED_RECEIVES rank 0 declares one put per sender
 *      (receive set 0 of this window) and posts them;
 *   3. rank r > 0 puts its bytes at its prefix offset in rank 0's window
 *      and raises signal r to 1 (release); rank 0 waits for every signal
 *      (acquire, with the world's timeout and abort) and copies the data;
 *   4. a barrier (no put is in flight), then the window is freed. */
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "world/world.h"

agmm_status_t agmm_world_gatherv(agmm_world_t *w, const void *mine,
                                 const size_t *bytes, void *out,
                                 const char *what_kind)
{
    int P = w->size, me = w->rank;
    size_t total = 0, at = 0;
    for (int r = 0; r < P; r++)
        total += bytes[r];
    for (int r = 0; r < me; r++)
        at += bytes[r];
    size_t data =
        (total + AGMM_CACHE_LINE - 1) / AGMM_CACHE_LINE * AGMM_CACHE_LINE;
    agmm_win_t win;
    AGMM_CHECK(agmm_tp_win_alloc(w, data + (size_t)P * AGMM_CACHE_LINE, &win));

    agmm_status_t st = AGMM_OK;
    /* A transport with posted receives (MPI): rank 0 declares and posts one
     * per sender (see transport.h). */
    size_t off = 0;
    for (int r = 1;
         me == 0 && agmm_tp_has(w, AGMM_TP_CAP_POSTED_RECEIVES) && r < P; r++) {
        off += bytes[r - 1];
        st = agmm_tp_expect(w, &win, r, off, bytes[r], &win,
                            data + (size_t)r * AGMM_CACHE_LINE, 0);
        if (st == AGMM_OK && r == P - 1)
            st = agmm_tp_round_begin(w, &win, 0, 1);
        if (st != AGMM_OK) break;
    }
    if (st != AGMM_OK) {
        /* fall through to the barrier and free below */
    } else if (me != 0) {
        st = agmm_tp_put_signal(w, &win, 0, at, mine, bytes[me], &win,
                                data + (size_t)me * AGMM_CACHE_LINE, 1);
        if (st == AGMM_OK) st = agmm_tp_quiet(w);
    } else {
        if (!out)
            st = agmm_error(AGMM_ERR_NO_MEMORY, "%s: out of memory", what_kind);
        for (int r = 1; st == AGMM_OK && r < P; r++) {
            agmm_wait_what_t what = {what_kind, r, -1, 0, 0, 0};
            st = agmm_signal_wait(
                w, agmm_win_signal(&win, data + (size_t)r * AGMM_CACHE_LINE), 1,
                agmm_deadline(w, 0), &what);
        }
        if (st == AGMM_OK) {
            memcpy(out, win.local, total);
            memcpy(out, mine, bytes[0]); /* rank 0's own, at offset 0 */
        }
    }
    /* No put may be in flight when the window goes. After a failure the
     * world is aborted and the barrier returns at once. */
    agmm_status_t st2 = agmm_world_barrier_until(w, agmm_deadline(w, 0));
    agmm_tp_win_free(w, &win);
    return st != AGMM_OK ? st : st2;
}
