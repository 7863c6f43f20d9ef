"""Times `gpudoctor explain --log` on a 100 MB log, and the most memory it held.

    python benchmarks/explain_log_bench.py [--mb 100] [--runs 3] [--tree DIR]
        [--kind repeated|quiet|distinct|training]

The log is built here, never in a test: the lines of the real messages of tests/explain/corpus (each case
cites the thread it was seen in), repeated until the log is --mb megabytes. Four logs: "repeated" is those
lines as they are; "quiet" numbers every line (`12345| line`, so that no line repeats, as in a log with
timestamps) and takes the lines that name no cause, with one that does every thousand lines; "distinct"
numbers every corpus line, most of which name a cause: the worst case, every line matched anew;
"training" is a training job's output, every line distinct (tests/explain/trainlog.py: Hugging Face
Trainer and Megatron-LM progress lines, shaped like two real captured logs cited there), with a line of a
real error message every 10,000 lines, as in the log of a job that failed. The causes are judged on the
H200 capture (tests/fixtures), so the host does not matter. --tree runs the gpudoctor of another checkout
(the main one, for a before figure). A benchmark, not a test: it prints, never fails.
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
KINDS = ("repeated", "quiet", "distinct", "training")


def real_lines() -> list[str]:
    cases = [c for f in sorted(CORPUS.glob("*.yaml")) for c in yaml.safe_load(f.read_text())["cases"]]
    return [line for c in cases for line in c["message"].splitlines() if line.strip()]


def quiet_lines() -> tuple[list[str], list[str]]:
    """The corpus lines that name no cause (tracebacks' frames, the commands run, context), and those that
    do: a real log is mostly the first kind."""
    sys.path.insert(0, str(ROOT))
    from gpudoctor.explain.index import build

    matcher = build()[0]
    lines = real_lines()
    named = [line for line in lines if any(c.confident for c in matcher.rank(line, limit=8))]
    return [line for line in lines if line not in named], named


def write_log(path: Path, megabytes: int, kind: str) -> int:
    lines = real_lines()
    quiet, named = quiet_lines() if kind == "quiet" else ([], [])
    sys.path.insert(0, str(ROOT / "tests" / "explain"))
    from trainlog import training_lines

    training = training_lines()
    target = megabytes * 1_000_000
    written = n = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            if kind == "training":  # a real error line every 10,000 lines
                line = lines[n // 10_000 % len(lines)] if n % 10_000 == 9_999 else next(training)
            elif kind == "quiet":  # one line in a thousand names a cause
                line = named[n // 1000 % len(named)] if n % 1000 == 999 else quiet[n % len(quiet)]
            else:
                line = lines[n % len(lines)]
            text = line + "\n" if kind in ("repeated", "training") else f"{n}| {line}\n"
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
    ap.add_argument("--kind", choices=KINDS, action="append", help="default: all three")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kind or KINDS:
            log = Path(tmp) / f"{kind}.log"
            count = write_log(log, args.mb, kind)
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
