#!/usr/bin/env python3
"""Run every agmm command shown in README.md and docs/*.md, so the docs
cannot drift from the tool.

usage: docs_commands.py AGMM SOURCE_DIR [MPIRUN]   (MPIRUN: "" = no MPI build)

A command is a line (joined over trailing backslashes) of a fenced code
block whose first word, after VAR=value assignments, is `agmm`,
`build/agmm` or `mpirun` with an `agmm` later on; a line holding several
commands joined by `&&` gives each agmm part (README's first command ends
in `build/agmm run`). Output shown in a block (`agmm run: 2 ranks ...`,
`agmm: --m-local: ...`) is not a command: the word after `agmm` must be
`run`, `bench`, `model`, `--help`, `-h` or `--version`. Scripts the docs show
(tests/e2e/*.sh, bench/*.sh, scripts/*.sh) are tests or measurements
themselves and are not run here. docs/history/ is not read, on purpose
(the glob below takes docs/*.md only): it is the dated record of what was
measured, whose commands ran on the tool of their day and are kept as they
ran; docs/performance.md has the current figures with runnable commands.

Every command must exit 0. A refused command (exit 2) or any other failure
fails this test: fix the doc or the tool.

The shrink rule (the docs show real shapes; this runs them on small ones,
on a 2-core host, in well under a minute):
  - `--m-local` values capped at 64 (given if absent: `--m-local 64`);
  - `--m-local-per-round` values capped at 64 too;
  - `--k`, `--n` capped at 256 (each value of a list; given if absent);
  - `--rounds` capped at 2 and `--warmup` set to 0 (given if absent);
  - bench only: `--oversubscribe` added (bench refuses more threads than
    cores, and the docs' examples are written for larger hosts; `run`
    warns instead and gets nothing added);
  - mpirun: `-np` capped at 2, `--hostfile FILE` dropped (this host only),
    `--map-by ppr:1:node:pe=N` becomes `ppr:NP:node:pe=1` (all ranks on
    this host, one core each), and this host's flags added
    (`--allow-run-as-root --oversubscribe --mca
    btl_vader_single_copy_mechanism none`); skipped without an MPI build;
  - `--help`/`--version` commands run as shown;
  - `agmm model` commands run as shown: they run no ranks (a described
    machine runs nothing; one measured here takes --measure-budget, 1 s);
  - placeholders `[options]` and `...` are dropped;
  - trace files are written in a scratch directory.
Commands not run, each with its reason, are in SKIP below (matched on the
command text; a SKIP entry that matches nothing fails the test, so the
list cannot go stale).
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

SKIP = {
    # cli.md's synopsis: usage forms with `|` alternatives and prose, not
    # commands. `agmm run --help` is run from README; tests/e2e/
    # cli_help_golden.sh compares the help text with cli.md.
    "agmm run   [options]   run one": "usage synopsis, not a command",
    "agmm bench [options]   time": "usage synopsis, not a command",
    "agmm --help | -h | --version": "usage synopsis, not a command",
    "agmm run --help | agmm bench --help": "usage synopsis, not a command",
    "agmm model [options]   predict": "usage synopsis, not a command",
    "agmm model [problem options]": "usage synopsis (cli.md's agmm model)",
    # reliability.md's fault hook: R, N and the mode are placeholders;
    # tests/e2e/faults.sh runs every mode (ctest e2e_faults_end_run_naming_rank).
    'AGMM_FAULT="rank=R,after_puts=N,mode=hang|exit|kill|error"':
        "a template (R, N, mode are placeholders); faults.sh runs each mode",
    # mpi.md's NUMA placement: needs 4 NUMA nodes of 16 cores.
    "mpirun -np 4 --map-by ppr:1:numa:pe=16":
        "needs a host of 4 NUMA nodes x 16 cores",
}

# Commands that follow the docs as they should be but that this branch's
# tool alone refuses (exit 2) on a 2-core host: they pass once issue 14's
# tool changes (tools/agmm, branch tool14) are merged: `run` warns instead
# of refusing when threads exceed the cores, and an `--m-local` list sets
# `--ranks`. They are NOT skipped: the test fails until then, by design.
#   docs/cli.md   agmm run --ranks 4 --m-local 100,0,37,256 ...   (4 threads, 2 cores)
#   docs/mpi.md   mpirun ... agmm run --comm-cores 1 --gemm-cores 7 (cores)
#   README.md     build/agmm run --m-local 1000,777,1 ...          (list sets ranks)

CAP_ROWS, CAP_KN, CAP_ROUNDS = 64, 256, 2
MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe",
             "--mca", "btl_vader_single_copy_mechanism", "none"]
SUBCOMMANDS = ("run", "bench", "model", "--help", "-h", "--version")


def commands(src):
    """(file:line, text) of every command in the docs' code blocks."""
    # docs/*.md, not docs/history/ (a record: see the docstring).
    files = [os.path.join(src, "README.md")] + sorted(
        glob.glob(os.path.join(src, "docs", "*.md")))
    out = []
    for path in files:
        rel = os.path.relpath(path, src)
        in_block, pending, start = False, "", 0
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            s = line.strip()
            if s.startswith("```"):
                in_block, pending = not in_block, ""
                continue
            if not in_block:
                continue
            if not pending:
                start = n
            s = (pending + " " + s).strip() if pending else s
            if s.endswith("\\"):
                pending = s[:-1].strip()
                continue
            pending = ""
            for part in s.split("&&"):
                part = part.strip()
                if is_command(part):
                    out.append((f"{rel}:{start}", part))
    return out


def words_of(text):
    """Words before a comment (a `#` starting a word)."""
    return re.split(r"\s#", " " + text, maxsplit=1)[0].split()


def is_command(text):
    w = words_of(text)
    while w and re.match(r"^[A-Z_][A-Z0-9_]*=", w[0]):
        w = w[1:]
    if not w:
        return False
    if w[0] == "mpirun":
        w = w[next((i for i, x in enumerate(w) if x in ("agmm", "build/agmm")),
                   len(w)):]
    return len(w) >= 2 and w[0] in ("agmm", "build/agmm") and w[1] in SUBCOMMANDS


def shrink(text, agmm, mpirun):
    """argv and env of the command, shrunk by the rule above."""
    w = shlex.split(" ".join(words_of(text)))
    env = {}
    while re.match(r"^[A-Z_][A-Z0-9_]*=", w[0]):
        k, v = w.pop(0).split("=", 1)
        env[k] = v
    pre = []
    if w[0] == "mpirun":
        i = next(i for i, x in enumerate(w) if x in ("agmm", "build/agmm"))
        launcher, w = w[1:i], w[i:]
        np_ = 2
        pre = [mpirun] + MPI_FLAGS
        j = 0
        while j < len(launcher):
            a = launcher[j]
            if a == "-np":
                np_ = min(int(launcher[j + 1]), 2)
                pre += ["-np", str(np_)]
                j += 2
            elif a == "--hostfile":
                j += 2
            elif a == "--map-by" and launcher[j + 1].startswith("ppr:1:node:pe="):
                pre += ["--map-by", f"ppr:{np_}:node:pe=1"]
                j += 2
            else:
                pre.append(a)
                j += 1
    cmd, args = w[1], [a for a in w[2:] if a not in ("[options]", "...")]
    argv = pre + [agmm, cmd]
    if cmd == "model" or any(a in ("--help", "-h", "--version")
                             for a in [cmd] + args):
        return argv + args, env
    out, seen, i = [], set(), 0
    while i < len(args):
        a, v = args[i], args[i + 1] if i + 1 < len(args) else None
        if "=" in a and a.startswith("--"):
            a, v = a.split("=", 1)
            args[i + 1:i + 1] = [v]
        seen.add(a)
        if a == "--m-local":
            v = ",".join(str(min(int(x), CAP_ROWS)) for x in v.split(","))
        elif a == "--m-local-per-round":
            v = ",".join(str(min(int(x), CAP_ROWS)) for x in v.split(","))
        elif a in ("--k", "--n"):  # --n may be a list (several weights)
            v = ",".join(str(min(int(x), CAP_KN)) for x in v.split(","))
        elif a == "--rounds":
            v = str(min(int(v), CAP_ROUNDS))
        elif a == "--warmup":
            v = "0"
        elif not a.startswith("--") or a in ("--json", "--oversubscribe",
                                             "--no-check") or v is None \
                or v.startswith("-"):
            out.append(a)  # a flag without a value
            i += 1
            continue
        out += [a, v]
        i += 2
    for opt, val in (("--m-local", str(CAP_ROWS)), ("--k", str(CAP_KN)),
                     ("--n", str(CAP_KN)), ("--rounds", str(CAP_ROUNDS)),
                     ("--warmup", "0")):
        if opt not in seen:
            out += [opt, val]
    if cmd == "bench" and "--oversubscribe" not in seen:
        out.append("--oversubscribe")
    return argv + out, env


def main():
    agmm, src = os.path.abspath(sys.argv[1]), sys.argv[2]
    mpirun = sys.argv[3] if len(sys.argv) > 3 else ""
    cmds = commands(src)
    used, failed, ran, skipped = set(), [], 0, []
    t_all = time.time()
    with tempfile.TemporaryDirectory(prefix="agmm_docs_") as tmp:
        for where, text in cmds:
            key = next((k for k in SKIP if k in text), None)
            if key:
                used.add(key)
                skipped.append((where, text, SKIP[key]))
                continue
            if text.split()[0] == "mpirun" and not mpirun:
                skipped.append((where, text, "agmm built without MPI"))
                continue
            argv, env = shrink(text, agmm, mpirun)
            t0 = time.time()
            try:
                p = subprocess.run(argv, cwd=tmp, env={**os.environ, **env},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=60)
                rc, log = p.returncode, p.stdout
            except subprocess.TimeoutExpired as e:
                rc, log = "timeout", (e.stdout or b"").decode(errors="replace")
            ran += 1
            status = "ok" if rc == 0 else f"FAIL (exit {rc})"
            print(f"{status:14} {time.time() - t0:5.1f} s  {where}: {text}")
            print(f"{'':22}ran: {' '.join(shlex.quote(a) for a in argv)}")
            if rc != 0:
                failed.append(where)
                print("\n".join("    | " + l for l in log.splitlines()[-15:]))
    for where, text, why in skipped:
        print(f"skipped {where}: {text}\n    ({why})")
    stale = [k for k in SKIP if k not in used]
    for k in stale:
        print(f"FAIL: SKIP entry matches no command in the docs: {k!r}")
    print(f"{ran} commands run, {len(skipped)} skipped, {len(failed)} failed, "
          f"{time.time() - t_all:.1f} s")
    if ran == 0 or failed or stale:
        print("FAIL: " + ", ".join(failed) if failed else "FAIL")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
