#!/usr/bin/env bash
# The environment variables agmm reads are declared once (the parameter
# table, src/common/param.h), and documented where the table is:
#   1. `agmm --help-env` (the table, one line per variable after a header)
#      and docs/cli.md's list (the `| \`NAME\` |` rows of the table after
#      the "<!-- environment variables" marker) name the same variables:
#      one missing in either fails;
#   2. the C sources read the environment only through the table:
#      src/common/param.c is the one file of src/ and tools/ with getenv;
#   3. every variable the Python package reads (a quoted name on a line of
#      python/agmm/*.py that says environ or env.get, or next to one) is a
#      row of the table.
#
# usage: tests/e2e/cli_help_env.sh AGMM_BINARY [SOURCE_DIR]
set -u

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 AGMM_BINARY [SOURCE_DIR]" >&2
    exit 2
fi
AGMM=$1
SRC=${2:-"$(dirname "$0")/../.."}
DOC=$SRC/docs/cli.md
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cli_help_env.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
status=0

if ! "$AGMM" --help-env >"$TMP/raw" 2>"$TMP/err" || [ -s "$TMP/err" ]; then
    echo "FAIL: agmm --help-env did not exit 0 with stdout only"
    exit 1
fi
awk 'NR > 1 { print $1 }' "$TMP/raw" | sort >"$TMP/tool"
awk 'index($0, "<!-- environment variables") == 1 { m = 1; next }
     m && /^\| `/ { split($0, f, "`"); print f[2]; t = 1; next }
     m && t && !/^\|/ { exit }' "$DOC" | sort >"$TMP/doc"
if [ ! -s "$TMP/tool" ] || [ ! -s "$TMP/doc" ]; then
    echo "FAIL: no variables in agmm --help-env or in $DOC's list"
    status=1
elif [ -n "$(uniq -d "$TMP/tool")" ] || [ -n "$(uniq -d "$TMP/doc")" ]; then
    echo "FAIL: a variable named twice:" $(uniq -d "$TMP/tool") $(uniq -d "$TMP/doc")
    status=1
elif ! diff -u "$TMP/doc" "$TMP/tool"; then
    echo "FAIL: agmm --help-env and $DOC's list differ (above: - docs, + tool)"
    status=1
else
    echo "cli_help_env: agmm --help-env and $DOC name the same $(wc -l <"$TMP/tool") variables"
fi

readers=$(cd "$SRC" && grep -rl 'getenv' src tools | sort)
if [ "$readers" != "src/common/param.c" ]; then
    echo "FAIL: getenv outside src/common/param.c (read through common/param.h):"
    echo "$readers"
    status=1
fi

python3 - "$SRC/python/agmm" "$TMP/tool" <<'PY' || status=1
import glob, os, re, sys
table = set(open(sys.argv[2]).read().split())
missing = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.py"))):
    lines = open(path).read().split("\n")
    for i, line in enumerate(lines):
        if "environ" not in line and "env.get" not in line:
            continue
        for j in (i - 1, i, i + 1):
            if 0 <= j < len(lines):
                for name in re.findall(r"[\"']([A-Z][A-Z0-9_]{2,})[\"']",
                                       lines[j]):
                    if name not in table:
                        missing.append("%s:%d: %s" % (path, j + 1, name))
if missing:
    print("FAIL: the Python package reads variables the table lacks "
          "(add rows to src/common/param.h):")
    print("\n".join(sorted(set(missing))))
    sys.exit(1)
PY
exit $status
