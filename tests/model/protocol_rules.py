"""The round protocol as a transition system (see protocol_model.py).

A state is a flat tuple of immutable parts:
  [r]               rank r: (plan-thread pc, worker pcs or None, collectives
                    entered, barriers arrived, control messages dropped)
  [MEM(r, P)]       rank r's windows of plan P (0 = A, 1 = B): None when not
                    allocated, else (blocks, cells). blocks[g] is the round
                    whose rows of global tile g are there (0: none yet);
                    cells are the signal cells, laid out as in
                    ops/common/plan_internal.h: tile cells, bulk[src], ack[p].
                    gemm-rs (op "rs"): blocks[s * maxT + t] is the round of
                    source s's partial of the owner's tile t (its slot), and
                    tile cell s * maxT + t guards it (ops/gemm_rs/tiles.h).
  [POSTED(r)]       MPI: the armed receives (P, g, value) of rank r.
  [CHAN...]         messages in flight: link: one FIFO per (src, dst) link;
                    MPI: one control FIFO per (src, dst) and one set of tile
                    messages per dst (FIFO per (src, cell), MPI's order).

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

PLANTS = {
    "ack-before-join": "the end-of-round ack is sent while workers still run",
    "destroy-no-wait": "old teardown: destroy does not wait for the peers' "
                       "last acks; MPI window ids reused lowest-free; a "
                       "control message for an unknown window aborts",
    "no-ack-wait": "puts do not wait for the destination's ack",
    "quiet-no-wait": "the emulated link's quiet returns at once",
    "rs-reduce-no-wait": "gemm-rs: the owner reduces a tile without waiting "
                         "for the peers' cells",
    "signal-before-data": "shm put_signal raises the signal before the copy",
    "rows-no-ack-wait": "ag: a rank raises its rows cell on a peer without "
                        "waiting for that peer's ack of the previous round",
    "absent-no-wait": "ag, MPI: a round with fewer rows ends without waiting "
                      "for the empty tiles of its declared receives",
}
# The deliveries where a plant changes anything (the self-test looks there).
PLANT_WHERE = {
    "ack-before-join": ("shm", "link"),  # MPI acks at the next round's start
    "destroy-no-wait": ("mpi",),  # shm/link acks are delivered by then
    "no-ack-wait": ("shm", "link", "mpi"),  # harmless on MPI: see design.md
    "quiet-no-wait": ("link",),  # shm copies at once; MPI: not modelled
    "rs-reduce-no-wait": ("shm", "link", "mpi"),
    "signal-before-data": ("shm",),  # shm_put_signal only
    "rows-no-ack-wait": ("shm", "link", "mpi"),
    "absent-no-wait": ("mpi",),  # only posted receives are declared
}
# Plants in steps only the rows= configurations take.
ROWS_PLANTS = {"rows-no-ack-wait", "absent-no-wait"}
GUARDS = {"join", "pass", "dwait", "quiet", "absent"}
# A rows cell holds ROWS_BASE * e + (tiles of its source in round e): the
# epoch high, the count low, as agmm_rows_signal (counts here are < 16).
ROWS_BASE = 16
PLAN_NAME = "AB"


class Violation(Exception):
    def __init__(self, msg, label=None):
        super().__init__(msg)
        self.msg, self.label = msg, label


class Model:
    def __init__(self, delivery, tiles, comm, gemm, seq, tiles_b=None,
                 seq_b="F", plant=None, isolation=True, silent=False,
                 destroy_wait=True, op="ag", rows=None):
        assert delivery in ("shm", "link", "mpi") and plant in (None, *PLANTS)
        # op "rs": GEMM + reduce-scatter (ops/gemm_rs/). tiles[r] are then
        # the tiles of rank r's rows of C; the baseline is not modelled on
        # MPI (its bulk receives are not in the model).
        assert op in ("ag", "rs") and not (
            op == "rs" and delivery == "mpi" and "B" in seq + seq_b)
        self.rs = op == "rs"
        # rows (ag): per round of plan A, the tiles of each source in that
        # round (agmm_run_args_t.m_rows: fewer rows than the plan's most,
        # 0 allowed); None: every round has the plan's tiles. Every rank
        # passes the same (a disagreement is refused, see the "gemm" step).
        # The rows cells (each round's count, raised before the puts and
        # checked before any read) are modelled in these configurations
        # only: everywhere else they would multiply the states by 7 while
        # every other step stays as it is.
        self.rows = None if rows is None else tuple(tuple(x) for x in rows)
        assert self.rows is None or (not self.rs and len(self.rows) == len(seq)
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
        self.name = (("rs " if self.rs else "")
                     + f"{delivery} P={N} tiles={','.join(map(str, tiles))}"
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
            else:
                self.gmap.append([(s, t) for s in range(N)
                                  for t in range(tl[s])])
                self.T.append(sum(tl))
        # Window keys: shm offsets (first fit: B reuses A's), MPI ids
        # (fixed: never reused; old: lowest free, so B reuses A's too).
        reuse = delivery != "mpi" or plant == "destroy-no-wait"
        self.data_key = (0, 0 if reuse else 2)
        self.sig_key = (1, 1 if reuse else 3)
        self.MEM0, self.POSTED0, self.CHAN0 = N, 3 * N, 4 * N
        self.nparts = 4 * N + N * N + (N if delivery == "mpi" else 0)
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

    def rows_cell(self, P, src):
        return self.T[P] + 2 * self.N + src

    def ntiles(self, P, e, src):
        """Tiles of `src` in round e of plan P (per-call rows: plan A)."""
        if P == 0 and self.rows:
            return self.rows[e - 1][src]
        return self.tiles[P][src]

    def present(self, P, e, r):
        """The remote tiles rank r reads in round e (its peers' rows)."""
        return [g for g, (s, t) in enumerate(self.gmap[P])
                if s != r and t < self.ntiles(P, e, s)]

    def remote(self, P, r):
        if self.rs:  # the slots r receives: every peer's partial of its tiles
            return [s * self.maxT[P] + t for s in range(self.N) if s != r
                    for t in range(self.tiles[P][r])]
        return [g for g, (s, _) in enumerate(self.gmap[P]) if s != r]

    def peers(self, r):  # the order put_tile / put_bulk visit them
        return [(r + i) % self.N for i in range(1, self.N)]

    def tag(self, P, e):
        return f"{PLAN_NAME[P]}{e}"

    # ------------------------------------------------------------ programs
    def plan_program(self, r):
        """The plan thread of rank r: ops/common/run.c, plan.c (both plans)."""
        ops, k, mpi = [], 0, self.deliv == "mpi"
        others = [q for q in range(self.N) if q != r]  # send_acks' order
        acks = lambda P, v: [("ack", P, q, v) for q in others] + (
            [("quiet",)] if self.deliv == "link" else [])
        kth = 0  # MPI: the baseline all-gathers run on one world-long comm
        for P in (0, 1):
            seq = self.seqs[P]
            if P == 1:  # agmm_plan_create: collective (allgathers)
                k += 1
                # shm: B's window (at A's offsets, zeroed when A was freed)
                # is usable once the allocation's allgather is passed; MPI:
                # the id is entered in the table before the rank takes part
                # in the allocation's agreement (mpi_win.c), so a peer past
                # it may signal into it at once (a round's rows cells).
                create = [("arrive", k), ("pass", k)]
                alloc = [("alloc", 1)]
                ops += alloc + create
            for e, s in enumerate(seq, 1):
                if mpi:  # round_start: post this round's receives, ack e-1
                    if s == "F":
                        ops.append(("post", P, e))
                    if e > 1:
                        ops += acks(P, e - 1)
                if s == "B":
                    kth += 1
                ops.append(("spawn", P, e, s, kth))
                if not mpi and self.plant == "ack-before-join":
                    ops += acks(P, e) + [("join", P, e)]
                elif not mpi:
                    ops += [("join", P, e)] + acks(P, e)
                else:
                    ops.append(("join", P, e))
                self.round_end[r][P, e] = len(ops) - 1
            # agmm_plan_destroy: wait for the last ack of every peer (E on
            # shm, sent at the end of round E; E-1 on MPI, sent at the start
            # of round E), then the barrier, then free the windows.
            last = len(seq) if not mpi else len(seq) - 1
            if self.destroy_wait and last > 0:
                ops.append(("dwait", P, last))
            k += 1
            ops += [("arrive", k), ("pass", k), ("free", P)]
        return ops

    def workers(self, r, P, e, s, kth):
        """[(name, ops, index of the gemm op)] of round e: ops/ag_gemm/fused.c,
        baseline.c; GEMM workers first, as agmm_round_run numbers them."""
        key = (r, P, e)
        if key in self.wprog:
            return self.wprog[key]
        if self.rs:
            self.wprog[key] = self.rs_workers(r, P, s)
            return self.wprog[key]
        C, G, link = self.C, self.G, self.deliv == "link"
        mpi = self.deliv == "mpi"
        quiet = [("quiet",)] if link else []
        ntiles = self.ntiles(P, e, r)
        # Every tile of the plan's layout is signalled, those beyond this
        # round's rows empty (ops/ag_gemm/call.c): a peer expecting one
        # learns the count instead of waiting, and on MPI each posted
        # receive completes.
        tmax = self.tiles[P][r]

        def rows(first, stride):  # agmm_ag_send_rows: this round's count
            # Modelled in the rows= configurations only (see __init__).
            return [("rows", (r + i) % self.N)
                    for i in range(1 + first, self.N, stride)] * bool(self.rows)

        def puts(first, stride):  # put_share -> send_rows, put_tile
            out = rows(0, 1) if first == 0 else []
            for t in range(first, tmax, stride):
                for q in self.peers(r):
                    if t >= ntiles:
                        out.append(("put", t, q, "empty"))
                    elif (self.plant == "signal-before-data"
                            and self.deliv == "shm"):
                        out += [("sig", t, q), ("copy", t, q)]
                    else:
                        out.append(("put", t, q))
            return out

        def bulk(first, stride):  # put_bulk
            out = rows(first, stride)
            if self.deliv == "mpi":  # allgather_rows by one thread per rank
                # after checking every peer's count (call.c)
                return out + ([("rchk",)] * bool(self.rows)
                              + [("agin",), ("agdone", kth)]
                              if first == 0 else [])
            out += [("bself",)] if first == 0 else []
            out += [("bput", (r + i) % self.N)
                    for i in range(1 + first, self.N, stride)]
            return out + quiet

        ws = []
        absent = ([("absent", P, e)] if mpi and s == "F"
                  and self.plant != "absent-no-wait" else [])
        for g in range(G):
            if s == "F":  # puts first, GEMM, then quiet (fused gemm_worker)
                pre, post = (puts(g, G), quiet) if C == 0 else ([], [])
            else:
                pre, post = (bulk(g, G) if C == 0 else []), []
            # agmm_ag_wait_absent: after the join, on the caller's thread
            # (worker 0's): the same steps.
            post = post + (absent if g == 0 else [])
            ws.append((f"gemm{g}", pre + [("gemm",)] + post, len(pre)))
        for c in range(C):
            ops = puts(c, C) + quiet if s == "F" else bulk(c, C)
            ws.append((f"comm{c}", ops, None))
        self.wprog[key] = ws
        return ws

    def rs_workers(self, r, P, s):
        """gemm-rs (ops/gemm_rs/fused.c, baseline.c). Fused: each GEMM
        worker computes the tiles of owners r+1, ..., r (own last); tile t of
        an owner is completed by GEMM worker t % G (the last column group to
        finish it, whichever thread that is: the same steps), which puts it
        (C = 0), hands it to a comm worker (`ready`, C > 0), or, for its own
        rows, reduces it. Baseline: GEMM worker 0 (the caller's thread after
        the join; the other workers only compute) puts each peer's rows in
        bulk, waits for them (quiet), then reduces its rows. The third item
        of each worker is the index of its last read (None: no read)."""
        C, G, link, N = self.C, self.G, self.deliv == "link", self.N
        tl = self.tiles[P]
        quiet = [("quiet",)] if link else []
        last_read = lambda ops: max([j for j, o in enumerate(ops)
                                     if o[0] in ("rsred", "rsbred")],
                                    default=None)
        ws = []
        if s == "B":
            ops = [("rsbput", q) for q in self.peers(r) if tl[q] > 0]
            ops = (ops + quiet if ops else []) + (
                [("rsbred",)] if tl[r] > 0 else [])
            ws.append(("gemm0", ops, last_read(ops)))
            ws += [(f"gemm{g}", [], None) for g in range(1, G)]
            ws += [(f"comm{c}", [], None) for c in range(C)]
            return ws
        ready = {}  # (q, t) -> (worker, index of its "ready" step)
        for g in range(G):
            ops = []
            for q in self.peers(r) + [r]:
                for t in range(tl[q]):
                    if t % G != g:
                        continue
                    if q == r:
                        ops.append(("rsred", t))
                    elif C == 0:
                        ops.append(("rsput", t, q))
                    else:
                        ready[q, t] = (g, len(ops))
                        ops.append(("ready", t, q))
            if C == 0 and any(o[0] == "rsput" for o in ops):
                ops += quiet
            ws.append((f"gemm{g}", ops, last_read(ops)))
        order = [(q, t) for q in self.peers(r) for t in range(tl[q])]
        for c in range(C):
            ops = [("rsput", t, q) + ready[q, t]
                   for k, (q, t) in enumerate(order) if k % C == c]
            ws.append((f"comm{c}", ops + (quiet if ops else []), None))
        return ws

    # ------------------------------------------------------------ state
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
        return ((0,) * self.T[P], (0,) * (self.T[P] + 3 * self.N))

    def plan_at(self, st, r, key, keys):
        for P in (0, 1):
            if st[self.MEM0 + 2 * r + P] is not None and keys[P] == key:
                return P
        return None

    def rounds_read(self, st, q, P):
        """The last round of plan P whose rows rank q has finished reading."""
        pc, ws = st[q][0], st[q][1]
        done = self.done_before[q][pc][P]
        cur = self.ctx[q][pc]
        if ws is not None and cur[0] == P:
            W = self.workers(q, *cur)
            if all(pcw > W[i][2] for i, pcw in enumerate(ws)
                   if W[i][2] is not None):
                done = max(done, cur[1])
        return done

    def land(self, st, src, q, P, blocks, cell, value, label, rows=None):
        """Rows `blocks` of round `rows` (default: `value`), then signal
        `cell` = value, arrive in q's windows of plan P."""
        rows = value if rows is None else rows
        mem = self.MEM0 + 2 * q + P
        if blocks:
            if self.plan_at(st, q, self.data_key[P], self.data_key) != P:
                raise Violation(f"rows of plan {PLAN_NAME[P]} land in rank "
                                f"{q}'s memory after it freed that plan",
                                label)
            b = list(st[mem][0])
            for g in blocks:
                self.check_overwrite(st, src, q, P, g, rows, label)
                b[g] = rows
            st[mem] = (tuple(b), st[mem][1])
        if cell is not None:
            if self.plan_at(st, q, self.sig_key[P], self.sig_key) != P:
                raise Violation(f"a signal of plan {PLAN_NAME[P]} lands in "
                                f"rank {q}'s signal window after it freed "
                                "that plan", label)
            self.set_cell(st, mem, cell, value)

    def set_cell(self, st, mem, cell, value):
        c = list(st[mem][1])
        c[cell] = value
        st[mem] = (st[mem][0], tuple(c))

    def check_overwrite(self, st, src, q, P, g, e, label):
        done = self.rounds_read(st, q, P)
        if done < e - 1:
            s, t = self.gmap[P][g]
            raise Violation(f"round {e}'s rows of tile {t} of rank {s} "
                            f"overwrite rows rank {q} has not finished "
                            f"reading for round {done + 1} (plan "
                            f"{PLAN_NAME[P]})", label)

    # ------------------------------------------------------------ steps
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

    def guard(self, st, r, op, thread):
        kind = op[0]
        if kind == "join":
            cur = self.ctx[r][st[r][0]]
            W = self.workers(r, *cur)
            return all(self.finished(st, r, i, W[i][1], pcw)
                       for i, pcw in enumerate(st[r][1]))
        if kind == "pass":
            return all(st[q][3] >= op[1] for q in range(self.N))
        if kind == "dwait":
            cells = st[self.MEM0 + 2 * r + op[1]][1]
            return all(cells[self.ack_cell(op[1], q)] >= op[2]
                       for q in range(self.N) if q != r)
        if kind == "absent":  # the empty tiles of this round have come
            P, e = op[1], op[2]
            cells = st[self.MEM0 + 2 * r + P][1]
            return all(cells[g] >= e for g in self.remote(P, r)
                       if g not in self.present(P, e, r))
        if kind == "quiet":  # this thread's queued link messages delivered
            return self.plant == "quiet-no-wait" or not any(
                m[4] == thread for q in range(self.N)
                for m in st[self.CHAN0 + r * self.N + q])
        raise AssertionError(kind)

    def finished(self, st, r, i, ops, pc):
        while (pc < len(ops) and ops[pc][0] in GUARDS
               and self.guard(st, r, ops[pc], i)):
            pc += 1
        return pc == len(ops)

    def plan_step(self, st, r):
        pc, ws, coll, arrived, dropped = st[r]
        ops = self.prog[r]
        joined = ""
        while pc < len(ops) and ops[pc][0] in GUARDS:
            if not self.guard(st, r, ops[pc], -1):
                return None
            if ops[pc][0] == "join":
                ws, joined = None, f"join {self.tag(*ops[pc][1:])}; "
            pc += 1
        if pc == len(ops):
            return None
        op, s = ops[pc], list(st)
        kind, P = op[0], op[1]  # P: the plan (the barrier for "arrive")
        label = (r, "plan", "")
        if kind == "post":
            label = (r, "plan", f"post receives of round {self.tag(P, op[2])}")
            posted = set(s[self.POSTED0 + r])
            for g in self.remote(P, r):
                if any(x[:2] == (P, g) for x in posted):
                    raise Violation(f"a receive of the previous round is "
                                    "still pending", label)
                posted.add((P, g, op[2]))
            s[self.POSTED0 + r] = tuple(sorted(posted))
        elif kind == "ack":
            q, v = op[2], op[3]
            label = (r, "plan", f"ack[{r}] = {v} -> rank {q} "
                     f"({self.tag(P, v)})")
            self.send_signal(s, r, q, P, self.ack_cell(P, r), v, -1, label)
        elif kind == "arrive":
            label = (r, "plan", f"arrive at barrier {P}")
            arrived = P
        elif kind == "free":
            label = (r, "plan", f"free plan {PLAN_NAME[P]}'s windows")
            self.check_nothing_in_flight(s, r, P, label)
            s[self.MEM0 + 2 * r + P] = None
        elif kind == "alloc":
            label = (r, "plan", f"create plan {PLAN_NAME[P]} (windows "
                     f"{self.data_key[P]}, {self.sig_key[P]})")
            s[self.MEM0 + 2 * r + P] = self.zero(P)
        if kind != "spawn":
            pc += 1
        if pc < len(ops) and ops[pc][0] == "spawn":
            cur = ops[pc][1:]
            ws = tuple(0 for _ in self.workers(r, *cur))
            label = (r, "plan", label[2] + ("; " if label[2] else "")
                     + f"start round {self.tag(cur[0], cur[1])} "
                     f"({'fused' if cur[2] == 'F' else 'baseline'})")
            pc += 1
        s[r] = (pc, ws, coll, arrived, dropped)
        return (r, "plan", joined + label[2]), tuple(s)

    def send_signal(self, s, r, q, P, cell, v, thread, label):
        if self.deliv == "shm":
            self.land(s, r, q, P, (), cell, v, label)
        elif self.deliv == "link":
            ch = self.CHAN0 + r * self.N + q
            s[ch] = s[ch] + ((P, (), cell, v, thread),)
        else:
            ch = self.CHAN0 + r * self.N + q
            s[ch] = s[ch] + ((self.sig_key[P], cell, v, P),)

    def check_nothing_in_flight(self, s, r, P, label):
        """Plan isolation: nothing of plan P is on its way to rank r."""
        N, msgs = self.N, []
        for q in range(N * (self.deliv != "shm")):
            for m in s[self.CHAN0 + q * N + r]:
                if self.deliv == "link" and m[0] == P:
                    msgs.append(f"link message (cell {m[2]} = {m[3]}) from "
                                f"rank {q}")
                elif self.deliv == "mpi" and m[3] == P:
                    msgs.append(f"control message {{window {m[0]}, cell "
                                f"{m[1]}, {m[2]}}} from rank {q}")
        if self.deliv == "mpi":
            msgs += [f"tile message {m}" for m in s[self.CHAN0 + N * N + r]
                     if m[0] == P]
        if msgs and self.isolation:
            raise Violation(f"rank {r} frees plan {PLAN_NAME[P]} while a "
                            f"{msgs[0]} for that plan is still in flight",
                            label)

    def worker_step(self, st, r, i, name, ops, cur):
        P, e, sched, kth = cur
        pc = st[r][1][i]
        while pc < len(ops) and ops[pc][0] in GUARDS:
            if not self.guard(st, r, ops[pc], i):
                return None
            pc += 1
        if pc == len(ops):
            return None
        op, s = ops[pc], list(st)
        kind, tg = op[0], self.tag(P, e)
        own = self.MEM0 + 2 * r + P
        if kind == "rows":
            q = op[1]
            v = ROWS_BASE * e + self.ntiles(P, e, r)
            label = (r, name, f"rows[{r}] = {tg}:{self.ntiles(P, e, r)} "
                     f"-> rank {q}")
            if (self.plant != "rows-no-ack-wait"
                    and st[own][1][self.ack_cell(P, q)] < e - 1):
                return None  # waits for ack[q] >= e - 1
            self.send_signal(s, r, q, P, self.rows_cell(P, r), v, i, label)
        elif kind == "rchk":
            label = (r, name, f"check every peer's row count ({tg})")
            if not self.rows_ok(st, r, P, e, label):
                return None
        elif kind in ("put", "sig", "copy", "bput"):
            q = op[2] if kind != "bput" else op[1]
            empty = len(op) > 3 and op[3] == "empty"
            if kind == "bput":
                blocks = tuple(self.base[P][r] + t
                               for t in range(self.ntiles(P, e, r)))
                cell, what = self.bulk_cell(P, r), "shard"
            else:
                blocks = (self.base[P][r] + op[1],)
                cell, what = blocks[0], f"tile {op[1]}"
                if empty:
                    blocks, what = (), f"empty tile {op[1]}"
            label = (r, name, f"{kind} {what} -> rank {q} ({tg})")
            if (kind != "copy" and self.plant != "no-ack-wait"
                    and st[own][1][self.ack_cell(P, q)] < e - 1):
                return None  # waits for ack[q] >= e - 1
            if kind == "sig":
                self.land(s, r, q, P, (), cell, e, label)
            elif kind == "copy":
                self.land(s, r, q, P, blocks, None, e, label)
            elif self.deliv == "shm":
                self.land(s, r, q, P, blocks, cell, e, label)
            elif self.deliv == "link":
                ch = self.CHAN0 + r * self.N + q
                s[ch] = s[ch] + ((P, blocks, cell, e, i),)
            else:
                ch = self.CHAN0 + self.N * self.N + q
                s[ch] = tuple(sorted(s[ch] + ((P, cell, e, empty),),
                                     key=lambda m: m[:2]))
        elif kind in ("rsput", "rsbput"):
            q = op[2] if kind == "rsput" else op[1]
            mt = self.maxT[P]
            if kind == "rsput":
                blocks = (r * mt + op[1],)
                cell, what = blocks[0], f"partial tile {op[1]}"
                if len(op) > 3 and st[r][1][op[3]] <= op[4]:
                    return None  # comm worker: waits ready (the GEMM's step)
            else:
                blocks = tuple(r * mt + t for t in range(self.tiles[P][q]))
                cell, what = self.bulk_cell(P, r), "partial rows"
            label = (r, name, f"put {what} -> rank {q} ({tg})")
            if (self.plant != "no-ack-wait"
                    and st[own][1][self.ack_cell(P, q)] < e - 1):
                return None  # waits for ack[q] >= e - 1
            if self.deliv == "shm":
                self.land(s, r, q, P, blocks, cell, e, label)
            elif self.deliv == "link":
                ch = self.CHAN0 + r * self.N + q
                s[ch] = s[ch] + ((P, blocks, cell, e, i),)
            else:
                assert kind == "rsput"
                ch = self.CHAN0 + self.N * self.N + q
                s[ch] = tuple(sorted(s[ch] + ((P, blocks[0], e, False),),
                                     key=lambda m: m[:2]))
        elif kind == "ready":
            label = (r, name, f"partial tile {op[1]} of rank {op[2]} done, "
                     f"ready ({tg})")
        elif kind in ("rsred", "rsbred"):
            mt, N = self.maxT[P], self.N
            ts = [op[1]] if kind == "rsred" else range(self.tiles[P][r])
            label = (r, name, f"reduce {'tile ' + str(op[1]) if ts != [] and kind == 'rsred' else 'its rows'} ({tg})")
            blocks, cells = st[own]
            slots = [src * mt + t for src in range(N) if src != r for t in ts]
            need = (slots if kind == "rsred" else
                    [self.bulk_cell(P, src) for src in range(N) if src != r])
            if (self.plant != "rs-reduce-no-wait"
                    and any(cells[c] < e for c in need)):
                return None
            for g in slots:
                if blocks[g] != e:
                    src, t = self.gmap[P][g]
                    raise Violation(
                        f"rank {r} reduces rank {src}'s partial of its tile "
                        f"{t} in round {e} of plan {PLAN_NAME[P]} but the "
                        f"slot holds round {blocks[g]}'s" + (
                            " (not yet written)" if blocks[g] < e else ""),
                        label)
        elif kind == "bself":
            label = (r, name, f"bulk[{r}] = {e} on itself ({tg})")
            self.set_cell(s, own, self.bulk_cell(P, r), e)
        elif kind == "agin":
            label = (r, name, f"enter MPI_Iallgatherv #{kth} ({tg})")
            rk = s[r]
            s[r] = (rk[0], rk[1], rk[2] + 1, rk[3], rk[4])
        elif kind == "agdone":
            label = (r, name, f"MPI_Iallgatherv #{kth} done, bulk[*] = {e} "
                     f"({tg})")
            if any(st[q][2] < op[1] for q in range(self.N)):
                return None
            self.land(s, None, r, P, tuple(self.present(P, e, r)), None, e,
                      label)
            for src in range(self.N):
                self.set_cell(s, own, self.bulk_cell(P, src), e)
        elif kind == "gemm":
            label = (r, name, f"GEMM reads its rows ({tg})")
            blocks, cells = st[own]
            if sched == "F":
                need = self.present(P, e, r)
            else:
                need = [self.bulk_cell(P, src) for src in range(self.N)
                        if src != r and self.ntiles(P, e, src) > 0]
            if any(cells[c] < e for c in need):
                return None
            if not self.rows_ok(st, r, P, e, label):
                return None
            for g in self.present(P, e, r):
                if blocks[g] != e:
                    src, t = self.gmap[P][g]
                    raise Violation(
                        f"rank {r} reads tile {t} of rank {src} in round {e} "
                        f"of plan {PLAN_NAME[P]} but it holds round "
                        f"{blocks[g]}'s rows" + (" (not yet written)"
                                                 if blocks[g] < e else ""),
                        label)
        else:
            raise AssertionError(op)
        rk = s[r]
        ws = list(rk[1])
        ws[i] = pc + 1
        s[r] = (rk[0], tuple(ws), rk[2], rk[3], rk[4])
        return label, tuple(s)

    def rows_ok(self, st, r, P, e, label):
        """agmm_ag_check_rows for every peer: False while a rows cell is
        below round e; a cell of another round (or count) is refused."""
        cells = st[self.MEM0 + 2 * r + P][1]
        for src in range(self.N * bool(self.rows)):
            if src == r:
                continue
            v = cells[self.rows_cell(P, src)]
            if v < ROWS_BASE * e:
                return False
            if v // ROWS_BASE != e or v % ROWS_BASE != self.ntiles(P, e, src):
                raise Violation(
                    f"rank {r} checks rank {src}'s row count of round {e} "
                    f"of plan {PLAN_NAME[P]} but its rows cell holds round "
                    f"{v // ROWS_BASE}'s ({v % ROWS_BASE} tiles): the round "
                    "would be refused as a mismatch", label)
        return True

    def network_steps(self, st, q):
        """Deliveries to rank q: link delivery threads, MPI progress."""
        N, out = self.N, []
        if self.deliv == "link":  # rank r's delivery thread, link r -> q
            for r in range(N):
                ch = self.CHAN0 + r * N + q
                if st[ch]:
                    P, blocks, cell, v, _ = st[ch][0]
                    s = list(st)
                    s[ch] = st[ch][1:]
                    label = (r, "link", f"deliver {'rows+' if blocks else ''}"
                             f"cell {cell} = {v} to rank {q} "
                             f"(plan {PLAN_NAME[P]})")
                    # The delivery thread copies from A_r now: the caller may
                    # change A_r once agmm_plan_run of that round returned.
                    if blocks and st[r][0] > self.round_end[r][P, v]:
                        raise Violation(
                            f"rank {r}'s link copies round {v}'s rows from "
                            f"A_{r} after its agmm_plan_run returned (the "
                            "caller may have changed them)", label)
                    self.land(s, r, q, P, blocks, cell, v, label)
                    out.append((label, tuple(s)))
        elif self.deliv == "mpi":
            for r in range(N):  # control messages, in order per sender
                ch = self.CHAN0 + r * N + q
                if st[ch]:
                    key, cell, v, P = st[ch][0]
                    s = list(st)
                    s[ch] = st[ch][1:]
                    label = (q, "progress", f"apply {{window {key}, cell "
                             f"{cell}, {v}}} from rank {r} (sent for plan "
                             f"{PLAN_NAME[P]})")
                    at = self.plan_at(st, q, key, self.sig_key)
                    abort = at is not None and cell >= self.T[at] + 3 * N
                    if self.silent and (abort or (
                            at is None and self.plant == "destroy-no-wait")):
                        continue  # mpi_abort: the run fails loudly
                    if at is None and self.plant == "destroy-no-wait":
                        raise Violation(f"abort: rank {q} got a signal for "
                                        f"window {key}, which it does not "
                                        "have", label)
                    if at is None:
                        rk = s[q]
                        s[q] = rk[:4] + (rk[4] + 1,)
                    elif at != P and self.isolation:
                        raise Violation(f"a control message of plan "
                                        f"{PLAN_NAME[P]} is applied to plan "
                                        f"{PLAN_NAME[at]}'s window", label)
                    elif abort:  # transport/mpi/mpi.c on_complete's range check
                        raise Violation(f"abort: rank {q} got a signal for "
                                        f"cell {cell} of window {key}, which "
                                        "it does not have", label)
                    else:  # applied as the code does: by (window id, cell)
                        self.set_cell(s, self.MEM0 + 2 * q + at, cell, v)
                    out.append((label, tuple(s)))
            data = self.CHAN0 + N * N + q
            for (P, g, v) in st[self.POSTED0 + q]:
                for j, m in enumerate(st[data]):
                    if m[:2] == (P, g):  # the oldest matching message
                        s = list(st)
                        s[data] = st[data][:j] + st[data][j + 1:]
                        s[self.POSTED0 + q] = tuple(
                            x for x in st[self.POSTED0 + q] if x != (P, g, v))
                        src, t = self.gmap[P][g]
                        label = (q, "progress", f"receive {'empty ' * m[3]}"
                                 f"tile {t} of rank {src} "
                                 f"({self.tag(P, m[2])}), signal = {v}")
                        self.land(s, src, q, P, () if m[3] else (g,), g, v,
                                  label, rows=m[2])
                        out.append((label, tuple(s)))
                        break
        return out

    # ------------------------------------------------------------ end
    def check_final(self, st):
        N = self.N
        waiting = []
        for r in range(N):
            pc, ws = st[r][0], st[r][1]
            cur = self.ctx[r][pc]
            threads = [("plan", self.prog[r], pc, -1)]
            if ws is not None:
                threads += [(name, ops, ws[i], i) for i, (name, ops, _)
                            in enumerate(self.workers(r, *cur))]
            for name, ops, pc, i in threads:
                while (pc < len(ops) and ops[pc][0] in GUARDS
                       and self.guard(st, r, ops[pc], i)):
                    pc += 1
                if pc < len(ops):
                    waiting.append(f"rank {r} {name} waits in "
                                   f"{self.op_text(ops[pc], cur)}")
        if waiting:
            raise Violation("deadlock: " + "; ".join(waiting))
        left = [p for p in st[self.POSTED0:] if p]
        if left and not self.silent:
            raise Violation(f"finished with messages or receives left: {left}")
        if any(st[r][4] for r in range(N)) and not self.silent:
            raise Violation("a control message was dropped (it outlived its "
                            "plan)")

    def op_text(self, op, cur):
        """A blocked step, for deadlock reports."""
        k = op[0]
        if k == "join":
            return f"the join of round {self.tag(*op[1:])}"
        if k == "dwait":
            return (f"destroy of plan {PLAN_NAME[op[1]]}, for every peer's "
                    f"ack >= {op[2]}")
        if k == "pass":
            return f"barrier {op[1]}"
        P, e = cur[0], cur[1]
        if k in ("rsput", "rsbput"):
            q = op[2] if k == "rsput" else op[1]
            return (f"{k} to rank {q}, for ack[{q}] >= {e - 1} or its "
                    f"tile's GEMM ({self.tag(P, e)})")
        if k in ("rsred", "rsbred"):
            return f"the reduction, for its signals >= {e} ({self.tag(P, e)})"
        if k in ("put", "sig", "bput"):
            q = op[1] if k == "bput" else op[2]
            return (f"{k} to rank {q}, for ack[{q}] >= {e - 1} "
                    f"({self.tag(P, e)})")
        if k == "gemm":
            return f"the GEMM, for its signals >= {e} ({self.tag(P, e)})"
        if k == "absent":
            return f"the empty tiles of round {self.tag(op[1], op[2])}"
        if k in ("rows", "rchk"):
            return f"{k} ({self.tag(P, e)}): ack or the peers' row counts"
        if k == "agdone":
            return f"all-gather #{op[1]}, for every rank to enter it"
        return str(op)

    def describe(self, label):
        r, thread, text = label
        return f"rank {r} {thread:8s} {text}"
