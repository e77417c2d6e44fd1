#!/usr/bin/env bash
# `cmake --install` puts the Python package where docs/install.md says
# (<prefix>/lib/python3/dist-packages/agmm unless AGMM_INSTALL_PYTHONDIR
# says otherwise), and the installed package loads the installed
# libagmm.so, not the build tree's: also after the prefix is moved (the
# package names the library relative to itself), and with no
# LD_LIBRARY_PATH. Then a world of 2 joined processes runs a round with it.
# usage: install_python.sh BUILD_DIR CMAKE PYTHON
set -euo pipefail
build=$1 cmake=$2 python=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agmm_pyinstall.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cmake" --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log"; fail "cmake --install"; }
pydir=$(sed -n 's/^AGMM_INSTALL_PYTHONDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
[ -n "$pydir" ] || fail "AGMM_INSTALL_PYTHONDIR not in $build/CMakeCache.txt"
[ -f "$tmp/prefix/$pydir/agmm/__init__.py" ] || fail "no agmm package in $tmp/prefix/$pydir"
# Every Python file of the source package (agmm.torch's subpackages too).
srcpy=$(cd "$(dirname "$0")/../../python" && pwd)
[ -f "$srcpy/agmm/torch/__init__.py" ] || fail "no python/agmm/torch/__init__.py"
for f in $(cd "$srcpy" && find agmm -name '*.py' | sort); do
    [ -f "$tmp/prefix/$pydir/$f" ] || fail "$f not installed"
done
echo "installed: $pydir/agmm: $(ls "$tmp/prefix/$pydir/agmm" | tr '\n' ' ')"

# Moved: nothing in the package may point at the old prefix or the build.
mv "$tmp/prefix" "$tmp/moved"
prefix=$tmp/moved
unset LD_LIBRARY_PATH AGMM_LIBRARY
export PYTHONPATH=$prefix/$pydir PYTHONDONTWRITEBYTECODE=1
loaded=$("$python" -c 'import agmm; print(agmm.library_path())')
echo "agmm.library_path(): $loaded"
case $(readlink -f "$loaded") in
"$(readlink -f "$prefix")"/*) ;;
*) fail "the installed package loaded $loaded, not the prefix's library" ;;
esac

# One round on 2 joined ranks (AGMM_RANK/AGMM_WORLD_SIZE/AGMM_JOB), exact.
job=pyinstall-$$
cat >"$tmp/rank.py" <<'PY'
import numpy as np, agmm
with agmm.World.from_env(timeout=30) as world:
    m, k, n = [3, 2], 8, 5
    shards = [np.arange(r * 100, r * 100 + m[r] * k).reshape(m[r], k) % 7
              for r in range(2)]
    w = (np.arange(k * n).reshape(k, n) % 5).astype(np.float32)
    with world.plan(m_local=m, k=k, n=n, dtype="fp32") as plan:
        plan.set_weight(w)
        c = plan.run(shards[world.rank].astype(np.float32))
    assert np.array_equal(c, np.concatenate(shards).astype(np.float32) @ w)
    print("rank", world.rank, "ok")
PY
pids=()
for r in 0 1; do
    AGMM_RANK=$r AGMM_WORLD_SIZE=2 AGMM_JOB=$job timeout 60 "$python" "$tmp/rank.py" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
[ $rc = 0 ] || fail "a rank failed"
left=$(ls /dev/shm | grep -F ":$job:" || true)
[ -z "$left" ] || fail "left in /dev/shm: $left"
echo PASS
