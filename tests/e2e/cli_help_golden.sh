#!/usr/bin/env bash
# `agmm run --help` must match the copy docs/cli.md quotes (the block after
# the "<!-- generated: agmm run --help" marker), except for what depends on
# the host: the resolved core defaults (ranks, usable cores) and the engine
# `auto` picks. The help text is generated from the option table
# (tools/agmm/options.c); when a row changes, paste the new output into
# docs/cli.md.
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

# The fenced block right after the marker.
awk '/<!-- generated: agmm run --help/ { m = 1; next }
     m == 1 && /^```/ { m = 2; next }
     m == 2 && /^```/ { exit }
     m == 2 { print }' "$DOC" | normalize >"$TMP/doc"
if [ ! -s "$TMP/doc" ]; then
    echo "FAIL: no generated 'agmm run --help' block in $DOC"
    exit 1
fi
if ! "$AGMM" run --help >"$TMP/raw" 2>"$TMP/err" || [ -s "$TMP/err" ]; then
    echo "FAIL: agmm run --help did not exit 0 with stdout only"
    exit 1
fi
normalize <"$TMP/raw" >"$TMP/help"
if ! diff -u "$TMP/doc" "$TMP/help"; then
    echo "FAIL: agmm run --help differs from $DOC (above: - docs, + tool)"
    exit 1
fi
echo "cli_help_golden: agmm run --help matches $DOC"
