#!/usr/bin/env bash
# `agmm run --help` and `agmm model --help` must match the copies
# docs/cli.md quotes (the block after the "<!-- generated: agmm run --help"
# and "<!-- generated: agmm model --help" markers), except for what depends on
# the host: the resolved core defaults (ranks, usable cores) and the engine
# `auto` picks. The help text is generated from the option table
# (tools/agmm/cli/options.c); when a row changes, paste the new output into
# docs/cli.md (agmm run --help, agmm model --help on a 2-core host).
#
# usage: tests/e2e/cli_help_golden.sh AGMM_BINARY [DOCS_CLI_MD]
set -u

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 AGMM_BINARY [DOCS_CLI_MD]" >&2
    exit 2
fi
AGMM=$1
DOC=${2:-"$(dirname "$0")/../docs/cli.md"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cli_help_golden.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# The host-dependent parts, made equal.
normalize() {
    sed -E -e 's/default here: [0-9]+ for [0-9]+ ranks?/default here: N for N ranks/' \
        -e 's/^( +)ranks? (on|with) /\1ranks \2 /' \
        -e 's/with [0-9]+ comm on/with N comm on/' \
        -e 's/on [0-9]+ usable cores?\)/on N usable cores)/' \
        -e 's/\(here: (onednn|openblas)\)/(here: ENGINE)/'
}

# Each command's text against the fenced block right after its marker.
status=0
for cmd in run model; do
    awk -v marker="<!-- generated: agmm $cmd --help" '
         index($0, marker) == 1 { m = 1; next }
         m == 1 && /^```/ { m = 2; next }
         m == 2 && /^```/ { exit }
         m == 2 { print }' "$DOC" | normalize >"$TMP/doc"
    if [ ! -s "$TMP/doc" ]; then
        echo "FAIL: no generated 'agmm $cmd --help' block in $DOC"
        status=1
        continue
    fi
    if ! "$AGMM" "$cmd" --help >"$TMP/raw" 2>"$TMP/err" || [ -s "$TMP/err" ]; then
        echo "FAIL: agmm $cmd --help did not exit 0 with stdout only"
        status=1
        continue
    fi
    normalize <"$TMP/raw" >"$TMP/help"
    if ! diff -u "$TMP/doc" "$TMP/help"; then
        echo "FAIL: agmm $cmd --help differs from $DOC (above: - docs, + tool)"
        status=1
        continue
    fi
    echo "cli_help_golden: agmm $cmd --help matches $DOC"
done
exit $status
