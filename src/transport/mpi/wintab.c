/* The live-window table of the MPI transport: see wintab.h. A handful of
 * windows are live at a time (two per plan, one while a trace is
 * gathered), so a linear search is enough. */
#include "transport/mpi/wintab.h"

#include <stdlib.h>

uint64_t agmm_wintab_take_id(agmm_wintab_t *t)
{
    if (t->next_id == 0) t->next_id = 1; /* 0 is never a window */
    return t->next_id++;
}

int agmm_wintab_add(agmm_wintab_t *t, uint64_t id, void *item)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        uint64_t *ids = realloc(t->ids, sizeof *ids * (size_t)cap);
        if (!ids) return -1;
        t->ids = ids;
        void **items = realloc(t->items, sizeof *items * (size_t)cap);
        if (!items) return -1;
        t->items = items;
        t->cap = cap;
    }
    t->ids[t->n] = id;
    t->items[t->n++] = item;
    return 0;
}

void agmm_wintab_remove(agmm_wintab_t *t, uint64_t id)
{
    for (int i = 0; i < t->n; i++)
        if (t->ids[i] == id) {
            t->n--;
            t->ids[i] = t->ids[t->n];
            t->items[i] = t->items[t->n];
            return;
        }
}

agmm_win_state_t agmm_wintab_find(const agmm_wintab_t *t, uint64_t id,
                                  void **item)
{
    for (int i = 0; i < t->n; i++)
        if (t->ids[i] == id) {
            *item = t->items[i];
            return AGMM_WIN_LIVE;
        }
    *item = NULL;
    return id != 0 && id < t->next_id ? AGMM_WIN_FREED : AGMM_WIN_NEVER;
}

void agmm_wintab_free(agmm_wintab_t *t)
{
    free(t->ids);
    free(t->items);
    t->ids = NULL;
    t->items = NULL;
    t->n = t->cap = 0;
}
