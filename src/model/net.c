/* The transports of the model (round.h): what a put costs its thread and
 * when it raises the receiver's cell.
 *
 *   shm, and MPI between ranks of one host: the putting thread copies the
 *     bytes (copy_gbs) and the cell is raised when the copy ends.
 *   link (transport/shm/link.c): one wire per (rank, peer), FIFO: the
 *     message starts at max(post, the wire's end of the previous one),
 *     leaves it 8 x bytes / link_gbps later and arrives link_latency_us
 *     after that; then the sending rank's one delivery thread copies it
 *     (copy_gbs, messages in the order they arrived) and raises the cell.
 *     Posting costs the thread nothing.
 *   MPI between hosts: the thread pays msg_us to post; each host has one
 *     NIC, an egress and an ingress FIFO at link_gbps: the message enters
 *     the egress at max(post, free), reaches the receiving host's ingress
 *     link_latency_us after it started (cut-through), and occupies the
 *     ingress for as long; the cell is raised when the ingress is done.
 *     A relayed tile (`forward`) is then copied by the receiving relay's
 *     progress thread (one serial copier per rank, copy_gbs) to every
 *     other rank of its host, in rank order, each cell raised after its
 *     copy (transport/mpi/mpi_relay.c).
 * A put to a rank outside the simulated ones goes to its image (round.h):
 * rank q - shift, from source a - shift (mod P), shift the multiple of S
 * that brings q among them. */
#include <stdlib.h>

#include "model/round.h"

enum {
    EV_LINK_ARRIVE = MDL_EV_NET,
    EV_DELIVERED,
    EV_EGRESS,
    EV_INGRESS,
    EV_ARRIVE
};

static int64_t new_msg(mdl_round_t *x, const msg_t *m)
{
    if (x->nmsgs == x->capmsgs) {
        int64_t cap = x->capmsgs ? 2 * x->capmsgs : 1024;
        msg_t *n = realloc(x->msgs, (size_t)cap * sizeof *n);
        if (!n) {
            x->oom = 1;
            return -1;
        }
        x->msgs = n;
        x->capmsgs = cap;
    }
    x->msgs[x->nmsgs] = *m;
    return x->nmsgs++;
}

static void push(mdl_round_t *x, double t, int type, int a, int64_t b)
{
    if (sim_push(&x->sim, t, type, a, b)) x->oom = 1;
}

/* The order of simultaneous requests to a NIC or a relay: by the sender's
 * index in its host and the distance (receiving host - sending host) mod
 * hosts, both invariant under the rotation by a host, so the simulated
 * host and its images break ties alike (a seq order would favour low
 * ranks in a full simulation and not in the symmetric one). */
static void push_net(mdl_round_t *x, double t, int type, const msg_t *m,
                     int64_t id)
{
    const mdl_layout_t *L = x->L;
    int H = L->m->hosts, R = L->R, src = x->th[m->th].rank;
    uint64_t dist = (uint64_t)m->dist;
    uint64_t key = 1 + (type == EV_EGRESS ? (uint64_t)(src % R) * H + dist
                                          : dist * R + (uint64_t)(src % R));
    if (sim_push_key(&x->sim, t, key, type, 0, id)) x->oom = 1;
}

/* What the sending thread has spent most on so far (its GEMM, copies,
 * sums, message posts): a put it posts late is late because of that. */
static int sender_cause(const thr_t *th, double *most)
{
    int cause = AGMM_MODEL_BOUND_GEMM;
    *most = th->gemm_s;
    for (int k = AGMM_MODEL_BOUND_COPY; k <= AGMM_MODEL_BOUND_OVERHEAD; k++)
        if (th->busy[k] > *most) {
            *most = th->busy[k];
            cause = k;
        }
    return cause;
}

/* Message id's event `type` at `when`, after every earlier message that
 * left resource r (the times of a FIFO's departures never decrease, so
 * only the queue's head is in the heap: the heap stays small however many
 * messages wait on a link). */
static void pipe_add(mdl_round_t *x, sim_res_t *r, int64_t id, double when,
                     int type)
{
    msg_t *m = &x->msgs[id];
    m->pipe = r;
    m->next = 0;
    m->when = when;
    m->ev = type;
    if (!r->head) {
        r->head = r->tail = id + 1;
        push_net(x, when, type, m, id);
        return;
    }
    x->msgs[r->tail - 1].next = id + 1;
    r->tail = id + 1;
}

/* The head of msg's queue was handed on: schedule the next one's event. */
static void pipe_pop(mdl_round_t *x, const msg_t *msg)
{
    sim_res_t *r = msg->pipe;
    r->head = msg->next;
    if (!r->head) {
        r->tail = 0;
        return;
    }
    msg_t *n = &x->msgs[r->head - 1];
    push_net(x, n->when, n->ev, n, r->head - 1);
}

void mdl_net_put(mdl_round_t *x, thr_t *th, const act_t *a)
{
    const mdl_layout_t *L = x->L;
    const agmm_model_machine_t *m = L->m;
    int P = L->P, q = a->q, src = a->a, b = x->base;
    if (q < b || q >= b + x->S) { /* its image among the simulated ranks */
        int shift = ((q - b + P) % P) / x->S * x->S;
        q = (q - shift + P) % P;
        src = (src - shift + P) % P;
    }
    q -= b; /* the simulated index */
    int64_t cell = mdl_cell(x, q, a->ck, src, a->t);
    int same_host = th->rank / L->R == a->q / L->R;
    if (m->transport == AGMM_MODEL_SHM ||
        (m->transport == AGMM_MODEL_MPI && same_host)) {
        double d = mdl_copy_s(L, a->bytes), most;
        th->busy[AGMM_MODEL_BOUND_COPY] += d;
        th->clock += d;
        if (sim_push(&x->sim, th->clock, MDL_EV_RAISE, sender_cause(th, &most),
                     cell))
            x->oom = 1;
        return;
    }
    int H = m->hosts;
    msg_t msg = {.th = (int)(th - x->th),
                 .q = q,
                 .cell = cell,
                 .bytes = a->bytes,
                 .ser = mdl_wire_s(L, a->bytes),
                 .forward = a->forward,
                 .cause = AGMM_MODEL_BOUND_LINK,
                 .dist = ((a->q / L->R - th->rank / L->R) % H + H) % H,
                 .post = x->sim.now};
    msg.pre_cause = sender_cause(th, &msg.pre);
    int64_t id = new_msg(x, &msg);
    if (id < 0) return;
    th->outstanding++;
    if (m->transport == AGMM_MODEL_LINK) {
        sim_res_t *w = &x->wire[(int64_t)th->sr * P + a->q];
        double start = sim_res_use(w, x->sim.now, msg.ser);
        pipe_add(x, w, id, start + msg.ser + m->link_latency_us * 1e-6,
                 EV_LINK_ARRIVE);
        return;
    }
    th->busy[AGMM_MODEL_BOUND_OVERHEAD] += m->msg_us * 1e-6;
    th->clock += m->msg_us * 1e-6;
    push_net(x, th->clock, EV_EGRESS, &x->msgs[id], id);
}

/* The relay's copies of a forwarded tile to the other ranks of its host. */
static void forward(mdl_round_t *x, const msg_t *msg)
{
    const mdl_layout_t *L = x->L;
    int R = L->R, h = msg->q / R;
    int64_t off = msg->cell - mdl_cell(x, msg->q, 0, 0, 0);
    double d = mdl_copy_s(L, msg->bytes);
    sim_res_t *relay = &x->relay[msg->q];
    double t = sim_res_use(relay, x->sim.now, d * (R - 1)), t0 = x->sim.now;
    for (int p = h * R; p < (h + 1) * R; p++) {
        if (p == msg->q) continue;
        t += d;
        /* Blamed on the longest of: the sender's work before the post,
         * the link, the relay's queue and copies. */
        int cause = t - t0 > t0 - msg->post ? AGMM_MODEL_BOUND_RELAY
                                            : AGMM_MODEL_BOUND_LINK;
        if (msg->pre > t - t0 && msg->pre > t0 - msg->post)
            cause = msg->pre_cause;
        push(x, t, MDL_EV_RAISE, cause, mdl_cell(x, p, 0, 0, 0) + off);
    }
}

int mdl_net_event(mdl_round_t *x, const sim_ev_t *e)
{
    const mdl_layout_t *L = x->L;
    if (e->type < EV_LINK_ARRIVE || e->type > EV_ARRIVE) return 0;
    msg_t *msg = &x->msgs[e->b];
    const thr_t *th = &x->th[msg->th];
    if (e->type != EV_EGRESS) pipe_pop(x, msg);
    switch (e->type) {
    case EV_LINK_ARRIVE: {
        double d = mdl_copy_s(L, msg->bytes);
        sim_res_t *deliv = &x->deliv[th->sr];
        double start = sim_res_use(deliv, x->sim.now, d);
        /* Whichever held it longer: the wire, or the delivery queue. */
        double queued = start - x->sim.now;
        msg->cause = queued + d > msg->ser ? AGMM_MODEL_BOUND_COPY
                                           : AGMM_MODEL_BOUND_LINK;
        if (msg->pre > start + d - msg->post) msg->cause = msg->pre_cause;
        pipe_add(x, deliv, e->b, start + d, EV_DELIVERED);
        break;
    }
    case EV_DELIVERED:
        mdl_raise(x, msg->cell, msg->cause);
        mdl_put_done(x, msg->th, msg->cause);
        break;
    case EV_EGRESS: {
        sim_res_t *eg = &x->egress[th->sr / L->R];
        double start = sim_res_use(eg, x->sim.now, msg->ser);
        pipe_add(x, eg, e->b, start + L->m->link_latency_us * 1e-6, EV_INGRESS);
        break;
    }
    case EV_INGRESS: {
        sim_res_t *in = &x->ingress[msg->q / L->R];
        double start = sim_res_use(in, x->sim.now, msg->ser);
        pipe_add(x, in, e->b, start + msg->ser, EV_ARRIVE);
        break;
    }
    case EV_ARRIVE:
        msg->cause = msg->pre > x->sim.now - msg->post ? msg->pre_cause
                                                       : AGMM_MODEL_BOUND_LINK;
        mdl_raise(x, msg->cell, msg->cause);
        if (msg->forward) forward(x, msg);
        mdl_put_done(x, msg->th, msg->cause);
        break;
    }
    return 1;
}
