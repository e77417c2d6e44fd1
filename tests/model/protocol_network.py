"""Delivery in the model: rows and signals landing in a rank's windows, and
the network's steps (emulated link delivery threads, MPI progress)
(see protocol_rules.py)."""

from protocol_common import PLAN_NAME, Violation


class Network:
    """Mixin of Model: what lands where, and the deliveries to each rank."""

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

    def send_signal(self, s, r, q, P, cell, v, thread, label):
        if self.deliv == "shm" or self.same(r, q):
            self.land(s, r, q, P, (), cell, v, label)
        elif self.deliv == "link":
            ch = self.CHAN0 + r * self.N + q
            s[ch] = s[ch] + ((P, (), cell, v, thread),)
        else:
            ch = self.CHAN0 + r * self.N + q
            s[ch] = s[ch] + ((self.sig_key[P], cell, v, P),)

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
        elif self.mpi:
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
                        # relay: forward to q's host's other ranks (each
                        # at once or later, mpi_relay.c), rows = round v's
                        fwd = self.forward_to(q, src)
                        if fwd:
                            s[self.FWD0 + q] = tuple(sorted(
                                s[self.FWD0 + q] + tuple(
                                    (P, g, v, m[3], p) for p in fwd)))
                        out.append((label, tuple(s)))
                        break
            out += self.forward_steps(st, q) if self.relay else []
        return out

    def forward_steps(self, st, q):
        """Relay: rank q's progress thread forwards a received tile to a
        same-host peer p once p's ready cell reads >= its round: a copy of
        the rows from q's window into p's at the same place, then a release
        store of p's cell (one step, as a shared-memory put). Pending
        forwards are retried in any order (mpi_relay.c forward)."""
        out = []
        for f in st[self.FWD0 + q]:
            P, g, v, empty, p = f
            dst = st[self.MEM0 + 2 * p + P]
            if (self.plant != "forward-no-ready-wait" and dst is not None
                    and dst[1][self.ready_cell(P)] < v):
                continue  # p has not begun round v: retried later
            s = list(st)
            s[self.FWD0 + q] = tuple(x for x in st[self.FWD0 + q] if x != f)
            src, t = self.gmap[P][g]
            label = (q, "progress", f"forward {'empty ' * empty}tile {t} of "
                     f"rank {src} -> rank {p} ({self.tag(P, v)})")
            # The rows are whatever q's window holds there now: round v's,
            # unless a later round's receive overwrote them first.
            rows = st[self.MEM0 + 2 * q + P][0][g]
            if not empty and rows != v:
                raise Violation(
                    f"rank {q} forwards round {v}'s tile {t} of rank {src} "
                    f"to rank {p} (plan {PLAN_NAME[P]}) but its window holds "
                    f"round {rows}'s rows there", label)
            self.land(s, q, p, P, () if empty else (g,), g, v, label,
                      rows=rows)
            out.append((label, tuple(s)))
        return out
