#!/usr/bin/env bash
# Each public header compiles on its own, first thing in a translation
# unit, as C11 and as C++ (extern "C", no C-only constructs), with warnings
# as errors: a program that includes only agmm.h (or only agmm_ext.h) needs
# nothing else.
# usage: tests/unit/public_headers.sh CC CXX INCLUDE_DIR
#   CXX may be empty (no C++ compiler found): the C++ half is then skipped
#   and the test exits 77 after the C half passes.
set -u
CC=$1 CXX=$2 INC=$3
TMP=$(mktemp -d "${TMPDIR:-/tmp}/public_headers.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
check() { # what command...
    local what=$1
    shift
    if "$@" 2>"$TMP/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $what"
        cat "$TMP/err"
    fi
}
for h in "$INC"/*.h; do
    name=$(basename "$h")
    printf '#include "%s"\n' "$name" >"$TMP/only.c"
    check "$name as C11" "$CC" -std=c11 -Wall -Wextra -Werror -pedantic \
        -fsyntax-only -I"$INC" "$TMP/only.c"
    if [ -n "$CXX" ]; then
        check "$name as C++" "$CXX" -x c++ -std=c++11 -Wall -Wextra -Werror \
            -pedantic -fsyntax-only -I"$INC" "$TMP/only.c"
    fi
done
echo "public_headers: $pass passed, $fail failed"
[ $fail -eq 0 ] || exit 1
[ -n "$CXX" ] || { echo "SKIP: public_headers: no C++ compiler for the C++ half"; exit 77; }
exit 0
