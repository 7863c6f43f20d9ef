"""Times `gpudoctor explain MESSAGE` and what `gpudoctor run -- CMD` adds before the command starts.

    python benchmarks/explain_run_bench.py [--runs 15] [--tree DIR]...

explain: a message no rule explains (answered from the error texts alone) and one that names a cause
(judged on the H200 capture in tests/fixtures, so that the host does not matter); both real messages of
tests/explain/corpus. run: `run -- python3 -c pass` against `python3 -c pass` itself; "before the child
starts" is the time from gpudoctor's start to the child's first instruction, measured by the child (it
prints time.time() at once; the parent takes the time just before it spawns gpudoctor). --tree
(repeatable) runs the gpudoctor of each checkout named, interleaved with the others: the main checkout and
this one give a before and an after figure measured alike. A benchmark, not a test: it prints, never
fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from timing import medians

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "tests" / "fixtures" / "h200-driver580-snapshot"
NO_CAUSE = "ModuleNotFoundError: No module named 'foo'"  # no GPU cause: answered from the texts alone
CAUSE = "RuntimeError: CUDA error: an illegal memory access was encountered"  # corpus: first_set.yaml


def child_start_delays(argvs: dict[str, tuple[list[str], dict]], runs: int) -> dict[str, tuple[float, float]]:
    """Median and least seconds from spawning each argv (ending in a python3 -c that prints time.time())
    to that print, the commands interleaved."""
    delays: dict[str, list[float]] = {name: [] for name in argvs}
    for _ in range(runs):
        for name, (argv, env) in argvs.items():
            start = time.time()
            out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False).stdout
            delays[name].append(float(out.strip().splitlines()[-1]) - start)
    return {name: (statistics.median(d), min(d)) for name, d in delays.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--tree", type=Path, action="append", help="a checkout whose gpudoctor runs (repeatable)")
    args = ap.parse_args()
    trees = args.tree or [ROOT]
    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    probe = [sys.executable, "-c", "import time; print(time.time())"]
    delays = {"bare": (probe, dict(os.environ, NO_COLOR="1"))}
    for n, tree in enumerate(trees):
        env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(tree))
        # timing.wall passes os.environ: each tree's gpudoctor is named by its path on sys.path instead
        gd = [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(tree)!r}); "
            "from gpudoctor.entry import console; sys.argv[0] = 'gpudoctor'; console()",
        ]
        print(f"[{n}] {tree}")
        commands[f"[{n}] gpudoctor --version"] = gd + ["--version"]
        commands[f"[{n}] explain (no cause)"] = gd + ["explain", NO_CAUSE]
        commands[f"[{n}] explain (a cause, --snapshot)"] = gd + [
            "explain",
            CAUSE,
            "--snapshot",
            str(SNAPSHOT),
        ]
        delays[f"[{n}] run -- CMD"] = (gd + ["run", "--", *probe], env)
    medians(commands, args.runs)
    found = child_start_delays(delays, args.runs)
    print(f"\nthe child of run -- CMD starts after ({args.runs} runs, interleaved; median, least):")
    bare = found["bare"]
    for name, (median, least) in found.items():
        extra = (
            f"   gpudoctor adds {median - bare[0]:.3f} s, {least - bare[1]:.3f} s" if name != "bare" else ""
        )
        print(f"  {name:18} {median:.3f} s, {least:.3f} s{extra}")


if __name__ == "__main__":
    main()
