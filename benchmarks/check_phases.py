"""Where a `gpudoctor check`'s time goes: its phases, timed inside real processes, medians of several runs.

    python benchmarks/check_phases.py [--python INTERPRETER_WITH_TORCH] [--runs 9] [--root SOURCE_TREE ...]

Each run is a fresh interpreter that runs `gpudoctor check --python INTERPRETER` as entry.main does, with a
timer around each phase (the functions are wrapped from outside; gpudoctor's code is not changed):
imports (start of the interpreter's own code to the command's first step), collect (opening the host and
starting the Python inspection), load_rules, gather (waiting for the probes), derive, evaluate, render, and
total; run_checks holds registry (importing the probe modules, all but the --deep-only runtime probe's),
start_probes (the probes' threads started: the wall time includes the probes' own work, which holds the
GIL while the threads start), load_rules, gather, derive and evaluate; cpu is the process's CPU time (user
and system, all threads, from getrusage; not the inspection's child). --root names
source trees to compare side by side (default: the installed gpudoctor); each tree needs its .pyc files
written once (python -m compileall TREE/gpudoctor) or imports are compiled on every run. A benchmark, not
a test: it prints, never fails.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys

CHILD = r"""
import os, sys, time
START = time.perf_counter()
ROOT = os.environ.get("GD_ROOT")
if ROOT:  # this source tree, not the installed (or editable) gpudoctor
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, ROOT)
sys.argv = ["gpudoctor", "check", "--python", os.environ["GD_PYTHON"]]
spent = {}

def timed(module, name, key=None):
    function = getattr(module, name)
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key or name] = spent.get(key or name, 0.0) + time.perf_counter() - began
    setattr(module, name, wrapper)

from gpudoctor import entry
import gpudoctor.pipeline.check as pipeline, gpudoctor.collect as collect, gpudoctor.commands.check as command
import gpudoctor.probes as probes
spent["imports"] = time.perf_counter() - START
timed(command, "collect")
timed(pipeline, "run_checks")
timed(probes, "registry")
timed(collect.Collection, "__init__", "start_probes")
timed(pipeline, "load_rules")
timed(collect.Collection, "gather")
timed(pipeline, "derive")
timed(pipeline, "evaluate")
timed(command, "render_check", "render")
try:
    entry.main()
except SystemExit:
    pass
spent["total"] = time.perf_counter() - START
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)
spent["cpu"] = usage.ru_utime + usage.ru_stime  # all threads, the interpreter's start-up included
sys.stderr.write("PHASES " + repr({k: round(v * 1000, 2) for k, v in spent.items()}) + "\n")
"""

ORDER = (
    "imports", "collect", "run_checks", "registry", "start_probes", "load_rules", "gather", "derive",
    "evaluate", "render", "total", "cpu",
)  # fmt: skip


def phases(root: str, python: str) -> dict[str, float]:
    env = dict(os.environ, NO_COLOR="1", GD_PYTHON=python, GD_ROOT=root)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120)
    line = [x for x in proc.stderr.splitlines() if x.startswith("PHASES ")]
    if not line:
        raise SystemExit(f"no timings from {root or 'the installed gpudoctor'}:\n{proc.stderr}")
    return ast.literal_eval(line[-1][len("PHASES ") :])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter whose environment check judges")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--root", action="append", default=[], help="a gpudoctor source tree; repeatable")
    args = ap.parse_args()
    roots = args.root or [""]
    samples: dict[str, dict[str, list[float]]] = {root: {} for root in roots}
    for root in roots:
        phases(root, args.python)  # warm-up: the same page cache for every tree
    for _ in range(args.runs):  # interleaved, so that machine noise hits every tree alike
        for root in roots:
            for key, ms in phases(root, args.python).items():
                samples[root].setdefault(key, []).append(ms)
    names = {root: os.path.basename(root.rstrip("/")) or "installed" for root in roots}
    width = max(len(n) for n in [*names.values(), "median ms"]) + 1
    print(f"{'median ms':{width}}" + "".join(f"{k:>13}" for k in ORDER) + f"   ({args.runs} runs)")
    for root in roots:
        row = [statistics.median(samples[root].get(k, [0.0])) for k in ORDER]
        print(f"{names[root]:{width}}" + "".join(f"{v:13.1f}" for v in row))


if __name__ == "__main__":
    main()
