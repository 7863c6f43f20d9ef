"""How long reading a large lockfile takes, and its peak memory: `gpudoctor check --lock` reads one per
check (issue 25). The lockfiles are built here, in the shape of the real ones the tests read, at sizes far
above a real project's (a large uv.lock holds a few hundred packages): N packages, each depending on the
next three, one torch that requires the nvidia-* wheels.

    python benchmarks/lockfile_bench.py [--packages 5000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from gpudoctor.lockfile import read_lock  # noqa: E402

INDEX = "http://127.0.0.1:8000/simple"
NVIDIA = ("nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12", "nvidia-nccl-cu12")
MARKER = "platform_machine == 'x86_64' and sys_platform == 'linux'"


def names(n: int) -> list:
    return [f"pkg-{i:05d}" for i in range(n)]


def uv_lock(n: int) -> str:
    out = ['version = 1\nrevision = 3\nrequires-python = ">=3.10"\n']
    pkgs = names(n)
    out.append(
        '\n[[package]]\nname = "app"\nversion = "0.1.0"\nsource = { virtual = "." }\ndependencies = [\n'
    )
    out.append('    { name = "torch" },\n    { name = "pkg-00000" },\n]\n')
    for i, name in enumerate(pkgs):
        deps = "".join(f'    {{ name = "{d}" }},\n' for d in pkgs[i + 1 : i + 4])
        out.append(
            f'\n[[package]]\nname = "{name}"\nversion = "1.{i}.0"\nsource = {{ registry = "{INDEX}" }}\n'
        )
        out.append(f"dependencies = [\n{deps}]\n" if deps else "")
        out.append(
            f'wheels = [\n    {{ url = "{INDEX}/{name}-1.{i}.0-py3-none-any.whl", hash = "sha256:00" }},\n]\n'
        )
    deps = "".join(f'    {{ name = "{d}", marker = "{MARKER}" }},\n' for d in NVIDIA)
    out.append(
        f'\n[[package]]\nname = "torch"\nversion = "2.5.1+cu124"\nsource = {{ registry = "{INDEX}" }}\n'
        f"dependencies = [\n{deps}]\n"
    )
    for d in NVIDIA:
        out.append(
            f'\n[[package]]\nname = "{d}"\nversion = "12.4.127"\nsource = {{ registry = "{INDEX}" }}\n'
        )
    return "".join(out)


def requirements(n: int) -> str:
    out = [f"--index-url {INDEX}\n", "torch==2.5.1+cu124\n    # via app\n"]
    for i, name in enumerate(names(n)):
        out.append(f"{name}==1.{i}.0 ; {MARKER}\n    # via\n    #   torch\n    #   app\n")
    return "".join(out)


def conda_lock(n: int) -> str:
    out = ["version: 1\nmetadata:\n  platforms:\n  - linux-64\npackage:\n"]
    for i, name in enumerate(names(n)):
        out.append(
            f"- name: {name}\n  version: 1.{i}.0\n  manager: conda\n  platform: linux-64\n"
            f"  dependencies:\n    python: '>=3.10'\n"
            f"  url: https://127.0.0.1/conda-forge/linux-64/{name}-1.{i}.0-py_0.conda\n"
            "  hash:\n    md5: 00\n  category: main\n  optional: false\n"
        )
    return "".join(out)


def measure(path: str, runs: int) -> tuple:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        lock = read_lock(path, machine="x86_64", python="3.11")
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    read_lock(path, machine="x86_64", python="3.11")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(times), peak, len(lock.pins)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packages", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "uv.lock": uv_lock(args.packages),
            "requirements.txt": requirements(args.packages),
            "conda-lock.yml": conda_lock(args.packages),
        }
        print(f"{'file':18} {'size':>9} {'pins':>6} {'median s':>9} {'peak MiB':>9}   ({args.runs} runs)")
        for name, text in files.items():
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            median, peak, pins = measure(path, args.runs)
            size = f"{len(text) / 1024 / 1024:.1f} MiB"
            print(f"{name:18} {size:>9} {pins:6d} {median:9.3f} {peak / 1024 / 1024:9.1f}")


if __name__ == "__main__":
    main()
