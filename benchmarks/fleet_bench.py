"""Times `gpudoctor fleet DIR --format json` over generated per-node reports.

    python benchmarks/fleet_bench.py [--nodes 1000] [--runs 5] [--gpus 8]

The reports are the real H200 report (tests/fixtures/golden/h200-check.json) on `--gpus` GPUs, one per
node, with a few nodes changed (driver, GPU count, PCIe width, torch version) so that the fleet rules have
work to do. Budget (issue 4): 1,000 reports in well under 2 s on a 2-core machine. Issue 9: linear,
i.e. 20,000 reports at most 4.5x the time of 5,000 (`--nodes 5000` then `--nodes 20000`), and under 1 GB.
This is a benchmark, not a test: it prints, never fails.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "golden" / "h200-check.json"


def node_report(base: dict, n: int, gpus: int) -> dict:
    doc = copy.deepcopy(base)
    name = f"gpu-node-{n:04d}"
    doc["host"]["hostname"] = doc["facts"]["host"]["hostname"] = name
    gpu0 = doc["facts"]["gpus"][0]
    count = gpus - 1 if n % 250 == 7 else gpus  # a few nodes lost a GPU
    doc["facts"]["gpus"] = [dict(copy.deepcopy(gpu0), index=i) for i in range(count)]
    if n % 100 == 3:
        doc["facts"]["driver"]["version"] = "535.104.05"
    if n % 200 == 5:
        doc["facts"]["gpus"][-1]["pcie"]["width_current"] = 8
    if n % 300 == 11:
        doc["facts"]["frameworks"][0]["version"] = "2.10.0"
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--gpus", type=int, default=8)
    args = ap.parse_args()
    base = json.loads(BASE.read_text())
    script = os.path.join(os.path.dirname(sys.executable), "gpudoctor")
    gd = [script] if os.path.exists(script) else [sys.executable, "-m", "gpudoctor"]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        for n in range(args.nodes):
            doc = node_report(base, n, args.gpus)
            Path(tmp, f"gpu-node-{n:04d}.json").write_text(json.dumps(doc, indent=2))
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
        print(f"wrote {args.nodes} reports ({size / 1e6:.1f} MB) in {time.perf_counter() - start:.2f} s")
        argv = gd + ["fleet", tmp, "--format", "json"]
        env = dict(os.environ, NO_COLOR="1")
        times, cpu, rss, code, out = [], [], [], None, b""
        for _ in range(args.runs + 1):  # the first run warms the page cache and is not counted
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            # /usr/bin/time-like peak memory of this run alone: a fresh child each time, so RUSAGE_CHILDREN's
            # maxrss is the largest child so far; run 0 (page cache warm-up) is as large as any.
            proc = subprocess.run(argv, capture_output=True, env=env, check=False)
            times.append(time.perf_counter() - start)
            rss.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            code, out = proc.returncode, proc.stdout
        times, cpu = times[1:], cpu[1:]
        summary = json.loads(out)["summary"]
        print(
            f"gpudoctor fleet DIR --format json: median {statistics.median(times):.3f} s, "
            f"min {min(times):.3f} s, max {max(times):.3f} s ({args.runs} runs, {os.cpu_count()} CPUs); "
            f"CPU time median {statistics.median(cpu):.3f} s; peak memory {max(rss):.0f} MB"
        )
        nodes, gpus, found = summary["nodes"], summary["gpus"], summary["fleet"]
        print(f"exit {code}: {nodes} nodes, {gpus} GPUs, fleet findings {found}")


if __name__ == "__main__":
    main()
