#!/usr/bin/env python3
"""libagmm.so exports exactly the functions the public headers declare.

usage: exports.py LIBAGMM_SO CC HEADER...

The declared set is found independently of cmake/export_map.cmake (which
writes the linker's version script): each header is run through the C
preprocessor (comments and macros gone), and a declaration is an
identifier agmm_* followed by "(" at file scope, i.e. not the name of a
function-pointer typedef, which is followed by ")". The exported set is
`nm -D --defined-only` of the library. Fails, listing the difference, when
an internal function leaks out (exported, not declared) or a declared
function is missing (declared, not defined or not exported).
"""
import re
import subprocess
import sys


def declared(cc, header):
    src = subprocess.run([cc, "-E", "-P", "-x", "c", header],
                         check=True, capture_output=True, text=True).stdout
    names = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_])(agmm_[A-Za-z0-9_]*)\s*\(", src):
        names.add(m.group(1))
    return names


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            names.add(parts[2].split("@")[0])
    return names


def main():
    lib, cc, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
    want = set()
    for h in headers:
        want |= declared(cc, h)
    got = exported(lib)
    leaked = sorted(got - want)
    missing = sorted(want - got)
    print("%d functions declared in %s; %d symbols exported by %s"
          % (len(want), ", ".join(headers), len(got), lib))
    if leaked:
        print("exported but not declared in a public header (internal "
              "symbols leaking out):\n  " + "\n  ".join(leaked))
    if missing:
        print("declared but not exported (not defined, or the version "
              "script misses it):\n  " + "\n  ".join(missing))
    if len(want) < 10:
        print("the header parse found almost nothing: broken")
        return 1
    return 1 if leaked or missing else 0


if __name__ == "__main__":
    sys.exit(main())
