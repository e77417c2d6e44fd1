"""The round protocol as a transition system (see protocol_model.py).

A state is a flat tuple of immutable parts:
  [r]               rank r: (plan-thread pc, worker pcs or None, collectives
                    entered, barriers arrived, control messages dropped)
  [MEM(r, P)]       rank r's windows of plan P (0 = A, 1 = B): None when not
                    allocated, else (blocks, cells). blocks[g] is the round
                    whose rows of global tile g are there (0: none yet);
                    cells are the signal cells, laid out as in
                    ops/common/plan.h: tile cells, bulk[src], ack[p],
                    rows[src]; with relay one more, the rank's ready cell.
                    gemm-rs (op "rs"): blocks[s * maxT + t] is the round of
                    source s's partial of the owner's tile t (its slot), and
                    tile cell s * maxT + t guards it (ops/gemm_rs/tiles.h).
                    gemm-ar (op "ar"): those, then blocks[N * maxT + g] the
                    round of owner q's reduced tile t (g = base[q] + t, its
                    place in the reduced region) guarded by the tile cell of
                    the same index, then one cell per owner for its reduced
                    rows in bulk (baseline) (ops/gemm_ar/ar.h).
  [POSTED(r)]       MPI: the armed receives (P, g, value) of rank r.
  [CHAN...]         messages in flight: link: one FIFO per (src, dst) link;
                    MPI: one control FIFO per (src, dst) and one set of tile
                    messages per dst (FIFO per (src, cell), MPI's order).
  [FWD(r)]          relay: the forwards rank r's progress thread has still
                    to make, (P, g, round, empty, destination).

Data is abstracted to round numbers: rows of (plan, source, tile) are
identified by where they sit, so a block holding e means "round e's rows of
this plan's tile g"; a read of round e must see exactly e.

Granularity (why exploring fewer, larger steps loses no violation):
  - A step may start with waits, then does one access to shared state.
    Every wait is on a condition that stays true once true (signals only
    rise, barrier counts only grow, a joined worker stays joined, a
    thread's own queued messages only drain), so it can be checked at the
    moment of the access that follows it.
  - Reads have no effect on shared state, so a write racing with a read
    can always be explored before the read (it was enabled then too): an
    atomic read that checks its data catches every overlapping write. The
    GEMM worker's whole read of its share is one step for the same reason.
  - A copy followed by its release store in one thread is one step: a
    reader seeing the copied rows before the store would see the same rows
    after it (the plant signal-before-data splits the two, in the wrong
    order). The MPI all-gather lands all rows at its completion: they
    arrive after this rank entered it and only its own GEMM workers read
    them, after the bulk signals raised at the completion.
"""

from protocol_checks import Checks
from protocol_common import (PLAN_NAME, PLANT_WHERE, PLANTS, RELAY_PLANTS,
                             ROWS_PLANTS, Violation)
from protocol_network import Network
from protocol_programs import Programs
from protocol_steps import Steps

# What protocol_model.py uses.
__all__ = ["Model", "PLANT_WHERE", "PLANTS", "RELAY_PLANTS", "ROWS_PLANTS",
           "Violation"]


class Model(Programs, Steps, Network, Checks):
    def __init__(self, delivery, tiles, comm, gemm, seq, tiles_b=None,
                 seq_b="F", plant=None, isolation=True, silent=False,
                 destroy_wait=True, op="ag", rows=None, hosts=None,
                 relay=False):
        assert (delivery in ("shm", "link", "mpi", "mixed")
                and plant in (None, *PLANTS))
        # "mixed": an MPI world whose ranks sit on hosts (hosts[r]: rank r's
        # host). Same-host peers put and signal through shared memory
        # (transport/mpi/mpi_node.c: copy + release store, like shm), other
        # hosts over MPI; the round structure is MPI's for every peer
        # (receives posted for other hosts only, acks at round start,
        # destroy waits for ack E-1).
        self.mpi = delivery in ("mpi", "mixed")
        self.hosts = tuple(hosts) if delivery == "mixed" else None
        assert (self.hosts is None) == (delivery != "mixed")
        assert self.hosts is None or len(self.hosts) == len(tiles)
        # relay (mixed, ag): a tile crosses to another host once, to one
        # rank there, which forwards it to its host's other ranks
        # (transport/mpi/mpi_relay.c; the layout helpers below).
        self.relay = relay
        assert not relay or (delivery == "mixed" and op == "ag")
        if relay:  # each rank's index among its host's ranks (by rank)
            self.hidx = [sorted(q for q in range(len(tiles))
                                if hosts[q] == hosts[r]).index(r)
                         for r in range(len(tiles))]
        # op "rs": GEMM + reduce-scatter (ops/gemm_rs/). tiles[r] are then
        # the tiles of rank r's rows of C; the baseline is not modelled on
        # MPI (its bulk receives are not in the model).
        # op "ar": GEMM + all-reduce (ops/gemm_ar/): gemm-rs's steps (self.rs
        # too), then the reduced tiles to every peer.
        assert op in ("ag", "rs", "ar") and not (
            op != "ag" and self.mpi and "B" in seq + seq_b)
        self.rs = op in ("rs", "ar")
        self.ar = op == "ar"
        # rows: per round of plan A, the tiles of each source in that round
        # (agmm_run_args_t.m_rows: fewer rows than the plan's most, 0
        # allowed; rs: the tiles of each rank's rows of C); None: every
        # round has the plan's tiles. Every rank passes the same (a
        # disagreement is refused, see rows_ok).
        # The rows cells (each round's count, raised before the puts and
        # checked before any read) are modelled in these configurations
        # only: everywhere else they would multiply the states by 7 while
        # every other step stays as it is.
        self.rows = None if rows is None else tuple(tuple(x) for x in rows)
        assert self.rows is None or (len(self.rows) == len(seq)
                                     and all(len(x) == len(tiles) and all(
                                         n <= m for n, m in zip(x, tiles))
                                         for x in self.rows))
        self.deliv, self.C, self.G, self.plant = delivery, comm, gemm, plant
        # Plan isolation checks (no message outlives its plan, none lands in
        # another plan's window). Off (--symptoms): messages act as the code
        # makes them act, and only the data checks see the consequence.
        self.isolation = isolation and not silent
        # silent: paths where a rank aborts end there (the failure is seen);
        # look only for wrong results and deadlocks.
        self.silent = silent
        # destroy_wait False: half of issue 15's fix, ids never reused and
        # stale control messages dropped, without the wait in destroy.
        self.destroy_wait = destroy_wait and plant != "destroy-no-wait"
        self.N = N = len(tiles)
        self.tiles = (tuple(tiles), tuple(tiles_b or tiles))
        self.seqs = (seq, seq_b)
        hn = ("(" + ",".join(map(str, self.hosts)) + ")") if self.hosts else ""
        self.name = ((op + " " if self.rs else "")
                     + f"{delivery}{hn}{'+relay' * relay} P={N} tiles={','.join(map(str, tiles))}"
                     + (f"/{','.join(map(str, tiles_b))}" if tiles_b else "")
                     + f" C={comm} G={gemm} {' '.join(seq)} | {seq_b}"
                     + (" rows=" + "/".join("".join(map(str, x))
                                            for x in self.rows)
                        if self.rows else ""))
        # Layout of each plan: global tile g -> (src, t), cell offsets.
        self.gmap, self.base, self.T = [], [], []
        self.maxT = []
        for tl in self.tiles:
            self.base.append([sum(tl[:s]) for s in range(N)])
            if self.rs:  # slot s * maxT + t: source s's partial of tile t
                m = max(tl)  # of the owner's rows (ops/gemm_rs/tiles.h)
                self.gmap.append([(s, t) for s in range(N) for t in range(m)])
                self.T.append(N * m)
                self.maxT.append(m)
                if self.ar:  # reduced tiles (owner q, t), rows cells
                    self.gmap[-1] += [(q, t) for q in range(N)
                                      for t in range(tl[q])]
                    self.gmap[-1] += [(q, "rows") for q in range(N)]
                    self.T[-1] += sum(tl) + N
            else:
                self.gmap.append([(s, t) for s in range(N)
                                  for t in range(tl[s])])
                self.T.append(sum(tl))
        # Window keys: shm offsets (first fit: B reuses A's), MPI ids
        # (fixed: never reused; old: lowest free, so B reuses A's too).
        reuse = not self.mpi or plant == "destroy-no-wait"
        self.data_key = (0, 0 if reuse else 2)
        self.sig_key = (1, 1 if reuse else 3)
        self.MEM0, self.POSTED0, self.CHAN0 = N, 3 * N, 4 * N
        self.nparts = 4 * N + N * N + (N if self.mpi else 0)
        self.FWD0 = self.nparts  # relay: the forwards each rank has pending
        self.nparts += N * relay
        self.round_end = [{} for _ in range(N)]  # (P, e) -> its last op
        self.prog = [self.plan_program(r) for r in range(N)]
        self.ctx, self.done_before = [], []
        for r in range(N):  # per pc: the round in progress, rounds joined
            ctx, done, cur, d = [], [], None, [0, 0]
            for op in self.prog[r]:
                if op[0] == "spawn":
                    cur = op[1:]
                ctx.append(cur)
                done.append(tuple(d))
                if op[0] == "join":
                    d[op[1]] = op[2]
            self.ctx.append(ctx + [None])
            self.done_before.append(done + [tuple(d)])
        self.wprog = {}  # (r, P, e) -> [(thread name, ops, gemm index)]

    # ------------------------------------------------------------ layout
    def ack_cell(self, P, p):
        return self.T[P] + self.N + p

    def bulk_cell(self, P, src):
        return self.T[P] + src

    def red_cell(self, P, q, t):
        """gemm-ar: owner q's reduced tile t (its block and its cell)."""
        return self.N * self.maxT[P] + self.base[P][q] + t

    def red_rows_cell(self, P, q):
        """gemm-ar baseline: all of owner q's reduced rows."""
        return self.N * self.maxT[P] + sum(self.tiles[P]) + q

    def red_remote(self, P, r):
        """gemm-ar: the reduced tiles r receives (every peer's)."""
        return [self.red_cell(P, q, t) for q in range(self.N) if q != r
                for t in range(self.tiles[P][q])] if self.ar else []

    def red_present(self, P, e, r):
        """gemm-ar: the reduced tiles r copies in round e (its peers' tiles
        of the round)."""
        return [self.red_cell(P, q, t) for q in range(self.N) if q != r
                for t in range(self.ntiles(P, e, q))] if self.ar else []

    def rows_cell(self, P, src):
        return self.T[P] + 2 * self.N + src

    def ntiles(self, P, e, src):
        """Tiles of `src` in round e of plan P (per-call rows: plan A)."""
        if P == 0 and self.rows:
            return self.rows[e - 1][src]
        return self.tiles[P][src]

    def present(self, P, e, r):
        """The remote tiles rank r reads in round e (its peers' rows; rs:
        the slots of its peers' partials of its tiles of the round)."""
        if self.rs:
            return [s * self.maxT[P] + t for s in range(self.N) if s != r
                    for t in range(self.ntiles(P, e, r))]
        return [g for g, (s, t) in enumerate(self.gmap[P])
                if s != r and t < self.ntiles(P, e, s)]

    def remote(self, P, r):
        if self.rs:  # the slots r receives: every peer's partial of its tiles
            return [s * self.maxT[P] + t for s in range(self.N) if s != r
                    for t in range(self.tiles[P][r])] + self.red_remote(P, r)
        return [g for g, (s, _) in enumerate(self.gmap[P]) if s != r]

    def same(self, r, q):
        """Mixed: r and q share a host (shared-memory puts and signals)."""
        return self.hosts is not None and self.hosts[r] == self.hosts[q]

    def posted(self, P, r):
        """MPI: the cells r posts receives for (peers on other hosts)."""
        if self.rs:
            return [s * self.maxT[P] + t for s in range(self.N)
                    if s != r and not self.same(s, r)
                    for t in range(self.tiles[P][r])] + [
                        g for g in self.red_remote(P, r)
                        if not self.same(self.gmap[P][g][0], r)]
        return [g for g in self.remote(P, r)
                if not self.same(self.gmap[P][g][0], r)
                and self.direct(self.gmap[P][g][0], r)]

    def ready_cell(self, P):
        """Relay: the rank's own ready cell (mpi_node.c ready_off)."""
        return self.T[P] + 3 * self.N

    def relay_of(self, src, h):
        """The rank of host h that gets src's tiles and forwards them: its
        host index is src's modulo the host's size (mpi_relay.c)."""
        ranks = [q for q in range(self.N) if self.hosts[q] == h]
        return ranks[self.hidx[src] % len(ranks)]

    def direct(self, src, q):
        """Whether src puts its tiles into q itself (agmm_tp_put_direct):
        always, but with relay to another host's rank that is not src's
        relay there (q gets them forwarded)."""
        return (not self.relay or self.same(src, q)
                or q == self.relay_of(src, self.hosts[q]))

    def forward_to(self, q, src):
        """Relay: the ranks q forwards src's tiles to (q's host's others)."""
        if (not self.relay or self.same(src, q)
                or q != self.relay_of(src, self.hosts[q])):
            return []
        return [p for p in range(self.N) if p != q and self.same(p, q)]

    def peers(self, r):  # the order put_tile / put_bulk visit them
        return [(r + i) % self.N for i in range(1, self.N)]

    def tag(self, P, e):
        return f"{PLAN_NAME[P]}{e}"

    def initial(self):
        N = self.N
        st = [(0, None, 0, 0, 0) for _ in range(N)]
        for r in range(N):
            st += [self.zero(0), None]
        st += [()] * (self.nparts - len(st))
        for r in range(N):  # the first round starts at once (shm, link)
            if self.prog[r][0][0] == "spawn":
                cur = self.prog[r][0][1:]
                st[r] = (1, tuple(0 for _ in self.workers(r, *cur)), 0, 0, 0)
        return tuple(st)

    def zero(self, P):
        return ((0,) * self.T[P],
                (0,) * (self.T[P] + 3 * self.N + self.relay))

    def plan_at(self, st, r, key, keys):
        for P in (0, 1):
            if st[self.MEM0 + 2 * r + P] is not None and keys[P] == key:
                return P
        return None

    def successors(self, st):
        out = []
        for r in range(self.N):
            x = self.plan_step(st, r)
            if x:
                out.append(x)
            if st[r][1] is not None:
                cur = self.ctx[r][st[r][0]]
                for i, (name, ops, _) in enumerate(self.workers(r, *cur)):
                    x = self.worker_step(st, r, i, name, ops, cur)
                    if x:
                        out.append(x)
            out += self.network_steps(st, r)
        return out

    def describe(self, label):
        r, thread, text = label
        return f"rank {r} {thread:8s} {text}"
