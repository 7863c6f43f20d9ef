"""Times the GPU probe against the fake NVML's topology scenarios, and counts the NVML calls it makes.

    python benchmarks/gpus_topology_bench.py [--runs 9] [--cc cc]

Builds tests/fake_nvml/fake_nvml.c into a temporary directory, then, for each scenario, runs one child
process (the library must be on LD_LIBRARY_PATH before pynvml loads it) that reads every GPU through the
real LiveHost and pynvml `--runs` times after a warm-up, and prints the median, the NVML calls of one read,
and how many of them ask what an NVLink link reaches (gpus[].nvlink.peers). The fake answers at once, so
this is gpudoctor's own cost per call (the worker thread, pynvml's ctypes), not a driver's. A benchmark,
not a test: it prints, never fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fake_nvml"
SCENARIOS = ("nvswitch-h100-8", "h100-nv6-4", "pcie-l20-8")
CHILD = """
import statistics, sys, time
sys.path.insert(0, sys.argv[1])
from gpudoctor.host.live import LiveHost
from gpudoctor.probes import gpus
host = LiveHost()
gpus.probe(host)  # warm-up: nvmlInit, the handles
calls = []
ask = host.nvml
def counting(function, device=None, arg=None):
    calls.append(function)
    return ask(function, device, arg)
host.nvml = counting
times = []
for _ in range(int(sys.argv[2])):
    calls.clear()
    start = time.perf_counter()
    gpus.probe(host)
    times.append(time.perf_counter() - start)
far = sum(c.startswith("nvmlDeviceGetNvLinkRemote") for c in calls)
print(f"{statistics.median(times) * 1000:7.1f} ms  {len(calls):4d} NVML calls, {far:3d} for NVLink far ends")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cc", default="cc")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as lib:
        argv = [
            args.cc,
            "-shared",
            "-fPIC",
            "-O1",
            "-o",
            f"{lib}/libnvidia-ml.so.1",
            str(FAKE / "fake_nvml.c"),
        ]
        subprocess.run(argv, check=True, timeout=120)
        for scenario in SCENARIOS:
            env = {
                **os.environ,
                "LD_LIBRARY_PATH": lib,
                "FAKE_NVML_SCENARIO": str(FAKE / "scenarios" / f"{scenario}.scn"),
            }
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(ROOT), str(args.runs)],
                env=env, capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            print(f"{scenario:18s} {out.stdout.strip() or out.stderr.strip()[-300:]}")


if __name__ == "__main__":
    main()
