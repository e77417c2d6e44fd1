#!/usr/bin/env bash
# The layer rules of docs/design.md ("Layers"), checked on src/:
#   1. no include cycle between folders (a folder is a directory under src/,
#      so transport/ and transport/shm/ are two; tsort finds the loops);
#   2. ops/ and trace/ never read a table (`w->ops->`, `ops->name`,
#      `ctl->`);
#   3. no source file over 500 lines.
# Prints the folder edges (with -v) and exits non-zero on a broken rule.
set -euo pipefail
cd "$(dirname "$0")/../src"
fail=0
edges=$(for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
    from=$(dirname "$f")
    grep -o '^#include "[a-z_/]*\.h"' "$f" | sed 's/#include "//; s/"$//' |
        while read -r inc; do
            to=$(dirname "$inc")
            if [ "$to" != . ] && [ "$to" != "$from" ]; then
                echo "$from $to"
            fi
        done
done | sort -u)
if [ "${1:-}" = -v ]; then echo "$edges"; fi
if ! echo "$edges" | tsort >/dev/null 2>/tmp/agmm_layers.$$; then
    echo "layers: include cycle between folders:" >&2
    cat /tmp/agmm_layers.$$ >&2
    fail=1
fi
rm -f /tmp/agmm_layers.$$
if grep -rn 'w->ops->\|ops->name\|ctl->' ops trace; then
    echo "layers: ops/ or trace/ reads a table (use agmm_tp_* / world/world.h)" >&2
    fail=1
fi
big=$(find . -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 500')
if [ -n "$big" ]; then
    echo "layers: files over 500 lines:" >&2
    echo "$big" >&2
    fail=1
fi
exit $fail
