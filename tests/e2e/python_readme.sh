#!/usr/bin/env bash
# README.md's "From Python": its snippet is byte for byte the marked region
# of examples/allgather_gemm.py, and its shell loop, run as printed (with
# this build's build/python, this checkout's examples/, a free port and the
# test's interpreter), starts two ranks that each check their result and
# print "rank R of 2: ... ok" (a failed check prints a traceback instead).
# usage: python_readme.sh SOURCE_DIR BUILD_DIR PYTHON
set -euo pipefail
src=$1 build=$2 python=$3
bash "$src/examples/readme_check.sh" snippet "$src/README.md" "$src/examples/allgather_gemm.py"
loop=$(awk 'found == 0 && index($0, "<!-- python run") { found = 1; next }
    found == 1 && /^```/ { found = 2; next }
    found == 2 && /^```/ { exit }
    found == 2 { print }' "$src/README.md")
[ -n "$loop" ] || { echo "FAIL: README has no block after <!-- python run"; exit 1; }
port=$((30000 + $$ % 20000))
loop=${loop//PYTHONPATH=build\/python/PYTHONPATH=$build\/python}
loop=${loop//examples\//$src\/examples\/}
loop=${loop//MASTER_PORT=29500/MASTER_PORT=$port}
loop=${loop//\/usr\/bin\/python3/$python}
# Each rank's output to its own file (two processes writing one pipe may
# interleave their lines).
[[ $loop == *"allgather_gemm.py &"* ]] || { echo "FAIL: no 'allgather_gemm.py &' in the loop"; exit 1; }
loop=$(printf '%s\n' "$loop" | sed 's/allgather_gemm\.py &/allgather_gemm.py >out.$r 2>\&1 \&/')
echo "$loop"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agmm_pyreadme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && PYTHONDONTWRITEBYTECODE=1 timeout 120 bash -c "$loop")
for r in 0 1; do
    echo "--- rank $r:"; cat "$tmp/out.$r"
    grep -q "^rank $r of 2: .* ok$" "$tmp/out.$r" || { echo "FAIL: rank $r did not pass"; exit 1; }
done
echo PASS
