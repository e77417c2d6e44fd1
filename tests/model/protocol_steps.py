"""The steps of the model's threads: a plan thread's or a worker's next op,
with the waits before it (see protocol_rules.py)."""

from protocol_common import GUARDS, PLAN_NAME, ROWS_BASE, Violation


class Steps:
    """Mixin of Model: one step of a rank's plan thread or of a worker."""

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
            here = self.present(P, e, r) + self.red_present(P, e, r)
            return all(cells[g] >= e for g in self.remote(P, r)
                       if g not in here)
        if kind == "fwait":  # relay: none of the plan's forwards pending
            if op[2] == "begin" and self.plant == "begin-no-forward-wait":
                return True
            return not any(f[0] == op[1] for f in st[self.FWD0 + r])
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
            for g in self.posted(P, r):
                if any(x[:2] == (P, g) for x in posted):
                    raise Violation(f"a receive of the previous round is "
                                    "still pending", label)
                posted.add((P, g, op[2]))
            s[self.POSTED0 + r] = tuple(sorted(posted))
        elif kind == "rbegin":  # agmm_mpi_relay_ready, in round_begin
            label = (r, "plan", f"ready[{r}] = {op[2]} "
                     f"({self.tag(P, op[2])})")
            self.set_cell(s, self.MEM0 + 2 * r + P, self.ready_cell(P), op[2])
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
            # ag: its own tiles; rs: q's tiles it sends partials of
            n = self.ntiles(P, e, q if self.rs else r)
            v = ROWS_BASE * e + n
            label = (r, name, f"rows[{r}] = {tg}:{n} -> rank {q}")
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
            elif self.deliv == "shm" or self.same(r, q):
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
            empty = len(op) > 3 and op[3] == "empty"
            if kind == "rsput":
                blocks = (r * mt + op[1],)
                cell, what = blocks[0], f"partial tile {op[1]}"
                if empty:  # MPI, rows per call: the plan's tile, no rows
                    blocks, what = (), f"empty partial tile {op[1]}"
                elif len(op) > 3 and st[r][1][op[3]] <= op[4]:
                    return None  # comm worker: waits ready (the GEMM's step)
            else:
                blocks = tuple(r * mt + t
                               for t in range(self.ntiles(P, e, q)))
                cell, what = self.bulk_cell(P, r), "partial rows"
            label = (r, name, f"put {what} -> rank {q} ({tg})")
            if (self.plant != "no-ack-wait"
                    and st[own][1][self.ack_cell(P, q)] < e - 1):
                return None  # waits for ack[q] >= e - 1
            if self.deliv == "shm" or self.same(r, q):
                self.land(s, r, q, P, blocks, cell, e, label)
            elif self.deliv == "link":
                ch = self.CHAN0 + r * self.N + q
                s[ch] = s[ch] + ((P, blocks, cell, e, i),)
            else:
                assert kind == "rsput"
                ch = self.CHAN0 + self.N * self.N + q
                s[ch] = tuple(sorted(s[ch] + ((P, cell, e, empty),),
                                     key=lambda m: m[:2]))
        elif kind in ("arput", "arbput"):  # gemm-ar: reduced rows to q
            q = op[2] if kind == "arput" else op[1]
            empty = len(op) > 3 and op[3] == "empty"
            if kind == "arput":
                blocks = (self.red_cell(P, r, op[1]),)
                cell, what = blocks[0], f"reduced tile {op[1]}"
                if empty:  # MPI, rows per call: the plan's tile, no rows
                    blocks, what = (), f"empty reduced tile {op[1]}"
            else:
                blocks = tuple(self.red_cell(P, r, t)
                               for t in range(self.ntiles(P, e, r)))
                cell, what = self.red_rows_cell(P, r), "reduced rows"
            label = (r, name, f"put {what} -> rank {q} ({tg})")
            if (self.plant != "no-ack-wait"
                    and st[own][1][self.ack_cell(P, q)] < e - 1):
                return None  # waits for ack[q] >= e - 1
            if self.deliv == "shm" or self.same(r, q):
                self.land(s, r, q, P, blocks, cell, e, label)
            elif self.deliv == "link":
                ch = self.CHAN0 + r * self.N + q
                s[ch] = s[ch] + ((P, blocks, cell, e, i),)
            else:
                assert kind == "arput"
                ch = self.CHAN0 + self.N * self.N + q
                s[ch] = tuple(sorted(s[ch] + ((P, cell, e, empty),),
                                     key=lambda m: m[:2]))
        elif kind in ("arcopy", "arbcopy"):  # gemm-ar: into this rank's C
            blocks, cells = st[own]
            if kind == "arcopy":
                q, t = op[1], op[2]
                need = got = [self.red_cell(P, q, t)]
                what = f"rank {q}'s reduced tile {t}"
            else:
                need = [self.red_rows_cell(P, q) for q in self.peers(r)
                        if self.ntiles(P, e, q) > 0]
                got = self.red_present(P, e, r)
                what = "every owner's reduced rows"
            label = (r, name, f"copy {what} into C ({tg})")
            if (self.plant != "ar-copy-no-wait"
                    and any(cells[c] < e for c in need)):
                return None
            for g in got:
                if blocks[g] != e:
                    q, t = self.gmap[P][g]
                    raise Violation(
                        f"rank {r} copies rank {q}'s reduced tile {t} in "
                        f"round {e} of plan {PLAN_NAME[P]} but its window "
                        f"holds round {blocks[g]}'s" + (
                            " (not yet written)" if blocks[g] < e else ""),
                        label)
        elif kind == "ready":
            label = (r, name, f"partial tile {op[1]} of rank {op[2]} done, "
                     f"ready ({tg})")
        elif kind in ("rsred", "rsbred"):
            mt, N = self.maxT[P], self.N
            ts = [op[1]] if kind == "rsred" else range(self.ntiles(P, e, r))
            label = (r, name, f"reduce {'tile ' + str(op[1]) if ts != [] and kind == 'rsred' else 'its rows'}"
                     + (f" from ranks {list(op[2])}" if kind == "rsred" and len(op) > 2 else "")
                     + f" ({tg})")
            blocks, cells = st[own]
            # rsred may name the sources of its step (fused: those before
            # the rank, then those after it; on ranks 0 and 1 every other
            # one, after the GEMM); else every peer.
            srcs = op[2] if kind == "rsred" and len(op) > 2 else range(N)
            slots = [src * mt + t for src in srcs if src != r for t in ts]
            need = (slots if kind == "rsred" else
                    [self.bulk_cell(P, src) for src in range(N) if src != r])
            if (self.plant != "rs-reduce-no-wait"
                    and any(cells[c] < e for c in need)):
                return None
            if not self.rows_ok(st, r, P, e, label, srcs):
                return None  # agmm_rs_reduce checks its sources' counts
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
