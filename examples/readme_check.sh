#!/usr/bin/env bash
# Checks README.md against examples/:
#   readme_check.sh snippet README EXAMPLE
#       the ```c block after README's "<!-- snippet: EXAMPLE-NAME" comment is
#       byte for byte the lines between EXAMPLE's readme-snippet markers;
#   readme_check.sh link README EXAMPLE INCLUDE_DIR LIBAGMM onednn|no-onednn
#                   [hwloc|no-hwloc]
#       the `cc ...` line of the ```sh block after "<!-- link line" builds
#       EXAMPLE (as prog.c) in a scratch directory holding include/ and
#       build/libagmm.a, and the program runs; in a build without oneDNN
#       `-ldnnl -lgomp` are dropped first, without hwloc `-lhwloc`, as the
#       README says.
set -euo pipefail
mode=$1 readme=$2 example=$3
# The lines of the first fenced block after the first line matching $1.
block_after() {
    awk -v pat="$1" 'found == 0 && index($0, pat) { found = 1; next }
        found == 1 && /^```/ { found = 2; next }
        found == 2 && /^```/ { exit }
        found == 2 { print }' "$readme"
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agmm_readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
case $mode in
snippet)
    name=$(basename "$example")
    block_after "<!-- snippet: examples/$name" >"$tmp/readme.c"
    sed -n '/readme-snippet: begin/,/readme-snippet: end/p' "$example" |
        sed '1d;$d' >"$tmp/example.c"
    [ -s "$tmp/example.c" ] || { echo "no marked region in $example"; exit 1; }
    [ -s "$tmp/readme.c" ] || { echo "README has no snippet of $name"; exit 1; }
    if ! diff -u "$tmp/example.c" "$tmp/readme.c"; then
        echo "FAIL: README.md's snippet differs from $example (copy it again)"
        exit 1
    fi
    echo "PASS: README.md's snippet = $name ($(wc -l <"$tmp/readme.c") lines)"
    ;;
link)
    include=$4 lib=$5 onednn=$6 hwloc=${7:-hwloc}
    line=$(block_after "<!-- link line" | grep -m1 '^cc ' || true)
    [ -n "$line" ] || { echo "README has no 'cc ...' line after <!-- link line"; exit 1; }
    [ "$onednn" = onednn ] || line=${line/ -ldnnl -lgomp/}
    [ "$hwloc" = hwloc ] || line=${line/ -lhwloc/}
    mkdir -p "$tmp/build"
    ln -s "$include" "$tmp/include"
    ln -s "$lib" "$tmp/build/libagmm.a"
    cp "$example" "$tmp/prog.c"
    echo "+ $line"
    (cd "$tmp" && eval "$line")
    [ -x "$tmp/prog" ] || { echo "FAIL: the line made no ./prog"; exit 1; }
    "$tmp/prog"
    echo "PASS: README's link line builds and runs the example"
    ;;
*) echo "usage: $0 snippet|link ..."; exit 2 ;;
esac
