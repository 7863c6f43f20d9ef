"""Times `gpudoctor explain --log` on a 100 MB log, and the most memory it held.

    python benchmarks/explain_log_bench.py [--mb 100] [--runs 3] [--tree DIR] [--kind repeated|distinct]

The log is built here, never in a test: the lines of the real messages of tests/explain/corpus (each case
cites the thread it was seen in), repeated until the log is --mb megabytes. Two logs: "repeated" is those
lines as they are; "distinct" numbers every line (`12345| line`), so that no line repeats and each one is
matched anew, as in a log with timestamps. The causes are judged on the H200 capture (tests/fixtures), so
the host does not matter. --tree runs the gpudoctor of another checkout (the main one, for a before
figure). A benchmark, not a test: it prints, never fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "explain" / "corpus"
SNAPSHOT = ROOT / "tests" / "fixtures" / "h200-driver580-snapshot"


def real_lines() -> list[str]:
    cases = [c for f in sorted(CORPUS.glob("*.yaml")) for c in yaml.safe_load(f.read_text())["cases"]]
    return [line for c in cases for line in c["message"].splitlines() if line.strip()]


def write_log(path: Path, megabytes: int, distinct: bool) -> int:
    lines = real_lines()
    target = megabytes * 1_000_000
    written = n = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            line = lines[n % len(lines)]
            text = f"{n}| {line}\n" if distinct else line + "\n"
            f.write(text)
            written += len(text.encode())
            n += 1
    return n


def run(tree: Path, log: Path) -> tuple[float, int, int]:
    """Seconds, peak resident memory (MiB) and exit code of one explain --log."""
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(tree))
    argv = [sys.executable, "-m", "gpudoctor", "explain", "--log", str(log), "--snapshot", str(SNAPSHOT)]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tree)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    return seconds, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose gpudoctor runs")
    ap.add_argument("--kind", choices=("repeated", "distinct"), action="append", help="default: both")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kind or ("repeated", "distinct"):
            log = Path(tmp) / f"{kind}.log"
            count = write_log(log, args.mb, kind == "distinct")
            results = [run(args.tree, log) for _ in range(args.runs)]
            secs = statistics.median(r[0] for r in results)
            rss = max(r[1] for r in results)
            codes = sorted({r[2] for r in results})
            print(
                f"{kind:9} {args.mb} MB, {count} lines: median {secs:.2f} s, peak RSS {rss} MiB, exit {codes}"
                f" ({args.runs} runs, {args.tree})"
            )
            log.unlink()


if __name__ == "__main__":
    main()
