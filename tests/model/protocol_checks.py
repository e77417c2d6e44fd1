"""The checks of the model that are not part of a step: rows overwritten
before they were read, row counts, plan isolation, and the final state
(deadlock, completion) (see protocol_rules.py)."""

from protocol_common import GUARDS, PLAN_NAME, ROWS_BASE, Violation


class Checks:
    """Mixin of Model: the protocol's invariants."""

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

    def check_overwrite(self, st, src, q, P, g, e, label):
        done = self.rounds_read(st, q, P)
        if done < e - 1:
            s, t = self.gmap[P][g]
            raise Violation(f"round {e}'s rows of tile {t} of rank {s} "
                            f"overwrite rows rank {q} has not finished "
                            f"reading for round {done + 1} (plan "
                            f"{PLAN_NAME[P]})", label)

    def check_nothing_in_flight(self, s, r, P, label):
        """Plan isolation: nothing of plan P is on its way to rank r."""
        N, msgs = self.N, []
        for q in range(N * (self.deliv != "shm")):
            for m in s[self.CHAN0 + q * N + r]:
                if self.deliv == "link" and m[0] == P:
                    msgs.append(f"link message (cell {m[2]} = {m[3]}) from "
                                f"rank {q}")
                elif self.mpi and m[3] == P:
                    msgs.append(f"control message {{window {m[0]}, cell "
                                f"{m[1]}, {m[2]}}} from rank {q}")
        if self.mpi:
            msgs += [f"tile message {m}" for m in s[self.CHAN0 + N * N + r]
                     if m[0] == P]
        for q in range(N * self.relay):
            msgs += [f"forward {f} from rank {q}" for f in s[self.FWD0 + q]
                     if f[0] == P and f[4] == r]
        if msgs and self.isolation:
            raise Violation(f"rank {r} frees plan {PLAN_NAME[P]} while a "
                            f"{msgs[0]} for that plan is still in flight",
                            label)

    def rows_ok(self, st, r, P, e, label, srcs=None):
        """agmm_ag_check_rows (rs: agmm_rs_check_rows) for every peer (or
        those of srcs): False while a rows cell is below round e; a cell of
        another round (or count) is refused. ag: the source's own tiles;
        rs: r's, of which the source sends partials."""
        cells = st[self.MEM0 + 2 * r + P][1]
        for src in (range(self.N) if srcs is None else srcs):
            if src == r or not self.rows:
                continue
            v = cells[self.rows_cell(P, src)]
            want = self.ntiles(P, e, r if self.rs else src)
            if v < ROWS_BASE * e:
                return False
            if v // ROWS_BASE != e or v % ROWS_BASE != want:
                raise Violation(
                    f"rank {r} checks rank {src}'s row count of round {e} "
                    f"of plan {PLAN_NAME[P]} but its rows cell holds round "
                    f"{v // ROWS_BASE}'s ({v % ROWS_BASE} tiles): the round "
                    "would be refused as a mismatch", label)
        return True

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
        if k == "fwait":
            return (f"{'round start' if op[2] == 'begin' else 'window free'}"
                    f" of plan {PLAN_NAME[op[1]]}, for its forwards")
        P, e = cur[0], cur[1]
        if k in ("rsput", "rsbput"):
            q = op[2] if k == "rsput" else op[1]
            return (f"{k} to rank {q}, for ack[{q}] >= {e - 1} or its "
                    f"tile's GEMM ({self.tag(P, e)})")
        if k in ("arput", "arbput"):
            q = op[2] if k == "arput" else op[1]
            return f"{k} to rank {q}, for ack[{q}] >= {e - 1} ({self.tag(P, e)})"
        if k in ("arcopy", "arbcopy"):
            return f"the copy, for its signals >= {e} ({self.tag(P, e)})"
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
