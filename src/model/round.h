/* Internal to the model: one simulated round (round.c runs it, net.c moves
 * the puts, ag.c and rs.c say what each thread does).
 *
 * Simulated ranks are world ranks base .. base + S - 1: every rank (S =
 * P), or, when every rank has the same rows and k part, one representative
 * group whose rotations are the whole world (shm and the link: one rank,
 * S = 1; MPI: one host, S = ranks per host). A put to another rank is then
 * delivered to its image under the rotation by the multiple of S that
 * brings it into the group: the put that image receives at the same time
 * when every group runs alike (docs/model.md, "Which ranks are simulated:
 * the symmetry").
 *
 * A thread is a generator of actions (`next`) run by the engine: a busy
 * action advances its own clock; every other action (a wait, a put, a
 * claim, a count) is taken at the simulation's time, so the engine first
 * lets the simulation catch up with the thread's clock. */
#ifndef AGMM_MODEL_ROUND_H
#define AGMM_MODEL_ROUND_H

#include "model/model.h"
#include "model/sim.h"

/* Cells of each simulated rank: kind x source (or owner) rank x tile. */
enum {
    K_TILE = 0, /* ag: tile (src, t) arrived; rs/ar: partial (src, own t) */
    K_BULK,     /* the baseline's bulk put of src */
    K_CLAIM,    /* conversion of (src, t)'s rows done (claims) */
    K_READY,    /* rs/ar: column groups done with partial (owner, t) */
    K_RED,      /* ar: reduced tile (owner, t) arrived */
    K_REDBULK,  /* ar baseline: owner's reduced rows arrived */
    K_JOIN,     /* (0, 0): gemm-rs/ar baseline's join of every thread */
    K_KINDS
};

typedef enum {
    A_BUSY,  /* dur seconds of category cat on this thread */
    A_WAIT,  /* until local cell (ck, a, t) is raised; dur > 0: or until
                simulated time dur (a timed wait, th->timed_out says) */
    A_CLAIM, /* dur seconds preparing (ck, a, t)'s rows (a conversion, a
                copy) unless done; claimed by another thread: wait */
    A_COUNT, /* add one to local cell (ck, a, t); th->hit: it reached need */
    A_PUT,   /* bytes to rank q, raising q's cell (ck, a, t) */
    A_YIELD, /* let the events of this instant run first */
    A_NOP,   /* nothing (a generator that queued follow-ups) */
    A_QUIET, /* until every put of this thread is delivered */
} act_kind_t;

typedef struct act {
    act_kind_t kind;
    int cat; /* A_BUSY: agmm_model_bound_t */
    double dur;
    int q, ck, a;
    int64_t t;
    double bytes;
    int forward; /* A_PUT: the receiving relay forwards it in its host */
} act_t;

typedef struct thr {
    int sr, rank, gemm, idx;
    int state; /* 0 running, 1 waiting, 2 quiet at the end, 3 done,
                  4 quiet (A_QUIET) */
    double clock, end, wait_t0;
    int32_t next_waiter;
    struct sim_cell *wait_cell; /* the cell of the current wait */
    int outstanding; /* puts not yet delivered (quiet waits for them) */
    int hit;
    int timed_out;    /* the last timed A_WAIT ended at its deadline */
    int64_t wait_gen; /* numbers the waits (stale timeouts are ignored) */
    int64_t cur[8];   /* the generator's position */
    double mark;      /* a time the generator keeps (a deadline) */
    double gemm_s, gemm_after;
    double busy[AGMM_MODEL_BOUND_COUNT], waited[AGMM_MODEL_BOUND_COUNT];
    act_t *side; /* follow-up actions, run before `next` again */
    int nside, side_head, side_cap;
} thr_t;

typedef struct msg {
    int th; /* the sending thread */
    int q;  /* the simulated receiver's index (maybe an image) */
    int64_t cell;
    double bytes, ser;
    int forward;
    int cause; /* what held it longest (link: wire or delivery) */
    int dist;  /* (receiving host - sending host) mod hosts, of the real put */
    double post;   /* when it was posted */
    double pre;    /* the sender's largest kind of work by then ... */
    int pre_cause; /* ... and its kind (what a late post is blamed on) */
    /* Its place in the queue of the resource it left (net.c): the event
     * (type, time) due when it reaches the head, the next message. */
    sim_res_t *pipe;
    int64_t next;
    double when;
    int ev;
} msg_t;

typedef struct mdl_round mdl_round_t;
typedef int (*mdl_next_fn)(mdl_round_t *x, thr_t *th, act_t *a);

struct mdl_round {
    const mdl_layout_t *L;
    int fused, nogemm;
    int S, base, hosts_sim; /* simulated: world ranks base .. base + S - 1 */
    sim_t sim;
    sim_cell_t *cells;
    int64_t per_rank; /* cells per simulated rank */
    thr_t *th;
    int nth, per;            /* threads; per rank (G GEMM then C comm) */
    sim_res_t *wire, *deliv; /* LINK: [S * P], [S] */
    sim_res_t *egress, *ingress, *relay; /* MPI: [hosts_sim] x2, [S] */
    msg_t *msgs;
    int64_t nmsgs, capmsgs;
    double *last_arrival; /* [S]: the last remote tile or partial */
    mdl_next_fn next;
    int oom;
};

int64_t mdl_cell(const mdl_round_t *x, int sr, int ck, int a, int64_t t);
/* Queue a follow-up action on th (run before its generator's next one). */
void mdl_side(mdl_round_t *x, thr_t *th, const act_t *a);
/* Run the round to its end; AGMM_OK or AGMM_ERR_NO_MEMORY. */
agmm_status_t mdl_round_run(mdl_round_t *x);

/* net.c: the transport's part of a put from th (at its clock, which is the
 * simulation's time) and the events of messages in flight. */
void mdl_net_put(mdl_round_t *x, thr_t *th, const act_t *a);
/* An event of net.c's (type >= MDL_EV_NET); returns 0 if not its own. */
int mdl_net_event(mdl_round_t *x, const sim_ev_t *e);
/* Raise cell c now (the engine's; net.c calls it on delivery). */
void mdl_raise(mdl_round_t *x, int64_t c, int cause);
/* Thread th's put is complete (quiet). */
void mdl_put_done(mdl_round_t *x, int th, int cause);

enum {
    MDL_EV_RESUME = 0,
    MDL_EV_RAISE = 1,
    MDL_EV_TIMEOUT = 2,
    MDL_EV_NET = 8
};

/* The generators (ag.c, rs.c); cur[] of every thread starts zeroed. */
int mdl_ag_next(mdl_round_t *x, thr_t *th, act_t *a);
int mdl_rs_next(mdl_round_t *x, thr_t *th, act_t *a);

/* Rotated order: the i-th peer of r (i = 0: r itself). */
static inline int mdl_peer(int r, int P, int i)
{
    return (r + i) % P;
}

#endif
