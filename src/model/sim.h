/* The model's discrete-event engine: a binary heap of timed events (ties in
 * the order they were pushed), FIFO resources and signal cells.
 *
 * A resource (a wire, a NIC direction, a relay's copier, a delivery
 * thread) serves requests in the order they are made; the engine makes
 * every request from the event of its time, and events come out in time
 * order, so "start = max(now, free)" is a FIFO queue without storing it.
 * A cell is a counter with the time it reached its target (a tile's
 * signal: target 1; the column groups' ready count of gemm-rs: target
 * ngroups); threads that wait on it are chained through `waiter`.
 * Single-threaded, owned by one agmm_model_predict call. */
#ifndef AGMM_MODEL_SIM_H
#define AGMM_MODEL_SIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_ev {
    double t;
    uint64_t key; /* among events of one time: smaller first, then seq */
    uint64_t seq;
    int type;
    int a;
    int64_t b;
} sim_ev_t;

typedef struct sim {
    sim_ev_t *heap;
    size_t n, cap;
    uint64_t seq;
    int64_t events; /* popped so far */
    double now;
} sim_t;

/* 0, or -1 when out of memory (the event is lost: the caller fails).
 * Key 0; sim_push_key orders events of one time by `key` first, so that
 * simultaneous requests to a FIFO are served in an order that does not
 * depend on which rank's events happened to be pushed first. */
int sim_push(sim_t *s, double t, int type, int a, int64_t b);
int sim_push_key(sim_t *s, double t, uint64_t key, int type, int a, int64_t b);
/* Pop the earliest event into *e and set s->now; 0 when empty. */
int sim_pop(sim_t *s, sim_ev_t *e);
void sim_free(sim_t *s);

typedef struct sim_res {
    double free; /* when the last request accepted ends */
    double busy; /* seconds served */
    /* The user's queue of what it served and has yet to hand on, in FIFO
     * order (ids + 1; 0: empty): their events come out in that order, so
     * only the first needs to be in the heap (net.c). */
    int64_t head, tail;
} sim_res_t;

/* Serve `dur` seconds from `now` (FIFO): returns the start. */
double sim_res_use(sim_res_t *r, double now, double dur);

typedef struct sim_cell {
    double t;     /* when `got` reached `need`; < 0 before */
    int32_t need; /* target count (>= 1) */
    int32_t got;
    int32_t waiter; /* first waiting thread, -1: none */
    int8_t cause;   /* agmm_model_bound_t of what raised it last */
    int8_t claimed; /* a conversion claim is held */
} sim_cell_t;

#endif
