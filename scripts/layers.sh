#!/usr/bin/env bash
# The layer rules of docs/design.md ("Layers"), checked on src/:
#   1. no include cycle between folders (a folder is a directory under src/,
#      so transport/ and transport/shm/ are two; tsort finds the loops);
#   2. ops/ and trace/ never read a table (`w->ops->`, `ops->name`,
#      `ctl->`);
#   3. one responsibility per file: a file is split along a seam (two
#      jobs, two readers, two lifetimes), never to meet a line count, and
#      what was cut apart only to fit is one file again; a source file
#      over 800 lines fails, as one that surely does two jobs (the
#      before-stop check asks the question from 600);
# and on the whole repository:
#   4. every repository path named in a C comment (src/, include/, tools/,
#      tests/, bench/, fuzz/, examples/) or in docs/*.md and README.md names
#      a tracked file. A path is a token of one or more `folder/` parts and
#      a file name with an extension (c h md py sh cmake txt in map), a `*`
#      allowed as a glob (`tests/unit/test_*.c`), whose first part is the
#      name of a folder of the repository (so `/dev/shm/agmm:*`, URLs,
#      `torch/distributed/...`, `lib/...` of an install and build/ outputs
#      are not paths). It resolves from the repository root, from src/ or
#      a folder directly in it (`shm/shm.c` is src/transport/shm/shm.c,
#      `ag_gemm/rows.c` src/ops/ag_gemm/rows.c), or from the naming file's
#      own folder or one above it. A bare file name (`joined.c`) must be
#      the name of a tracked file, but for the few in NOT_OURS below;
#   5. docs/design.md's folder table (the rows `| \`folder\` | ... |` after
#      its `| folder | what it does |` header) has a row for every folder
#      of src/, include/, tools/ and python/ holding tracked files, and
#      names in backquotes each such file: in its folder's row as
#      `name.c`, or in a parent folder's row as `sub/name.c`.
# The call rule (no circle of src/ files that call each other across
# folders, inside ops/common or inside gemm/) needs the build's object
# files: scripts/call_cycles.py checks it (ctest -R unit_layers_no_call_cycle).
# Prints the folder edges (with -v) and exits non-zero on a broken rule.
set -euo pipefail
cd "$(dirname "$0")/../src"
fail=0
edges=$(for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
    from=$(dirname "$f")
    grep -o '^#include "[a-z_/]*\.h"' "$f" | sed 's/#include "//; s/"$//' |
        while read -r inc; do
            to=$(dirname "$inc")
            if [ "$to" != . ] && [ "$to" != "$from" ]; then
                echo "$from $to"
            fi
        done
done | sort -u)
if [ "${1:-}" = -v ]; then echo "$edges"; fi
if ! echo "$edges" | tsort >/dev/null 2>/tmp/agmm_layers.$$; then
    echo "layers: include cycle between folders:" >&2
    cat /tmp/agmm_layers.$$ >&2
    fail=1
fi
rm -f /tmp/agmm_layers.$$
if grep -rn 'w->ops->\|ops->name\|ctl->' ops trace; then
    echo "layers: ops/ or trace/ reads a table (use agmm_tp_* / world/world.h)" >&2
    fail=1
fi
big=$(find . -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 800')
if [ -n "$big" ]; then
    echo "layers: files over 800 lines (does each do two jobs? split it along a seam):" >&2
    echo "$big" >&2
    fail=1
fi
# Rule 4, from the repository root.
if ! (cd .. && python3 - <<'PY'
import fnmatch, os, re, subprocess, sys

try:
    files = subprocess.run(["git", "ls-files"], capture_output=True,
                           text=True, check=True).stdout.split("\n")
except (OSError, subprocess.CalledProcessError):  # not a git checkout
    files = [os.path.relpath(os.path.join(d, f))
             for d, _, fs in os.walk(".") for f in fs]
files = {f for f in files if f and not f.startswith("build")}
folders = set()
for f in files:
    d = os.path.dirname(f)
    while d:
        folders.add(d)
        d = os.path.dirname(d)
folder_names = {os.path.basename(d) for d in folders}
bases_all = [""] + sorted(d for d in folders
                          if d == "src" or os.path.dirname(d) == "src")

# Bare names that are not the repository's files: the reader's own program
# in README's and docs/install.md's examples, the module cmake --install
# generates, a system header.
NOT_OURS = {"prog.c", "args.c", "_libpath.py", "cblas.h", "dnnl.h", "dnnl_version.h"}
names = {os.path.basename(f) for f in files}
BARE = re.compile(r"(?<![\w./:~$<>@*-])([\w-][\w.-]*\.(?:c|h|md|py|sh))"
                  r"(?![\w/-])")
PATH = re.compile(r"(?<![\w./:~$<>@-])((?:[\w.*-]+/)+[\w*-][\w.*-]*"
                  r"\.(?:c|h|md|py|sh|cmake|txt|in|map))(?![\w/-])")
C_COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"'
                       r"|'(?:[^'\\\n]|\\.)*'", re.S)

def exists(p):
    if "*" in p:
        return any(fnmatch.fnmatchcase(f, p) for f in files)
    return p in files or p in folders

def resolves(path, naming_file):
    bases = list(bases_all)
    d = os.path.dirname(naming_file)
    while d:
        bases.append(d)
        d = os.path.dirname(d)
    return any(exists(os.path.normpath(os.path.join(b, path)))
               for b in bases)

def chunks(f, text):
    if f.endswith((".c", ".h")):
        for m in C_COMMENT.finditer(text):
            if m.group(0)[0] in "\"'":
                continue  # a string: messages may name runtime paths
            yield text.count("\n", 0, m.start()) + 1, m.group(0)
    else:
        for i, line in enumerate(text.split("\n")):
            yield i + 1, line

c_dirs = ("src/", "include/", "tools/", "tests/", "bench/", "fuzz/",
          "examples/")
named = sorted(f for f in files
               if (f.startswith(c_dirs) and f.endswith((".c", ".h")))
               or re.fullmatch(r"docs/[^/]+\.md|README\.md", f))
bad = 0
def report(f, msg):
    global bad
    print(f"layers: {msg}", file=sys.stderr)
    bad += 1

for f in named:
    with open(f, encoding="utf-8") as fh:
        text = fh.read()
    for line, chunk in chunks(f, text):
        for m in PATH.finditer(chunk):
            p = m.group(1)
            if p.split("/")[0] not in folder_names:
                continue
            if not resolves(p, f):
                at = line + chunk.count("\n", 0, m.start())
                report(f, f"{f}:{at}: {p} names no file (from the root, "
                       f"src/ or src/*/, or {os.path.dirname(f) or '.'}/ "
                       "and above)")
        for m in BARE.finditer(chunk):
            p = m.group(1)
            if p not in names and p not in NOT_OURS:
                at = line + chunk.count("\n", 0, m.start())
                report(f, f"{f}:{at}: {p} is no tracked file's name")

# Rule 5: the folder table names every folder and file of the code.
design = "docs/design.md"
if design in files:
    lines = open(design, encoding="utf-8").read().split("\n")
    head = "| folder | what it does |"
    rows = {}
    if head in lines:
        i = lines.index(head) + 2
        while i < len(lines) and lines[i].startswith("|"):
            m = re.match(r"\| `([^`]+)` \|", lines[i])
            if m:
                rows[m.group(1)] = lines[i]
            i += 1
    else:
        report(design, f"{design}: no folder table ({head})")
    code = sorted(f for f in files
                  if f.startswith(("src/", "include/", "tools/", "python/")))
    for d in sorted({os.path.dirname(f) for f in code}):
        if d not in rows:
            report(design, f"{design}: the folder table has no row for {d}")
    for f in code:
        d, b = os.path.dirname(f), os.path.basename(f)
        named = f"`{b}`" in rows.get(d, "")
        p = os.path.dirname(d)
        while p and not named:
            named = f"`{os.path.relpath(f, p)}`" in rows.get(p, "")
            p = os.path.dirname(p)
        if not named and d in rows:
            report(design, f"{design}: the folder table's row for {d} does "
                   f"not name {b}")
sys.exit(1 if bad else 0)
PY
); then
    fail=1
fi
exit $fail
