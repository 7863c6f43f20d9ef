"""Times `gpudoctor check` (and `check --deep`) against `python -m torch.utils.collect_env` in one run.

    python benchmarks/check_vs_collect_env.py [--python INTERPRETER_WITH_TORCH] [--runs 7]

Run it with an interpreter that has gpudoctor installed; --python names the environment holding torch
(default: the same one), which gpudoctor inspects from outside as users run it. Budgets (DESIGN): check at
most 0.06 of collect_env; `check --deep` no slower than collect_env; --help at most 1.5x --version. This is
a benchmark, not a test: it prints, never fails.
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
    ap.add_argument("--python", default=sys.executable, help="interpreter whose environment holds torch")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    # The console script, as users run it (python -m adds runpy's own start-up).
    script = os.path.join(os.path.dirname(sys.executable), "gpudoctor")
    gd = [script] if os.path.exists(script) else [sys.executable, "-m", "gpudoctor"]
    commands = {
        "gpudoctor --version": gd + ["--version"],
        "gpudoctor --help": gd + ["--help"],
        "gpudoctor check": gd + ["check", "--python", args.python],
        "gpudoctor check --format json": gd + ["check", "--format", "json", "--python", args.python],
        "gpudoctor check --deep": gd + ["check", "--deep", "--timeout", "60", "--python", args.python],
        "python -m torch.utils.collect_env": [args.python, "-m", "torch.utils.collect_env"],
        "python -c pass": [args.python, "-c", "pass"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():  # one warm-up each, so the page cache is the same for all
        wall(argv)
    for _ in range(args.runs):  # interleaved, so that machine noise hits every command alike
        for name, argv in commands.items():
            times[name].append(wall(argv))
    print(
        f"{'command':36} {'median s':>9} {'min s':>7} {'max s':>7}   ({args.runs} runs, python {args.python})"
    )
    for name, samples in times.items():
        print(f"{name:36} {statistics.median(samples):9.3f} {min(samples):7.3f} {max(samples):7.3f}")
    check = statistics.median(times["gpudoctor check"])
    collect = statistics.median(times["python -m torch.utils.collect_env"])
    deep = statistics.median(times["gpudoctor check --deep"])
    print(f"\nratio check / collect_env: {check / collect:.3f} (target at most 0.06)")
    print(f"ratio check --deep / collect_env: {deep / collect:.3f} (target at most 1)")
    version = statistics.median(times["gpudoctor --version"])
    help_ = statistics.median(times["gpudoctor --help"])
    print(f"--help / --version: {help_ / version:.2f} (target at most 1.5)")


if __name__ == "__main__":
    main()
