#!/usr/bin/env python3
"""The call-cycle rule of docs/design.md ("Layers"), checked on the
library's object files: no loop of src/ files that call each other.

The graph: a node is a .c file under src/; an edge X -> Y is X using a
global symbol (a function or a variable) that Y defines, read from `nm`
of the two object files (Y defines it, X has it undefined). A strongly
connected component of two or more files is a circle of files. It fails
when its files are in more than one folder (a folder is a directory of
src/, so gemm/ and gemm/onednn/ are two), or all in src/ops/common, or
all in src/gemm or one of its subfolders. A circle inside another single
folder is allowed (printed with -v).

What `nm` sees is what the build compiled: a file left out of this build
(an engine not built in, the MPI world without MPI) is no node, and calls
inside an #ifdef count only where it is on.

A reference listed in ALLOW below is no edge; each entry says why the
loop it closes is deliberate, and an entry that matches no reference of
the build fails (the list stays what is still needed).

Usage: call_cycles.py [-v] [OBJECT...]. The objects are the library's
(CTest passes $<TARGET_OBJECTS:agmm_obj>); without any, the *.c.o files
of src/ sources under $AGMM_BUILD (default: build/ of the repository).
Prints each failing circle with the symbols of its edges and exits 1;
with -v also prints every edge between two folders and allowed circles.
"""
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# (file, symbol): a use of `symbol` by `file` that makes no edge, with the
# reason. Keep it tiny: a loop is first a seam to move a function across.
_TABLE = ("the list of operations points to each operation's table, as "
          "the engine list to each engine's: ops/common reaches an "
          "operation only through it (agmm_operation), and the operation "
          "calls ops/common")
ALLOW = {
    ("src/ops/list.c", "agmm_op_ag_gemm"): _TABLE,
    ("src/ops/list.c", "agmm_op_gemm_rs"): _TABLE,
    ("src/ops/list.c", "agmm_op_gemm_ar"): _TABLE,
}


def source_of(obj):
    """src/x/y.c for an object file .../<target>.dir/src/x/y.c.o, else None."""
    p = obj.replace(os.sep, "/")
    i = p.rfind(".dir/")
    if i < 0 or not p.endswith(".c.o"):
        return None
    rel = p[i + len(".dir/"):-len(".o")]
    return rel if rel.startswith("src/") else None


def find_objects(build):
    out = []
    for d, dirs, files in os.walk(build):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".c.o"):
                out.append(os.path.join(d, f))
    return out


def symbols(objs):
    """{object: (defined, undefined)} global symbols, from one nm per 200."""
    nm = os.environ.get("NM") or "nm"
    out = {o: (set(), set()) for o in objs}
    for i in range(0, len(objs), 200):
        text = subprocess.run([nm, "-A", "-P"] + objs[i:i + 200],
                              capture_output=True, text=True,
                              check=True).stdout
        for line in text.splitlines():
            obj, _, rest = line.partition(": ")
            f = rest.split()
            if obj not in out or len(f) < 2:
                continue
            name, kind = f[0], f[1]
            if kind in ("U", "w", "v"):
                out[obj][1].add(name)
            elif kind.isupper():  # T D B R C W V G S ...: global, defined
                out[obj][0].add(name)
    return out


def components(nodes, edges):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def forbidden(comp):
    """Why a circle of these files breaks the rule, or None."""
    folders = {os.path.dirname(f) for f in comp}
    if len(folders) > 1:
        return "across folders (" + ", ".join(sorted(folders)) + ")"
    (d,) = folders
    if d == "src/ops/common":
        return "inside src/ops/common"
    if d == "src/gemm" or d.startswith("src/gemm/"):
        return "inside " + d
    return None


def main(argv):
    verbose = "-v" in argv
    objs = [a for a in argv if a != "-v"]
    if not objs:
        build = os.environ.get("AGMM_BUILD", os.path.join(ROOT, "build"))
        # the library's own objects first, where a source is in two targets
        objs = sorted(find_objects(build), key=lambda o: "/agmm_obj.dir/" not in o)
    srcs = {}
    for o in objs:
        s = source_of(o)
        if s and s not in srcs and os.path.exists(os.path.join(ROOT, s)):
            srcs[s] = o  # a stale object of a deleted source is left out
    if not srcs:
        print("call_cycles: no object file of a src/ source (build first, "
              "or pass the objects)", file=sys.stderr)
        return 2
    syms = symbols(sorted(srcs.values()))
    defs, uses = {}, {}
    for s, o in sorted(srcs.items()):
        d, u = syms[o]
        uses[s] = u
        for name in d:
            defs.setdefault(name, s)
    edges, why, allowed = {}, {}, set()
    for s, u in uses.items():
        for name in sorted(u):
            t = defs.get(name)
            if t is None or t == s:
                continue
            if (s, name) in ALLOW:
                allowed.add((s, name))
                continue
            edges.setdefault(s, set()).add(t)
            why.setdefault((s, t), []).append(name)
    if verbose:
        for (s, t), names in sorted(why.items()):
            if os.path.dirname(s) != os.path.dirname(t):
                print(f"{s} -> {t}: {', '.join(names)}")
    bad = 0
    for s, name in sorted(set(ALLOW) - allowed):
        if s in srcs:  # a file this build compiled that no longer uses it
            print(f"call_cycles: ALLOW lists {s} using {name}, which it does "
                  "not: remove the entry", file=sys.stderr)
            bad += 1
    for comp in components(sorted(srcs), edges):
        if len(comp) < 2:
            continue
        reason = forbidden(comp)
        if reason is None and not verbose:
            continue
        head = "circle of files" if reason else "allowed circle (one folder)"
        out = sys.stderr if reason else sys.stdout
        print(f"call_cycles: {head}{' ' + reason if reason else ''}:", file=out)
        inside = set(comp)
        for s in comp:
            for t in sorted(edges.get(s, ())):
                if t in inside:
                    print(f"  {s} -> {t}: {', '.join(why[(s, t)])}", file=out)
        bad += reason is not None
    if bad:
        print(f"call_cycles: {bad} circle(s) of files: move a function to "
              "the file that owns it (docs/design.md, \"Layers\")",
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
