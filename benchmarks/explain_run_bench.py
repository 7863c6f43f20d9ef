"""Times `gpudoctor explain MESSAGE` and what `gpudoctor run -- CMD` adds before the command starts.

    python benchmarks/explain_run_bench.py [--runs 15] [--tree DIR]

explain: a message no rule explains (answered from the error texts alone) and one that names a cause
(judged on the H200 capture in tests/fixtures, so that the host does not matter); both real messages of
tests/explain/corpus. run: `run -- python3 -c pass` against `python3 -c pass` itself; "before the child
starts" is the time from gpudoctor's start to the child's first instruction, measured by the child (it
prints time.time() at once; the parent takes the time just before it spawns gpudoctor). --tree runs the
gpudoctor of another checkout (the main one, for a before figure). A benchmark, not a test: it prints,
never fails.
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


def child_start_delay(argv: list[str], env: dict, runs: int) -> float:
    """Median seconds from spawning argv (ending in a python3 -c that prints time.time()) to that print."""
    delays = []
    for _ in range(runs):
        start = time.time()
        out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False).stdout
        delays.append(float(out.strip().splitlines()[-1]) - start)
    return statistics.median(delays)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose gpudoctor runs")
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = str(args.tree)
    gd = [sys.executable, "-m", "gpudoctor"]
    print(f"gpudoctor of {args.tree}")
    medians(
        {
            "python -c pass": [sys.executable, "-c", "pass"],
            "gpudoctor --version": gd + ["--version"],
            "explain (no cause)": gd + ["explain", NO_CAUSE],
            "explain (a cause, --snapshot)": gd + ["explain", CAUSE, "--snapshot", str(SNAPSHOT)],
        },
        args.runs,
    )
    probe = [sys.executable, "-c", "import time; print(time.time())"]
    env = dict(os.environ, NO_COLOR="1")
    bare = child_start_delay(probe, env, args.runs)
    wrapped = child_start_delay(gd + ["run", "--", *probe], env, args.runs)
    print(f"\nrun -- CMD: the child starts {wrapped:.3f} s after gpudoctor is spawned, {bare:.3f} s bare:")
    print(f"gpudoctor adds {wrapped - bare:.3f} s before the child starts ({args.runs} runs, medians)")


if __name__ == "__main__":
    main()
