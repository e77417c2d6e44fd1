"""The import rules of the Python package (docs/design.md, "The Python
package's imports"), checked on python/agmm's sources with ast (nothing
is imported, so torch need not be installed):

  1. no import cycle between the package's modules. Every import
     statement counts, at module level or inside a function: an edge from
     the importing module to the module it names (`from . import x`,
     `from .p import x` with x a module: to x; else to the package or
     module named after `from`). Packages are their __init__.py; the
     parent packages Python runs first are not edges.
  2. a private name (one `_`, not a dunder) of a module is used only in
     its own folder: `from m import _n` (with _n not a module) and
     `a._n` (a bound by an import to a module m) fail when m's file is in
     another folder than the importing file. Underscore modules
     (`_lib.py`, `_buffers.py`) are the package's own and may be imported
     from any of its folders; their public names are theirs.
  3. the packaging names every file and folder: python/CMakeLists.txt's
     AGMM_PY_SOURCES (the build tree's copy and `cmake --install`) lists
     each .py file, pyproject.toml's packages (pip) each folder.

Usage: import_graph.py [python/agmm]. Prints each failure and exits 1.
"""
import ast
import os
import sys


def modules(root):
    """{dotted name: file} for every .py under root (root's own name first)."""
    top = os.path.basename(os.path.normpath(root))
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "__pycache__")))
        rel = os.path.relpath(d, os.path.dirname(os.path.normpath(root)))
        pkg = rel.replace(os.sep, ".")
        for f in sorted(files):
            if f.endswith(".py"):
                name = pkg if f == "__init__.py" else pkg + "." + f[:-3]
                out[name] = os.path.join(d, f)
    assert top in out, "%s has no __init__.py" % root
    return out


def is_package(mods, name):
    return mods.get(name, "").endswith("__init__.py")


def defined(path):
    """The names a module binds at its top level."""
    names = set()
    for node in ast.parse(open(path).read(), path).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def resolve(mods, me, level, module):
    """The dotted name a `from` names (None: outside the package)."""
    if level == 0:
        return module if module and module.split(".")[0] in {
            n.split(".")[0] for n in mods} else None
    base = me if is_package(mods, me) else me.rpartition(".")[0]
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    return base + ("." + module if module else "")


def check(root):
    mods = modules(root)
    edges = {m: set() for m in mods}
    fails = []
    for me, path in mods.items():
        tree = ast.parse(open(path).read(), path)
        bound = {}  # local name -> module it names (ours)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods:
                        edges[me].add(a.name)
                        bound[a.asname or a.name.split(".")[0]] = \
                            a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                src = resolve(mods, me, node.level, node.module)
                if src is None:
                    continue
                if src not in mods:
                    fails.append("%s:%d: imports %s, not a module of the package"
                                 % (path, node.lineno, src))
                    continue
                for a in node.names:
                    sub = src + "." + a.name
                    if sub in mods:
                        edges[me].add(sub)
                        bound[a.asname or a.name] = sub
                        continue
                    if is_package(mods, src) and a.name not in defined(mods[src]):
                        continue  # a module the build writes (_libpath.py)
                    edges[me].add(src)
                    if a.name.startswith("_") and not a.name.startswith("__") \
                            and os.path.dirname(mods[src]) != os.path.dirname(path):
                        fails.append("%s:%d: imports the private %s from %s "
                                     "(another folder)" % (path, node.lineno,
                                                          a.name, src))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in bound and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                src = bound[node.value.id]
                if src + "." + node.attr in mods:
                    continue
                if os.path.dirname(mods[src]) != os.path.dirname(path):
                    fails.append("%s:%d: uses the private %s.%s (another folder)"
                                 % (path, node.lineno, src, node.attr))
    for m in edges:
        edges[m].discard(m)
    # Cycles: a depth-first search, each cycle reported once by its path.
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                fails.append("import cycle: " + " -> ".join(
                    stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2
    for m in sorted(mods):
        if m not in state:
            visit(m)
    return mods, edges, fails


def packaging(root, mods):
    """Rule 3: the files CMake copies and installs, the packages pip takes."""
    import re
    fails = []
    here = os.path.dirname(os.path.normpath(root))
    files = {os.path.relpath(f, root).replace(os.sep, "/") for f in mods.values()}
    cm = re.sub(r"#[^\n]*", "", open(os.path.join(here, "CMakeLists.txt")).read())
    m = re.search(r"set\(AGMM_PY_SOURCES(.*?)\)", cm, re.S)
    listed = set(m.group(1).split()) if m else set()
    for f in sorted(files - listed):
        fails.append("python/CMakeLists.txt: AGMM_PY_SOURCES lacks " + f)
    for f in sorted(listed - files):
        fails.append("python/CMakeLists.txt: AGMM_PY_SOURCES names no file " + f)
    pp = open(os.path.join(here, "..", "pyproject.toml")).read()
    m = re.search(r"^packages *= *\[(.*?)\]", pp, re.S | re.M)
    pkgs = set(re.findall(r'"([^"]+)"', m.group(1))) if m else set()
    ours = {n for n in mods if is_package(mods, n)}
    for n in sorted(ours ^ pkgs):
        fails.append("pyproject.toml: packages %s %s" % (
            "lacks" if n in ours else "names no package", n))
    return fails


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "agmm")
    mods, edges, fails = check(root)
    fails += packaging(root, mods)
    for f in fails:
        print(f)
    print("import_graph: %d modules, %d edges, %d failure(s)"
          % (len(mods), sum(len(e) for e in edges.values()), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
