"""Time `gpudoctor envs` on a home with 20 Python environments (issue 27: under 0.3 s). Prints medians; never
fails.

    python benchmarks/envs_bench.py [--runs 20] [--keep DIR]

The home is built once with the real tools, as tests/workstation.py builds one: 12 venvs (`python -m venv`,
six of them holding a torch-like wheel and its nvidia-* dependencies laid down as pip lays them, the others
a few plain distributions), 4 conda-style environments (conda-meta/, bin/python, lib/pythonX.Y), listed in
~/.conda/environments.txt, 2 pipx venvs, a project's .venv (the working directory), a uv tool venv and
3 Jupyter kernels starting three of the venvs: 20 environments. Timed: discovery and metadata in this
process (what the command does once started), and whole commands as users run them, interleaved, with HOME
pointed at the home and PATH at /usr/bin:/bin: `envs`, `--version` (the start-up alone), `check --all-envs`
(every environment judged from its files) and `check --python` of one venv (inspected by its interpreter).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from gpudoctor.commands.envs import row  # noqa: E402
from gpudoctor.envs import find  # noqa: E402
from gpudoctor.envs.places import Places  # noqa: E402
from gpudoctor.host.env_files import EnvFiles  # noqa: E402

from pyenvs import build_wheel, make_venv, site_packages, torch_wheel, unpack_wheel  # noqa: E402

XY = f"{sys.version_info[0]}.{sys.version_info[1]}"
PLAIN = (("numpy", "2.1.3"), ("filelock", "3.16.1"), ("requests", "2.32.3"), ("packaging", "24.2"))
NVIDIA = (
    ("nvidia-cuda-runtime-cu12", "12.4.127"),
    ("nvidia-cudnn-cu12", "9.1.0.70"),
    ("nvidia-nccl-cu12", "2.21.5"),
)


def build(root: Path) -> Path:
    home = root / "home"
    wheels = root / "wheels"
    cuda = torch_wheel(wheels, "2.5.1+cu124", "12.4")
    plain = [build_wheel(wheels, n, v, {f"{n}_stub/__init__.py": ""}) for n, v in PLAIN + NVIDIA]
    venvs = []
    for i in range(12):
        python = make_venv(sys.executable, home / ".virtualenvs" / f"v{i:02d}")
        for wheel in ([cuda] + plain) if i % 2 == 0 else plain[: len(PLAIN)]:
            unpack_wheel(wheel, site_packages(python))
        venvs.append(python)
    listed = []
    for i in range(4):
        prefix = home / "miniconda3" / "envs" / f"c{i}"
        (prefix / "conda-meta").mkdir(parents=True)
        (prefix / "bin").mkdir()
        (prefix / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
        site = prefix / "lib" / f"python{XY}" / "site-packages"
        site.mkdir(parents=True)
        for wheel in [cuda] + plain:
            unpack_wheel(wheel, site, installer="conda")
        listed.append(str(prefix))
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text("\n".join(listed) + "\n")
    for name in ("black", "ruff"):
        make_venv(sys.executable, home / ".local" / "share" / "pipx" / "venvs" / name)
    make_venv(sys.executable, home / ".local" / "share" / "uv" / "tools" / "httpie")
    project = home / "code" / "proj"
    (project / "src").mkdir(parents=True)
    python = make_venv(sys.executable, project / ".venv")
    unpack_wheel(cuda, site_packages(python))
    for i in range(3):
        kernel = home / ".local" / "share" / "jupyter" / "kernels" / f"k{i}"
        kernel.mkdir(parents=True)
        argv = [str(venvs[i]), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec = {"argv": argv, "display_name": f"k{i}", "language": "python"}
        (kernel / "kernel.json").write_text(json.dumps(spec, indent=1))
    return home


def in_process(home: Path, runs: int) -> tuple[float, int]:
    places = Places(
        str(home), str(home / "code" / "proj" / "src"), {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    )
    times, count = [], 0
    for _ in range(runs + 1):
        start = time.perf_counter()
        rows = [row(e) for e in find.discover(EnvFiles(), places)]
        times.append(time.perf_counter() - start)
        count = len(rows)
    return statistics.median(times[1:]), count


def commands(home: Path, runs: int) -> dict[str, float]:
    """Medians of whole commands, interleaved: `envs`; `--version` (the start-up alone); `check --all-envs`
    (every environment judged, from files) beside `check --python` of one venv (inspected in its
    interpreter, as check does for one)."""
    script = os.path.join(os.path.dirname(sys.executable), "gpudoctor")
    base = [script] if os.path.exists(script) else [sys.executable, "-m", "gpudoctor"]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_ROOT")}
    env.update(HOME=str(home), PATH="/usr/bin:/bin", NO_COLOR="1")
    one = str(home / ".virtualenvs" / "v00" / "bin" / "python")
    argvs = {
        "gpudoctor envs": ["envs"],
        "gpudoctor --version": ["--version"],
        "gpudoctor check --all-envs --format json": ["check", "--all-envs", "--format", "json"],
        "gpudoctor check --python v00 --format json": ["check", "--python", one, "--format", "json"],
    }
    times: dict[str, list[float]] = {name: [] for name in argvs}
    for n in range(runs + 1):
        for name, argv in argvs.items():
            start = time.perf_counter()
            subprocess.run(
                base + argv, cwd=home / "code" / "proj" / "src", env=env, stdout=subprocess.DEVNULL
            )
            if n:
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(samples) for name, samples in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--keep", help="build the home here and keep it")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="envs-bench-"))
    try:
        home = build(root)
        seconds, count = in_process(home, args.runs)
        whole = commands(home, args.runs)
        print(f"environments found: {count} (the home's 20, and the system's interpreters on /usr/bin)")
        print(f"discovery + metadata, in process: median {seconds * 1000:.1f} ms ({args.runs} runs)")
        print(f"whole commands, interleaved ({args.runs} runs; target for `envs`: 0.3 s):")
        for name, median in whole.items():
            print(f"  {name:45} median {median * 1000:.1f} ms")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
