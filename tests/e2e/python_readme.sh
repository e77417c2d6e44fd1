#!/usr/bin/env bash
# README.md's "From Python": its snippet is byte for byte the marked region
# of examples/allgather_gemm.py, and its agmm launch command, run as
# printed (with this build's build/agmm and build/python, this checkout's
# examples/ and the test's interpreter), starts two ranks that each check
# their result and print "[rank R] rank R of 2: ... ok" (a failed check
# prints a traceback instead).
# usage: python_readme.sh SOURCE_DIR BUILD_DIR PYTHON
set -euo pipefail
src=$1 build=$2 python=$3
bash "$src/examples/readme_check.sh" snippet "$src/README.md" "$src/examples/allgather_gemm.py"
loop=$(awk 'found == 0 && index($0, "<!-- python run") { found = 1; next }
    found == 1 && /^```/ { found = 2; next }
    found == 2 && /^```/ { exit }
    found == 2 { print }' "$src/README.md")
[ -n "$loop" ] || { echo "FAIL: README has no block after <!-- python run"; exit 1; }
loop=${loop//PYTHONPATH=build\/python/PYTHONPATH=$build\/python}
loop=${loop//build\/agmm /$build\/agmm }
loop=${loop//examples\//$src\/examples\/}
loop=${loop//\/usr\/bin\/python3/$python}
[[ $loop == *"agmm launch -n 2 --tag-output"* ]] || { echo "FAIL: no 'agmm launch -n 2 --tag-output' in the command"; exit 1; }
echo "$loop"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agmm_pyreadme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rc=0
(cd "$tmp" && PYTHONDONTWRITEBYTECODE=1 timeout 120 bash -c "$loop" >out 2>&1) || rc=$?
cat "$tmp/out"
[ $rc = 0 ] || { echo "FAIL: the command exited $rc"; exit 1; }
for r in 0 1; do
    grep -q "^\[rank $r\] rank $r of 2: .* ok$" "$tmp/out" || { echo "FAIL: rank $r did not pass"; exit 1; }
done
echo PASS
