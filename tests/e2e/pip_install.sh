#!/usr/bin/env bash
# `python -m pip install --no-build-isolation <tree>` (setup.py,
# pyproject.toml; docs/install.md "pip install"), with the system's pip
# and setuptools and no index, into a venv made with
# --system-site-packages: it builds libagmm.so with CMake and installs it
# inside the package. Then, from a directory outside the tree, with no
# PYTHONPATH or AGMM_LIBRARY: `import agmm` loads the package's own
# library, and two ranks (agmm.launch.spawn) run an all-gather + GEMM round
# whose C is exact. `pip wheel` gives agmm-<v>-py3-none-<platform>.whl
# holding the library, `pip uninstall` removes every file, and neither pip
# command leaves setuptools' files (build/lib*, build/bdist.*, egg-info) in
# the tree.
#
# The CMake build is kept in the scratch directory (AGMM_PIP_BUILD_DIR), so
# the wheel reuses the install's; it has BUILD_DIR's oneDNN, MPI and hwloc
# settings and compiler (one build of libagmm.so only, ~40 s on 2 cores),
# then $AGMM_CMAKE_ARGS.
# usage: pip_install.sh SOURCE_DIR BUILD_DIR CMAKE PYTHON
set -euo pipefail
src=$1 build=$2 cmake=$3 python=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agmm_pip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset PYTHONPATH AGMM_LIBRARY LD_LIBRARY_PATH
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
args=""
for opt in AGMM_ONEDNN AGMM_MPI AGMM_HWLOC CMAKE_C_COMPILER; do
    v=$(cache $opt)
    [ -n "$v" ] || fail "$opt not in $build/CMakeCache.txt"
    args+=" -D$opt=$v"
done
export AGMM_CMAKE_ARGS="$args ${AGMM_CMAKE_ARGS:-}" CMAKE=$cmake
export AGMM_PIP_BUILD_DIR=$tmp/pipbuild
echo "AGMM_CMAKE_ARGS=$AGMM_CMAKE_ARGS"

# What setuptools would leave in the tree by default; none may appear.
leftovers() {
    ls -d "$src"/build/lib* "$src"/build/bdist.* "$src"/build/temp.* \
        "$src"/*.egg-info "$src"/python/*.egg-info "$src"/dist 2>/dev/null || true
}
before=$(leftovers)

"$python" -m venv --system-site-packages "$tmp/venv" || fail "python -m venv (python3-venv)"
py=$tmp/venv/bin/python
"$py" -m pip --version
start=$SECONDS
(cd "$tmp" && "$py" -m pip install --no-build-isolation --no-index "$src") \
    >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "pip install"; }
tail -2 "$tmp/install.log"
echo "pip install: $((SECONDS - start)) s"

# From outside the tree: the venv's package and the library inside it.
mkdir "$tmp/run"
cd "$tmp/run"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
loaded=$("$py" -c 'import agmm; print(agmm.__file__); print(agmm.library_path())')
echo "$loaded"
[ "$(sed -n 1p <<<"$loaded")" = "$site/agmm/__init__.py" ] || fail "agmm imported from elsewhere than $site"
[ "$(sed -n 2p <<<"$loaded")" = "$site/agmm/libagmm.so.0.1" ] || fail "the library loaded is not the package's"

cat >"$tmp/run/two_ranks.py" <<'PY'
import os, sys
import numpy as np
import agmm, agmm.launch
if "AGMM_RANK" not in os.environ:
    sys.exit(agmm.launch.spawn(2, [sys.executable, __file__], timeout_s=120))
with agmm.World.from_env(timeout=30) as world:
    m, k, n = [3, 2], 8, 5
    shards = [np.arange(r * 100, r * 100 + m[r] * k).reshape(m[r], k) % 7
              for r in range(2)]
    w = (np.arange(k * n).reshape(k, n) % 5).astype(np.float32)
    with world.plan(m_local=m, k=k, n=n, dtype="fp32") as plan:
        plan.set_weight(w)
        c = plan.run(shards[world.rank].astype(np.float32))
    assert np.array_equal(c, np.concatenate(shards).astype(np.float32) @ w)
    print("rank %d of %d ok (%s)" % (world.rank, world.size, agmm.library_path()))
PY
"$py" two_ranks.py >"$tmp/ranks.log" 2>&1 || { cat "$tmp/ranks.log"; fail "the two ranks"; }
cat "$tmp/ranks.log"
for r in 0 1; do
    # (the two ranks share stdout: their lines may interleave)
    grep -qF "rank $r of 2 ok ($site/agmm/libagmm.so.0.1)" "$tmp/ranks.log" || fail "rank $r did not pass"
done

# pip wheel: platform-tagged, the library inside, not purelib.
(cd "$tmp" && "$py" -m pip wheel --no-build-isolation --no-index --no-deps -w "$tmp/wheels" "$src") \
    >"$tmp/wheel.log" 2>&1 || { cat "$tmp/wheel.log"; fail "pip wheel"; }
plat=$("$py" -c 'import sysconfig; print(sysconfig.get_platform().replace("-", "_").replace(".", "_"))')
version=$(sed -n 's/^project(agmm VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
whl=$tmp/wheels/agmm-$version-py3-none-$plat.whl
ls "$tmp/wheels"
[ -f "$whl" ] || fail "no $(basename "$whl")"
"$py" - "$whl" "$src/python" <<'PY' || fail "the wheel's contents"
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
# Every Python file of the source package (agmm.torch's subpackages too).
ours = sorted(os.path.relpath(os.path.join(d, f), sys.argv[2])
              for d, _, fs in os.walk(os.path.join(sys.argv[2], "agmm"))
              for f in fs if f.endswith(".py"))
assert "agmm/torch/__init__.py" in ours, ours
for need in ours + ["agmm/_libpath.py", "agmm/libagmm.so.0.1"]:
    assert need in names, "%s not in the wheel" % need
assert z.read("agmm/libagmm.so.0.1")[:4] == b"\x7fELF", "not an ELF library"
wheel = z.read([n for n in names if n.endswith(".dist-info/WHEEL")][0]).decode()
assert "Root-Is-Purelib: false" in wheel, wheel
print("wheel: %d files, libagmm.so.0.1 %d bytes" % (
    len(names), z.getinfo("agmm/libagmm.so.0.1").file_size))
PY

"$py" -m pip uninstall -y agmm >"$tmp/uninstall.log" 2>&1 || { cat "$tmp/uninstall.log"; fail "pip uninstall"; }
[ ! -e "$site/agmm" ] || fail "pip uninstall left $(ls "$site/agmm")"

after=$(leftovers)
[ "$before" = "$after" ] || fail "pip left in the tree: $after"
echo PASS
