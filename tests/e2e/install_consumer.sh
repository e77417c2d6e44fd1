#!/usr/bin/env bash
# `cmake --install` gives a tree a program can be built against, the three
# ways docs/install.md shows, and the installed tool runs.
# usage: install_consumer.sh BUILD_DIR EXAMPLE_C CC CMAKE [FLAG...]
#   FLAGs go on every compile and link of a consumer (a sanitizer build's
#   -fsanitize=...: its libagmm needs the sanitizer's runtime);
#   installs BUILD_DIR into a scratch prefix, then builds EXAMPLE_C (the
#   README's example: it checks its own C and exits 0 only when right)
#   (a) with `pkg-config --cflags --libs agmm` (libagmm.so; ldd must
#       resolve it from the prefix), and with `pkg-config --static`
#       (libagmm.a; no libagmm.so needed),
#   (b) with a CMake project: find_package(agmm REQUIRED), one program on
#       agmm::agmm and one on agmm::agmm_static;
#   runs every program, then the installed `agmm --version` and a tiny
#   `agmm run`. The prefix is removed at the end.
set -euo pipefail
build=$1 example=$2 cc=$3 cmake=$4
shift 4
flags=("$@")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agmm_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
step() { echo "== $*"; }
fail() { echo "FAIL: $*"; exit 1; }

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log"; fail "cmake --install"; }
for f in include/agmm.h include/agmm_ext.h bin/agmm; do
    [ -e "$prefix/$f" ] || fail "$f not installed"
done
pc=$(find "$prefix" -name agmm.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "agmm.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
for f in libagmm.a libagmm.so; do
    [ -e "$libdir/$f" ] || fail "$libdir/$f not installed"
done
soname=$(readelf -d "$libdir/libagmm.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ -n "$soname" ] && [ -e "$libdir/$soname" ] || fail "libagmm.so has no SONAME file ($soname)"
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"

cp "$example" "$tmp/prog.c"
export PKG_CONFIG_PATH=$libdir/pkgconfig
step "pkg-config, shared: $cc prog.c \$(pkg-config --cflags --libs agmm)"
pkg-config --modversion agmm
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror ${flags[@]+"${flags[@]}"} "$tmp/prog.c" \
    $(pkg-config --cflags --libs agmm) -o "$tmp/prog_pc_shared"
# The program finds libagmm.so through LD_LIBRARY_PATH (a prefix outside
# the loader's paths), and ldd resolves it there, not from the build tree.
resolved=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/prog_pc_shared" | awk '$1 ~ /^libagmm/ {print $3}')
echo "ldd: libagmm => $resolved"
[ "$(readlink -f "$resolved")" = "$(readlink -f "$libdir/$soname")" ] ||
    fail "libagmm resolved to '$resolved', not $libdir/$soname"
LD_LIBRARY_PATH=$libdir "$tmp/prog_pc_shared"

step "pkg-config, static: libagmm.a + \$(pkg-config --static --libs agmm)"
# -lagmm would pick the .so (both are installed): name the archive.
libs=$(pkg-config --static --libs agmm)
libs=${libs/-lagmm/-l:libagmm.a}
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror ${flags[@]+"${flags[@]}"} "$tmp/prog.c" \
    $(pkg-config --cflags agmm) $libs -o "$tmp/prog_pc_static"
if ldd "$tmp/prog_pc_static" | grep -q libagmm; then
    fail "the static link needs libagmm.so"
fi
"$tmp/prog_pc_static"

step "find_package(agmm): agmm::agmm and agmm::agmm_static"
mkdir -p "$tmp/consumer"
cat >"$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(agmm_consumer LANGUAGES C)
find_package(agmm 0.1 REQUIRED)
add_executable(prog_cmake_shared prog.c)
target_link_libraries(prog_cmake_shared PRIVATE agmm::agmm)
add_executable(prog_cmake_static prog.c)
target_link_libraries(prog_cmake_static PRIVATE agmm::agmm_static)
CM
cp "$example" "$tmp/consumer/prog.c"
CC=$cc "$cmake" -S "$tmp/consumer" -B "$tmp/consumer/build" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="${flags[*]+"${flags[*]}"}" >"$tmp/cm.log" ||
    { cat "$tmp/cm.log"; fail "configure the find_package consumer"; }
"$cmake" --build "$tmp/consumer/build" >"$tmp/cmb.log" ||
    { cat "$tmp/cmb.log"; fail "build the find_package consumer"; }
# CMake sets the build RPATH to the prefix's libdir: no LD_LIBRARY_PATH.
resolved=$(ldd "$tmp/consumer/build/prog_cmake_shared" | awk '$1 ~ /^libagmm/ {print $3}')
echo "ldd: libagmm => $resolved"
[ "$(readlink -f "$resolved")" = "$(readlink -f "$libdir/$soname")" ] ||
    fail "agmm::agmm: libagmm resolved to '$resolved', not $libdir/$soname"
"$tmp/consumer/build/prog_cmake_shared"
if ldd "$tmp/consumer/build/prog_cmake_static" | grep -q libagmm; then
    fail "agmm::agmm_static links libagmm.so"
fi
"$tmp/consumer/build/prog_cmake_static"

step "the installed tool"
if readelf -d "$prefix/bin/agmm" | grep -E 'RPATH|RUNPATH'; then
    fail "the installed agmm has an RPATH (into the build tree?)"
fi
"$prefix/bin/agmm" --version
"$prefix/bin/agmm" run --ranks 2 --m-local 64 --k 64 --n 64 --rounds 1 \
    --timeout 30 | tee "$tmp/run.log"
grep -q PASS "$tmp/run.log" || fail "the installed agmm run did not PASS"
echo "PASS: the installed tree builds consumers (pkg-config shared and static, find_package shared and static) and its tool runs"
