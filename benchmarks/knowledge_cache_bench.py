"""Times loading the knowledge tables with the table cache (knowledge/cache.py) against parsing them.

    python benchmarks/knowledge_cache_bench.py [--runs 15] [--snapshot DIR]

Each run is a fresh process. First `knowledge()` alone: the import of gpudoctor.knowledge and the call,
each timed inside the process, with the table cache warm and with it off (the tables parsed and validated,
as before the cache). Then the whole `gpudoctor check --snapshot` on a snapshot whose torch is a CUDA build
(default: the H200 fixture, torch 2.11.0+cu130), whose derived facts load the tables: once as it runs, with
both caches warm, and once with only the table cache turned off (the rule cache still warm). The caches
live in a temporary directory, warmed before timing. A benchmark, not a test: it prints, never fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import gpudoctor, medians

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "tests" / "fixtures" / "h200-driver580-snapshot"

# Turns the table cache off and nothing else (GPUDOCTOR_NO_CACHE would turn the rule cache off too).
NO_TABLE_CACHE = "import gpudoctor.knowledge.cache as c; c.cache_dir = lambda: None\n"

KNOWLEDGE = """
import json, sys, time
start = time.perf_counter()
from gpudoctor.knowledge import knowledge
imported = time.perf_counter()
{patch}knowledge()
done = time.perf_counter()
print(json.dumps([imported - start, done - imported, "yaml" in sys.modules]))
"""

CHECK = """
import sys
from gpudoctor import entry
sys.argv = ["gpudoctor", "check", "--snapshot", {snapshot!r}]
try:
    entry.main()
except SystemExit:
    pass
"""


def knowledge_times(prelude: str, runs: int) -> tuple[float, float, bool]:
    """Median seconds of importing gpudoctor.knowledge and of knowledge() (`prelude` runs between the two),
    and whether yaml was imported."""
    samples = []
    for _ in range(runs + 1):  # the first run warms the cache and the page cache
        out = subprocess.run(
            [sys.executable, "-c", KNOWLEDGE.format(patch=prelude)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        samples.append(json.loads(out))
    samples = samples[1:]
    return (
        statistics.median(s[0] for s in samples),
        statistics.median(s[1] for s in samples),
        all(s[2] for s in samples),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--snapshot", default=str(H200), help="a snapshot whose torch is a CUDA build")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["XDG_CACHE_HOME"] = home
        os.environ.pop("GPUDOCTOR_NO_CACHE", None)
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        print(f"knowledge() in a fresh process, median of {args.runs} runs:")
        print(f"{'':26} {'import ms':>10} {'call ms':>8} {'total ms':>9}  yaml imported")
        for name, prelude in (("table cache warm", ""), ("tables parsed (no cache)", NO_TABLE_CACHE)):
            imp, call, yaml = knowledge_times(prelude, args.runs)
            print(f"{name:26} {imp * 1000:10.1f} {call * 1000:8.1f} {(imp + call) * 1000:9.1f}  {yaml}")
        print()
        check = CHECK.format(snapshot=args.snapshot)
        subprocess.run(gpudoctor() + ["check", "--snapshot", args.snapshot], capture_output=True, check=False)
        commands = {
            "check, caches warm": [sys.executable, "-c", check],
            "check, no table cache": [sys.executable, "-c", NO_TABLE_CACHE + check],
            "python3 -c pass": [sys.executable, "-c", "pass"],
        }
        m = medians(commands, args.runs, title=f", {Path(args.snapshot).name}")
        saved = m["check, no table cache"] - m["check, caches warm"]
        print(f"\nthe table cache saves a check {saved * 1000:.0f} ms")


if __name__ == "__main__":
    main()
