"""Times `gpudoctor explain --log DIR` on a job's rank logs: 64 logs of 10,000 lines each by default.

    python benchmarks/explain_ranks_bench.py [--ranks 64] [--lines 10000] [--runs 3] [--tree DIR]

The logs are built here, never in a test: each rank's log is a training job's output (tests/explain/
trainlog.py: every line distinct, shaped like real captured logs cited there) under torch's `[rankN]:`
prefix, ending as a real failure does: one rank runs out of memory (the line of modelscope/ms-swift#6301),
every other rank's watchdog times out (the line of hiyouga/LlamaFactory#7396, with its rank). Nothing is
judged on a host. --tree runs the gpudoctor of another checkout. A benchmark, not a test: it prints, never
fails.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OOM = (
    "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB. GPU 3 has a total "
    "capacity of 63.42 GiB of which 1.70 GiB is free."
)
TIMEOUT = (
    "[rank{r}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
    "Timeout(ms)=600000) ran for 600060 milliseconds before timing out."
)


def write_logs(directory: Path, ranks: int, lines: int, failing: int) -> int:
    sys.path.insert(0, str(ROOT / "tests" / "explain"))
    from trainlog import training_lines

    size = 0
    for r in range(ranks):
        body = [f"[rank{r}]: {line}" for line in itertools.islice(training_lines(seed=r), lines - 1)]
        body.append((OOM if r == failing else TIMEOUT).format(r=r))
        text = "\n".join(body) + "\n"
        (directory / f"rank{r}.log").write_text(text)
        size += len(text.encode())
    return size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree", default=str(ROOT))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        size = write_logs(logs, args.ranks, args.lines, failing=args.ranks * 3 // 5)
        env = dict(os.environ, PYTHONPATH=args.tree, NO_COLOR="1")
        argv = [sys.executable, "-m", "gpudoctor", "explain", "--log", str(logs)]
        times, out = [], ""
        for _ in range(args.runs):
            start = time.perf_counter()
            r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp, timeout=600)
            times.append(time.perf_counter() - start)
            out = r.stdout
        total = args.ranks * args.lines
        print(f"{args.ranks} rank logs x {args.lines} lines ({total} lines, {size / 1e6:.1f} MB)")
        print(
            f"explain --log DIR: median {statistics.median(times):.2f} s of {args.runs} runs "
            f"(min {min(times):.2f} s); {total / statistics.median(times):,.0f} lines/s; exit {r.returncode}"
        )
        print(out.splitlines()[2] if len(out.splitlines()) > 2 else out)


if __name__ == "__main__":
    main()
