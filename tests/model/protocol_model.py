#!/usr/bin/env python3
"""An exhaustive interleaving model of agmm's round protocol (issue 15).

ThreadSanitizer cannot see races between processes over shared memory, so
this explores every interleaving of small configurations (breadth first,
with a visited set) and checks, on every path:

  - a GEMM read sees exactly the current round's rows of the current plan
    (not older, not newer, not another plan's);
  - a put (or an MPI receive completing, an emulated link delivering, a
    relay forwarding) never overwrites rows the destination has still to
    read for an earlier round;
  - every message lands in a window of its own plan, and no message of a
    plan is still in flight to a rank when that rank frees the plan;
  - no interleaving deadlocks; in the final state every rank has finished
    every round (so every work item was computed) and nothing is in flight.

The operations: all-gather + GEMM, GEMM + reduce-scatter (configs with
op="rs": a reduction must see exactly the current round's partials), and
GEMM + all-reduce (op="ar": gemm-rs's steps, then each owner's reduced
tiles put to every peer, which copies each into its C only once it holds
the current round's).
Rounds may have fewer rows than the plan's most (configs with rows=...:
per-call rows, 0 included; all-gather and reduce-scatter): every read
(all-gather) or reduction (reduce-scatter) also checks the row count each
peer raised in its rows cell for that very round. Mixed MPI
worlds may relay the all-gather (configs "+relay"): a tile goes to one
rank of each other host, which forwards it to its host's other ranks
once they are ready; a forward must carry the round it signals.

docs/design.md, "The protocol model", says what is modelled and what is
abstracted, and maps each action to the code. Every change to the round
protocol updates this model and that section together.

Usage: protocol_model.py [-v] [--only SUBSTR]      every configuration
       protocol_model.py [-v] --part I/N           every N-th, from the I-th
       protocol_model.py --plant NAME [--symptoms [--silent]]
       protocol_model.py --self-test [-v]          every plant is caught
       protocol_model.py --without-destroy-wait --symptoms --silent
"""
import argparse
import os
import sys
import time
from collections import deque

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from protocol_rules import (PLANT_WHERE, PLANTS, RELAY_PLANTS, ROWS_PLANTS,
                            Model, Violation)

ALL_SEQS = ("FF", "FB", "BF", "FBF")


def configurations():
    """The covered configurations (keyword arguments of Model)."""
    out = []
    add = lambda **kw: out.append(kw)
    for deliv in ("shm", "link", "mpi"):
        # Two ranks: even, uneven and empty shards; 0/1 comm workers; every
        # pair and triple of schedules.
        for tiles in ((1, 1), (2, 1), (0, 1)):
            for comm in (1, 0):
                for seq in ALL_SEQS:
                    add(delivery=deliv, tiles=tiles, comm=comm, gemm=1,
                        seq=seq)
        # Two GEMM workers (with C = 0 they split the puts between them).
        for comm in (1, 0):
            for seq in ALL_SEQS:
                add(delivery=deliv, tiles=(2, 2), comm=comm, gemm=2, seq=seq)
        # Two comm workers (tiles t = c, c + 2, ...).
        for seq in ("FB", "BF"):
            add(delivery=deliv, tiles=(2, 2), comm=2, gemm=1, seq=seq)
        # Plan B of another shape; B's round a baseline; and a B whose tile
        # cells sit where A's ack cells were (what a stale ack would hit).
        add(delivery=deliv, tiles=(1, 1), tiles_b=(2, 0), comm=1, gemm=1,
            seq="FB", seq_b="B")
        add(delivery=deliv, tiles=(0, 1), tiles_b=(1, 4), comm=1, gemm=1,
            seq="FF")
        # Three ranks, with and without an empty shard.
        for tiles, comm, gemm, seq in (((1, 1, 1), 1, 1, "FBF"),
                                       ((2, 1, 0), 1, 1, "FBF"),
                                       ((1, 0, 1), 1, 1, "BF"),
                                       ((0, 1, 1), 0, 1, "FB"),
                                       ((1, 1, 1), 0, 2, "FB"),
                                       ((1, 1, 0), 1, 1, "FF"),
                                       ((2, 2, 1), 1, 1, "FB"),
                                       ((2, 0, 2), 0, 1, "BF")):
            add(delivery=deliv, tiles=tiles, comm=comm, gemm=gemm, seq=seq)
    # Rows per call (ag): rounds with fewer tiles than the plan's most, an
    # empty shard, a round of no rows at all; fused and baseline mixed.
    for deliv in ("shm", "link", "mpi"):
        for tiles, comm, gemm, seq, rows in (
                ((2, 1), 1, 1, "FBF", ((2, 1), (0, 1), (1, 0))),
                ((2, 1), 0, 1, "FF", ((1, 0), (0, 0))),
                ((2, 2), 0, 2, "FB", ((1, 2), (2, 0))),
                ((1, 2, 1), 1, 1, "FB", ((0, 2, 1), (1, 1, 0)))):
            if deliv == "mpi" and len(tiles) == 3:  # 300k states: the two
                continue  # -rank MPI configurations cover the same steps
            add(delivery=deliv, tiles=tiles, comm=comm, gemm=gemm, seq=seq,
                rows=rows)
    # Mixed (an MPI world with same-host peers, transport/mpi/mpi_node.c):
    # hosts[r] is rank r's host. Two ranks on one host (every put through
    # shared memory, MPI's round structure), and three ranks with two on
    # one host (both kinds of peers in one plan).
    for tiles in ((1, 1), (2, 1), (0, 1)):
        for comm in (1, 0):
            for seq in ALL_SEQS:
                add(delivery="mixed", hosts=(0, 0), tiles=tiles, comm=comm,
                    gemm=1, seq=seq)
    add(delivery="mixed", hosts=(0, 0), tiles=(2, 2), comm=0, gemm=2,
        seq="FB")
    add(delivery="mixed", hosts=(0, 0), tiles=(1, 1), tiles_b=(2, 0),
        comm=1, gemm=1, seq="FB", seq_b="B")
    for hosts, tiles, comm, gemm, seq in (((0, 0, 1), (1, 1, 1), 1, 1, "FBF"),
                                          ((0, 1, 1), (1, 1, 1), 1, 1, "FBF"),
                                          ((0, 0, 1), (2, 1, 0), 1, 1, "FB"),
                                          ((0, 0, 1), (0, 1, 1), 0, 1, "BF"),
                                          ((0, 1, 0), (1, 1, 1), 0, 2, "FB"),
                                          ((0, 0, 1), (1, 0, 1), 1, 1, "FF")):
        add(delivery="mixed", hosts=hosts, tiles=tiles, comm=comm, gemm=gemm,
            seq=seq)
    # 2 hosts x 2 ranks, the layout of the namespace test (mpi_netns.sh).
    add(delivery="mixed", hosts=(0, 0, 1, 1), tiles=(1, 1, 1, 1), comm=1,
        gemm=1, seq="F")
    add(delivery="mixed", hosts=(0, 0, 1, 1), tiles=(1, 0, 1, 0), comm=1,
        gemm=1, seq="FF")
    for hosts, tiles, comm, gemm in (((0, 0), (1, 1), 1, 1),
                                     ((0, 0), (2, 1), 0, 1),
                                     ((0, 0, 1), (1, 1, 1), 1, 1),
                                     ((0, 1, 1), (1, 0, 1), 0, 1)):
        add(delivery="mixed", hosts=hosts, tiles=tiles, comm=comm, gemm=gemm,
            seq="FF", op="rs")
    # Relay (mixed, ag): a tile goes to one rank of each other host, which
    # forwards it to its host's other ranks (transport/mpi/mpi_relay.c).
    for hosts, tiles, comm, gemm, seq, rows in (
            ((0, 0, 1), (1, 1, 1), 1, 1, "FF", None),
            ((0, 0, 1), (1, 1, 1), 1, 1, "FBF", None),
            ((0, 1, 1), (1, 1, 1), 0, 1, "FF", None),
            ((0, 1, 1), (1, 0, 0), 1, 1, "BF", None),
            ((0, 1, 1), (2, 0, 0), 1, 1, "FF", ((1, 0, 0), (2, 0, 0))),
            ((0, 0, 1, 1), (1, 1, 1, 1), 1, 1, "F", None),
            ((0, 0, 1, 1), (1, 0, 1, 0), 1, 1, "FF", None),
            ((0, 1, 1, 1), (1, 0, 0, 0), 1, 1, "FF", None),
            ((0, 1, 1, 2), (1, 1, 0, 1), 1, 1, "F", None)):
        add(delivery="mixed", hosts=hosts, tiles=tiles, comm=comm, gemm=gemm,
            seq=seq, rows=rows, relay=True)
    # GEMM + reduce-scatter (op "rs"): tiles are each rank's tiles of C.
    # On MPI only fused rounds (the rs baseline's bulk receives are not
    # modelled): every B becomes an F there.
    for deliv in ("shm", "link", "mpi"):
        fix = (lambda q: q.replace("B", "F")) if deliv == "mpi" else str
        for tiles in ((1, 1), (2, 1), (0, 1)):
            for comm in (1, 0):
                for seq in sorted({fix(q) for q in ALL_SEQS}):
                    add(delivery=deliv, tiles=tiles, comm=comm, gemm=1,
                        seq=seq, op="rs")
        for comm, gemm in ((1, 2), (0, 2), (2, 1)):
            add(delivery=deliv, tiles=(2, 2), comm=comm, gemm=gemm,
                seq=fix("FB"), op="rs")
        add(delivery=deliv, tiles=(1, 1), tiles_b=(2, 0), comm=1, gemm=1,
            seq=fix("FB"), seq_b=fix("B"), op="rs")
        for tiles, comm, gemm, seq in (((1, 1, 1), 1, 1, "FBF"),
                                       ((1, 0, 1), 1, 1, "BF"),
                                       ((0, 1, 1), 0, 1, "FB"),
                                       ((1, 1, 1), 0, 2, "FB"),
                                       ((2, 1, 0), 1, 1, "FF")):
            add(delivery=deliv, tiles=tiles, comm=comm, gemm=gemm,
                seq=fix(seq), op="rs")
        # Rows per call (rs): rounds with fewer tiles of C than the plan's
        # most, a rank without rows, a round of none (ops/gemm_rs/call.c).
        for tiles, comm, gemm, seq, rows in (
                ((2, 1), 1, 1, "FBF", ((2, 1), (0, 1), (1, 0))),
                ((2, 1), 0, 1, "FB", ((1, 0), (0, 0))),
                ((2, 2), 0, 2, "FB", ((1, 2), (2, 0)))):
            # (three ranks: 1.8 million states on the link, 5 minutes)
            add(delivery=deliv, tiles=tiles, comm=comm, gemm=gemm,
                seq=fix(seq), op="rs", rows=rows)
    # GEMM + all-reduce (op "ar"): gemm-rs's steps, then each reduced own
    # tile put to every peer by the worker that reduced it, and the peers'
    # copies (comm workers, else the GEMM workers after their tiles, before
    # their quiet); the baseline's bulk puts of the own rows and the copy
    # of every owner's (shm, link: not on MPI, as gemm-rs's baseline).
    for deliv in ("shm", "link", "mpi"):
        fix = (lambda q: q.replace("B", "F")) if deliv == "mpi" else str
        for tiles in ((1, 1), (2, 1), (0, 1)):
            for comm in (1, 0):
                add(delivery=deliv, tiles=tiles, comm=comm, gemm=1,
                    seq=fix("FB"), op="ar")
        add(delivery=deliv, tiles=(1, 2), comm=0, gemm=2, seq=fix("BF"),
            op="ar")
        # ((1, 2), 1, 1): rank 1 computes its two own tiles one call each,
        # each after its sum of rank 0's partial (gemm_ar/fused.c).
        for tiles, comm, gemm, seq in (((1, 0, 1), 1, 1, "FB"),
                                       ((1, 1, 1), 0, 1, "FF"),
                                       ((1, 2), 1, 1, "FB")):
            add(delivery=deliv, tiles=tiles, comm=comm, gemm=gemm,
                seq=fix(seq), op="ar")
        # Rows per call (ar): gemm-rs's rows steps, then the round's
        # reduced tiles (on MPI the plan's others empty); a rank without
        # rows, a round of none.
        for tiles, comm, gemm, seq, rows in (
                ((2, 1), 1, 1, "FB", ((0, 1), (2, 0))),
                ((2, 1), 0, 1, "FB", ((1, 0), (0, 0)))):
            add(delivery=deliv, tiles=tiles, comm=comm, gemm=gemm,
                seq=fix(seq), op="ar", rows=rows)
    for hosts, tiles, comm in (((0, 0), (1, 1), 1), ((0, 0, 1), (1, 1, 1), 0)):
        add(delivery="mixed", hosts=hosts, tiles=tiles, comm=comm, gemm=1,
            seq="FF", op="ar")
    return out


class StateLimit(Exception):
    pass


def explore(model, limit=2_000_000):
    """Breadth-first search. Returns (states, violation or None, trace)."""
    init = model.initial()
    parent = {init: None}
    queue = deque([init])
    while queue:
        s = queue.popleft()
        try:
            succ = model.successors(s)
            if not succ:
                model.check_final(s)
        except Violation as v:
            trace = path(parent, s) + ([v.label] if v.label else [])
            return len(parent), v, trace
        for label, s2 in succ:
            if s2 not in parent:
                parent[s2] = (s, label)
                queue.append(s2)
                if len(parent) > limit:
                    raise StateLimit(f"more than {limit} states")
    return len(parent), None, None


def path(parent, s):
    labels = []
    while parent[s] is not None:
        s, label = parent[s]
        labels.append(label)
    return labels[::-1]


def run_configs(plant=None, isolation=True, only=None, verbose=False,
                stop_at_first=False, silent=False, destroy_wait=True,
                part=None):
    """Explore every configuration (part (i, n): only the j-th of the list
    with j % n == i - 1); return (states, seconds, first violation as
    (model, violation, trace) or None)."""
    total, t0, found = 0, time.time(), None
    run_configs.incomplete = 0
    for j, kw in enumerate(configurations()):
        if part and j % part[1] != part[0] - 1:
            continue
        model = Model(plant=plant, isolation=isolation, silent=silent,
                      destroy_wait=destroy_wait, **kw)
        if (only and only not in model.name) or (
                plant and kw["delivery"] not in PLANT_WHERE[plant]) or (
                plant and plant.startswith("rs-") and not model.rs) or (
                plant and plant.startswith("ar-") and not model.ar) or (
                plant in ROWS_PLANTS and not model.rows) or (
                plant in RELAY_PLANTS and not model.relay):
            continue
        t1 = time.time()
        try:
            n, v, trace = explore(model)
        except StateLimit as e:
            print(f"  {model.name:42s} {e}: NOT explored to the end")
            run_configs.incomplete += 1
            continue
        total += n
        if verbose or (v is not None and not plant):
            print(f"  {model.name:42s} {n:6d} states "
                  f"{time.time() - t1:5.2f} s  "
                  + ("ok" if v is None else "VIOLATION: " + v.msg))
        if v is not None and found is None:
            found = (model, v, trace)
            if stop_at_first:
                break
    return total, time.time() - t0, found


def print_trace(model, v, trace):
    print(f"counterexample in {model.name} ({len(trace)} steps):")
    for i, label in enumerate(trace, 1):
        print(f"  {i:3d}. {model.describe(label)}")
    print(f"  => {v.msg}")


def self_test(only, verbose):
    """Every plant must be caught; destroy-no-wait also with the plan
    isolation checks off, by its symptoms in plan B: an abort, and (with
    aborting paths cut) wrong rows read."""
    missed = []
    runs = [(p, True, False) for p in sorted(PLANTS)] + [
        ("destroy-no-wait", False, False), ("destroy-no-wait", False, True)]
    for plant, isolation, silent in runs:
        name = plant + ("" if isolation else " --symptoms") + (
            " --silent" if silent else "")
        total, secs, found = run_configs(plant, isolation, only, False, True,
                                         silent)
        if found is None:
            print(f"plant {name}: NOT caught ({total} states, {secs:.1f} s)")
            missed.append(name)
            continue
        model, v, trace = found
        print(f"plant {name}: caught in {model.name} after {total} states "
              f"({secs:.1f} s), counterexample of {len(trace)} steps:\n"
              f"    {v.msg}")
        if verbose:
            print_trace(model, v, trace)
    print("self-test: " + ("FAILED, not caught: " + ", ".join(missed)
                           if missed else "every planted bug was caught"))
    return 1 if missed else 0


def part_arg(text):
    """--part I/N: 1 <= I <= N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not I/N") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: I from 1 to N")
    return i, n


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="plants:\n" + "\n".join(f"  {k}: {v}" for k, v in
                                       sorted(PLANTS.items())))
    ap.add_argument("--plant", choices=sorted(PLANTS),
                    default=os.environ.get("AGMM_MODEL_PLANT") or None,
                    help="switch a planted bug on; print the shortest "
                         "counterexample of the first configuration that "
                         "shows it; exit 1 if found (default: "
                         "$AGMM_MODEL_PLANT, so `AGMM_MODEL_PLANT=NAME ctest "
                         "-R protocol_model` fails)")
    ap.add_argument("--symptoms", action="store_true",
                    help="turn the plan isolation checks off: a stale message "
                         "acts as in the code, only its effects are checked")
    ap.add_argument("--self-test", action="store_true",
                    help="run every plant; exit 1 if one is NOT caught")
    ap.add_argument("--only", metavar="SUBSTR",
                    help="only configurations whose name contains SUBSTR")
    ap.add_argument("--part", metavar="I/N", type=part_arg,
                    help="only part I of N of the configurations (every "
                         "N-th of the list from the I-th; the N parts are "
                         "disjoint and together every configuration: CTest "
                         "runs them as separate tests)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="one line per configuration (with --self-test: "
                         "every counterexample)")
    ap.add_argument("--silent", action="store_true",
                    help="with --symptoms: paths where a rank aborts end "
                         "there; look for wrong results and deadlocks only")
    ap.add_argument("--without-destroy-wait", action="store_true",
                    help="half of issue 15's fix: fresh MPI window ids and "
                         "dropped stale messages, no wait in destroy (use "
                         "with --symptoms [--silent])")
    a = ap.parse_args()
    if a.plant and a.plant not in PLANTS:  # from the environment
        ap.error(f"AGMM_MODEL_PLANT={a.plant}: not a plant")
    if a.self_test:
        return self_test(a.only, a.verbose)
    total, secs, found = run_configs(a.plant, not a.symptoms, a.only,
                                     a.verbose, bool(a.plant), a.silent,
                                     not a.without_destroy_wait, a.part)
    if found:
        print_trace(*found)
    what = f"plant {a.plant}" if a.plant else "protocol"
    what += f" (part {a.part[0]}/{a.part[1]})" if a.part else ""
    skipped = run_configs.incomplete
    print(f"{what}: {total} states in {secs:.1f} s: "
          + ("VIOLATION" if found else "no violation")
          + (f"; {skipped} configurations over the state limit" if skipped
             else ""))
    return 1 if found or skipped else 0


if __name__ == "__main__":
    sys.exit(main())
