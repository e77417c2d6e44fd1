"""The programs of the model's threads: each rank's plan thread (its rounds,
acks, plan create and destroy) and the workers of each round, as lists of
ops that protocol_steps.py executes (see protocol_rules.py)."""


class Programs:
    """Mixin of Model: what each thread does, in order."""

    def plan_program(self, r):
        """The plan thread of rank r: ops/common/run.c, plan.c (both plans)."""
        ops, k, mpi = [], 0, self.mpi
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
                # mixed: a window's memory is made (and its same-host
                # copies mapped) inside the allocation's collectives
                # (mpi_node.c), so a same-host peer can put into it once
                # those pass, as on shm.
                create = [("arrive", k), ("pass", k)]
                alloc = [("alloc", 1)]
                ops += alloc + create
            for e, s in enumerate(seq, 1):
                if mpi:  # round_start: post this round's receives, ack e-1
                    # relay (agmm_mpi_round_begin, every round): raise the
                    # own ready cell to e, then wait until this rank's
                    # forwards of the plan are done.
                    ops += [("rbegin", P, e), ("fwait", P, "begin")] * (
                        self.relay)
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
            ops += [("arrive", k), ("pass", k)]
            # relay: agmm_mpi_win_free waits for the plan's forwards too.
            ops += [("fwait", P, "free")] * self.relay + [("free", P)]
        return ops

    def workers(self, r, P, e, s, kth):
        """[(name, ops, index of the gemm op)] of round e: ops/ag_gemm/fused.c,
        baseline.c; GEMM workers first, as agmm_round_run numbers them."""
        key = (r, P, e)
        if key in self.wprog:
            return self.wprog[key]
        if self.rs:
            self.wprog[key] = self.rs_workers(r, P, e, s)
            return self.wprog[key]
        C, G, link = self.C, self.G, self.deliv == "link"
        mpi = self.mpi
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
                    if not self.direct(r, q):
                        continue  # q's host's relay forwards it to q
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
            if self.mpi:  # allgather_rows by one thread per rank
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

    def rs_workers(self, r, P, e, s):
        """gemm-rs (ops/gemm_rs/fused.c, baseline.c). Fused: each GEMM
        worker computes the tiles of owners r+1, ..., r (own last); tile t of
        an owner is completed by GEMM worker t % G (the last column group to
        finish it, whichever thread that is: the same steps), which puts it
        (C = 0), hands it to a comm worker (`ready`, C > 0), or, for its own
        rows, reduces it: from rank 2 on, sources 0..r-1 of all its own
        tiles before their GEMM (which adds the own partial in c), then
        sources r+1..N-1 of each tile after it; ranks 0 and 1 every source
        but their own after the GEMM (which writes the own partial in c:
        on rank 1 s_1 + s_0 is s_0 + s_1 bit for bit). Baseline: GEMM
        worker 0 (the caller's thread after the join; the other workers
        only compute) puts each peer's rows in bulk, waits for them
        (quiet), then reduces its rows. The third item
        of each worker is the index of its last read (None: no read).

        gemm-ar (ops/gemm_ar/fused.c, baseline.c) adds: fused, the worker
        that reduced own tile t puts it to every peer (after each peer's
        ack), and with a comm worker or a transport that moves the bytes
        itself each own tile's sum of 0..r-1 comes just before its own
        GEMM (one call per tile) rather than all first; the peers' reduced
        tiles, owners in rotated order, are copied into C by comm worker
        k % C (after its puts) or, with C = 0, by GEMM worker k % G after
        its tiles and before its quiet (the copies overlap its reduced
        tiles' last bytes on a wire); baseline, GEMM worker 0 then puts
        its reduced rows to every peer in bulk, waits for them (quiet) and
        copies every owner's rows once their cell says they are there.

        Rows per call (rows=, ops/gemm_rs/call.c): the round's tiles; GEMM
        worker 0 raises its rows cell on every peer ahead of the first tile
        it hands on, or before its own block when it has no peer tile (so
        the cells travel ahead of the partials on the emulated link; the
        baseline's: before each bulk put) and, on MPI, puts the plan's
        tiles beyond the round's empty; it checks every source's count at
        the end, and each reduction those of its sources first; on MPI the
        caller then waits for the empty tiles (agmm_rs_wait_absent). gemm-ar
        (ops/gemm_ar/fused.c send_rows): after gemm-rs's, on MPI, worker 0
        puts its own reduced tiles beyond the round's, empty, to every
        peer, and the wait covers the peers' (agmm_ar_wait_absent); its
        baseline puts and copies the round's rows (not modelled on MPI)."""
        C, G, link, N = self.C, self.G, self.deliv == "link", self.N
        tl = [self.ntiles(P, e, q) for q in range(N)]  # this round's
        tmax = self.tiles[P]
        quiet = [("quiet",)] if link else []
        rows = bool(self.rows)
        rchk = [("rchk",)] * rows

        def send_rows():  # fused.c send_rows (gemm-ar: then its own)
            out = []
            for q in self.peers(r):
                out += [("rows", q)] * rows
                out += [("rsput", t, q, "empty") for t in range(tl[q], tmax[q])
                        if self.mpi and rows]
            for q in self.peers(r) * (self.ar and self.mpi and rows and
                                      self.plant != "ar-absent-no-put"):
                out += [("arput", t, q, "empty")
                        for t in range(tl[r], tmax[r])]
            return out
        last_read = lambda ops: max([j for j, o in enumerate(ops)
                                     if o[0] in ("rsred", "rsbred",
                                                 "arcopy", "arbcopy")],
                                    default=None)
        ws = []
        if s == "B":
            ops = []
            for q in self.peers(r):
                ops += [("rows", q)] * rows + [("rsbput", q)] * (tl[q] > 0)
            ops = (ops + quiet if ops else []) + (
                [("rsbred",)] if tl[r] > 0 else []) + rchk
            if self.ar:  # agmm_ar_put_rows, agmm_ar_copy_rows
                bput = [("arbput", q) for q in self.peers(r)] * (tl[r] > 0)
                ops += (bput + quiet if bput else []) + [("arbcopy",)] * any(
                    tl[q] for q in self.peers(r))
            ws.append(("gemm0", ops, last_read(ops)))
            ws += [(f"gemm{g}", [], None) for g in range(1, G)]
            ws += [(f"comm{c}", [], None) for c in range(C)]
            return ws
        ready = {}  # (q, t) -> (worker, index of its "ready" step)
        # The own block: from rank 2 on a worker first sums sources 0..r-1
        # of its tiles into c (before its GEMM accumulates the own partial
        # there), then reduces each tile with sources r+1..N-1; ranks 0 and
        # 1 reduce each tile with every other source after the GEMM
        # (fused.c: own_in_c, sums_before_gemm).
        # gemm-ar with tile calls (oneDNN, and the puts overlap: a comm
        # worker, the link or MPI; gemm_ar/fused.c) computes its own block
        # one tile per call, each tile's sum of 0..r-1 just before it;
        # otherwise the sums of every own tile come first (one call).
        order = [(q, t) for q in self.peers(r) for t in range(tl[q])]
        # gemm-ar: the peers' reduced tiles, the same order (copy_tiles)
        copies = lambda i, n: [("arcopy", q, t) for k, (q, t)
                               in enumerate(order) if k % n == i] * self.ar
        before = tuple(range(0, r)) if r > 1 else ()
        after = tuple(q for q in range(N) if q != r and (r <= 1 or q > r))
        own_tiles = self.ar and (C > 0 or self.deliv != "shm")
        for g in range(G):
            ops = []
            mine = [t for t in range(tl[r]) if t % G == g]
            sent = g != 0  # worker 0's rows cells: ahead of its first tile
            for q in self.peers(r) + [r]:
                if q == r and not sent:  # ... or before its own block
                    ops += send_rows()
                    sent = True
                if q == r and before and not own_tiles:
                    ops += [("rsred", t, before) for t in mine]
                for t in range(tl[q]):
                    if t % G != g:
                        continue
                    if not sent:  # fused.c: before its first tile_done
                        ops += send_rows()
                        sent = True
                    if q == r:
                        if before and own_tiles:
                            ops.append(("rsred", t, before))
                        ops.append(("rsred", t, after))
                        ops += [("arput", t, p) for p in self.peers(r)
                                ] * self.ar
                    elif C == 0:
                        ops.append(("rsput", t, q))
                    else:
                        ready[q, t] = (g, len(ops))
                        ops.append(("ready", t, q))
            if g == 0:
                ops += rchk
            if C == 0:  # gemm-ar's copies, before the quiet (before_quiet)
                ops += copies(g, G)
            if any(o[0] in ("rsput", "arput") for o in ops):
                ops += quiet
            ws.append((f"gemm{g}", ops, last_read(ops)))
        for c in range(C):
            ops = [("rsput", t, q) + ready[q, t]
                   for k, (q, t) in enumerate(order) if k % C == c]
            ops = ops + (quiet if ops else []) + copies(c, C)
            ws.append((f"comm{c}", ops, last_read(ops)))
        if self.mpi and rows:  # after its copies (the code: after the join)
            nm, ops, lr = ws[0]
            ws[0] = (nm, ops + [("absent", P, e)] * (
                self.plant != "absent-no-wait"), lr)
        return ws
