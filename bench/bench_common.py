"""What the bench scripts share (bench/paths.py, bench/int8.py,
bench/layer_ops.py, ...): the command line `SCRIPT [--build DIR] [--sets N]
[--mpirun CMD] -- ARGS...`, an option's value, running an `agmm bench
--json` or peer command, and the sets' medians and their spread.
Python standard library only."""
import json
import os
import shlex
import statistics
import subprocess
import sys

MPIRUN = ("mpirun --allow-run-as-root --oversubscribe "
          "--mca btl_vader_single_copy_mechanism none")


def value(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def drop(args, names):
    """args without the options `names` (each with its value) and --json."""
    out, i = [], 0
    while i < len(args):
        if args[i] in names:
            i += 2
        elif args[i] == "--json":
            i += 1
        else:
            out.append(args[i])
            i += 1
    return out


def spread(v, fmt):
    """'median [min-max]' of v, each through the format string fmt."""
    return (f"{fmt.format(statistics.median(v))} "
            f"[{fmt.format(min(v))}-{fmt.format(max(v))}]")


def medians_ms(results, mode=None):
    """Each set's median round in ms, from its JSON result: `agmm bench
    --json`'s mode `mode`, or (mode None) a peer's "round"."""
    if mode:
        return [r["modes"][mode]["median_us"] / 1e3 for r in results]
    return [r["round"]["median_us"] / 1e3 for r in results]


def parse(argv, doc):
    """The script's head options and the bench arguments after "--": a
    dict with build, sets, mpirun (a list), agmm, peer and args; None
    (after printing the usage line of doc) when there is no "--"."""
    if "--" not in argv:
        print(doc.strip().splitlines()[3].strip(), file=sys.stderr)
        return None
    cut = argv.index("--")
    head, args = argv[:cut], argv[cut + 1:]
    build = value(head, "--build", "build")
    return {
        "build": build,
        "sets": int(value(head, "--sets", "3")),
        "mpirun": shlex.split(value(head, "--mpirun", MPIRUN)),
        "agmm": os.path.join(build, "agmm"),
        "peer": os.path.join(build, "bench", "agmm_ag_peer"),
        "args": args,
    }


def run_json(cmd, who, exit_on_failure=True):
    """cmd's stdout as JSON; a failed run prints the command and the end of
    its stderr, then exits 1 (or, exit_on_failure False, raises
    subprocess.CalledProcessError for the caller to judge)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0 and not exit_on_failure:
        raise subprocess.CalledProcessError(p.returncode, cmd, p.stdout,
                                            p.stderr)
    if p.returncode != 0:
        print(f"{who}: exit {p.returncode}: {shlex.join(cmd)}",
              file=sys.stderr)
        print(p.stderr.strip()[-4000:], file=sys.stderr)
        raise SystemExit(1)
    return json.loads(p.stdout)


def agmm_path(build, agmm):
    """The agmm binary: AGMM when given (--agmm), else BUILD/agmm."""
    return agmm if agmm else os.path.join(build, "agmm")


# The machine description's scalars `agmm model --json` prints under
# "machine" and takes back as options (--call-us, --copy-gbs, ...): a time
# per event (_us) or a bandwidth (_gbs).
MACHINE_KEYS = ("call_us", "copy_gbs", "reduce_gbs", "convert_gbs", "msg_us",
                "round_us", "peer_us", "tile_us", "dram_gbs")


def machine_options(machine, rates, slow=1.0):
    """`agmm model` options describing a measured machine (its "machine"
    object and "rates" list) with every thread `slow` times slower: GEMM
    rates and bandwidths divided by it, per-event times multiplied. Keys
    the machine object lacks are left to the model's defaults."""
    out = ["--gemm-rates",
           ",".join(f"{int(r)}:{g / slow:.6g}" for r, g in rates)]
    for key in MACHINE_KEYS:
        v = machine.get(key)
        # convert_gbs 0: nothing converted (agmm refuses the option then)
        if isinstance(v, (int, float)) and (v or key != "convert_gbs"):
            v = v * slow if key.endswith("_us") else v / slow
            out += ["--" + key.replace("_", "-"), f"{v:.6g}"]
    return out
