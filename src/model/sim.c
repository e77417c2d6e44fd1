/* The event heap and FIFO resources of the model (sim.h). */
#include "model/sim.h"

#include <stdlib.h>

static int before(const sim_ev_t *x, const sim_ev_t *y)
{
    if (x->t != y->t) return x->t < y->t;
    if (x->key != y->key) return x->key < y->key;
    return x->seq < y->seq;
}

int sim_push(sim_t *s, double t, int type, int a, int64_t b)
{
    return sim_push_key(s, t, 0, type, a, b);
}

int sim_push_key(sim_t *s, double t, uint64_t key, int type, int a, int64_t b)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        sim_ev_t *h = realloc(s->heap, cap * sizeof *h);
        if (!h) return -1;
        s->heap = h;
        s->cap = cap;
    }
    sim_ev_t e = {t, key, s->seq++, type, a, b};
    size_t i = s->n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(&e, &s->heap[up])) break;
        s->heap[i] = s->heap[up];
        i = up;
    }
    s->heap[i] = e;
    return 0;
}

int sim_pop(sim_t *s, sim_ev_t *e)
{
    if (!s->n) return 0;
    *e = s->heap[0];
    sim_ev_t last = s->heap[--s->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n) break;
        if (c + 1 < s->n && before(&s->heap[c + 1], &s->heap[c])) c++;
        if (!before(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n) s->heap[i] = last;
    s->now = e->t;
    s->events++;
    return 1;
}

void sim_free(sim_t *s)
{
    free(s->heap);
    s->heap = NULL;
    s->n = s->cap = 0;
}

double sim_res_use(sim_res_t *r, double now, double dur)
{
    double start = r->free > now ? r->free : now;
    r->free = start + dur;
    r->busy += dur;
    return start;
}
