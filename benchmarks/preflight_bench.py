"""Times the container pre-flight with the framework probe against the pre-flight without it.

    python benchmarks/preflight_bench.py [--python INTERPRETER_WITH_FRAMEWORKS] [--runs 9]

`check --profile preflight` reads the image's Python environment (metadata only: one child process of that
interpreter) and evaluates the framework rules; `--no-python` is the pre-flight as it was before, the
machine alone. Run it with an interpreter that has gpudoctor installed; --python names the environment to
judge (default: python3 on PATH, as an entrypoint would). A benchmark, not a test: it prints, never fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def wall(argv: list[str]) -> float:
    env = dict(os.environ, NO_COLOR="1")
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=None, help="interpreter whose environment to judge")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    script = os.path.join(os.path.dirname(sys.executable), "gpudoctor")
    gd = [script] if os.path.exists(script) else [sys.executable, "-m", "gpudoctor"]
    target = ["--python", args.python] if args.python else []
    commands = {
        "preflight (machine and frameworks)": gd + ["check", "--profile", "preflight", *target],
        "preflight --no-python (as before)": gd + ["check", "--profile", "preflight", "--no-python"],
        "python3 -c pass": [args.python or "python3", "-c", "pass"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        wall(argv)
    for _ in range(args.runs):
        for name, argv in commands.items():
            times[name].append(wall(argv))
    print(f"{'command':38} {'median s':>9} {'min s':>7} {'max s':>7}   ({args.runs} runs)")
    for name, samples in times.items():
        print(f"{name:38} {statistics.median(samples):9.3f} {min(samples):7.3f} {max(samples):7.3f}")
    with_fw = statistics.median(times["preflight (machine and frameworks)"])
    without = statistics.median(times["preflight --no-python (as before)"])
    print(f"\nthe framework probe adds {with_fw - without:+.3f} s ({with_fw / without:.2f}x)")


if __name__ == "__main__":
    main()
