"""What the benchmark scripts share: timing whole commands, interleaved, and printing the medians."""

from __future__ import annotations

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


def gpudoctor() -> list[str]:
    """The console script, as users run it (python -m adds runpy's own start-up)."""
    script = os.path.join(os.path.dirname(sys.executable), "gpudoctor")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "gpudoctor"]


def medians(commands: dict[str, list[str]], runs: int, title: str = "") -> dict[str, float]:
    """Times each command `runs` times, interleaved so that machine noise hits every command alike, after
    one warm-up each (the same page cache for all); prints a table and returns the medians."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        wall(argv)
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(wall(argv))
    width = max(len(n) for n in commands) + 2
    print(f"{'command':{width}} {'median s':>9} {'min s':>7} {'max s':>7}   ({runs} runs{title})")
    for name, samples in times.items():
        print(f"{name:{width}} {statistics.median(samples):9.3f} {min(samples):7.3f} {max(samples):7.3f}")
    return {name: statistics.median(samples) for name, samples in times.items()}
