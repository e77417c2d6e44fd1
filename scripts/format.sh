#!/usr/bin/env bash
# clang-format over the tracked C sources and headers (*.c, *.h) of src/,
# include/, tools/, tests/, bench/, fuzz/ and examples/, with the
# repository's .clang-format. The style is clang-format 14's (Debian 12's
# clang-format package, installed by scripts/install-deps.sh); other
# versions break some lines differently.
#   scripts/format.sh                  format them in place
#   scripts/format.sh --check          change nothing: name each file that
#                                      clang-format would change, exit 1 if
#                                      any (CTest unit_sources_clang_formatted)
#   scripts/format.sh [--check] PATH.. only these files or folders
# --check exits 77 (a skip) under another clang-format version.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
    echo "format: clang-format not found (scripts/install-deps.sh installs it)" >&2
    exit 1
fi
version=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$check" = 1 ] && [ "$version" != 14 ]; then
    echo "format: $cf is version ${version:-unknown}; the check needs 14" >&2
    exit 77
fi
dirs=(src include tools tests bench fuzz examples)
[ $# -gt 0 ] && dirs=("$@")
# Tracked files only (a scratch file is not checked); outside a git checkout
# (an unpacked release), every file.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- "${dirs[@]}" | grep '\.[ch]$' || true)
else
    mapfile -t files < <(find "${dirs[@]}" -name '*.[ch]' | sort)
fi
if [ ${#files[@]} -eq 0 ]; then
    echo "format: no C files under ${dirs[*]}" >&2
    exit 1
fi
if [ "$check" = 0 ]; then
    "$cf" -i --style=file "${files[@]}"
    exit 0
fi
bad=0
for f in "${files[@]}"; do
    if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
        n=$("$cf" --style=file "$f" | diff "$f" - | grep -c '^>' || true)
        echo "format: $f is not clang-formatted ($n lines differ;" \
             "scripts/format.sh $f fixes it)"
        bad=$((bad + 1))
    fi
done
if [ "$bad" -gt 0 ]; then
    echo "format: $bad of ${#files[@]} files need scripts/format.sh" >&2
    exit 1
fi
echo "format: ${#files[@]} files clang-formatted"
