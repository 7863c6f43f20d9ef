"""The preflight deadline holds when the GPU stack hangs: a real process, a fake `nvidia-smi` that never
answers on PATH, and a fake `pynvml` whose nvmlInit sleeps for a minute first on PYTHONPATH."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _fakes(tmp_path: Path, hang_nvml: bool) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nsleep 60\n")
    smi.chmod(0o755)
    paths = [str(ROOT)]
    if hang_nvml:
        mod = tmp_path / "fake_pynvml"
        mod.mkdir()
        (mod / "pynvml.py").write_text(
            '"""A pynvml whose nvmlInit never comes back in time, as on a wedged driver."""\n'
            "import time\n\n\ndef nvmlInit():\n    time.sleep(60)\n"
        )
        paths.insert(0, str(mod))
        # The driver library the fake pynvml stands for: gpudoctor imports pynvml only when the loader
        # can find it (a file by that name on LD_LIBRARY_PATH; the fake never loads it).
        (mod / "libnvidia-ml.so.1").write_bytes(b"")
    env = dict(
        os.environ,
        NO_COLOR="1",
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join(paths),
    )
    if hang_nvml:
        env["LD_LIBRARY_PATH"] = str(tmp_path / "fake_pynvml")
    return env


def _preflight(env: dict) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "check", "--profile", "preflight", "--timeout", "3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=30,
    )
    return r, time.monotonic() - start


def test_a_hung_nvml_init_ends_within_the_deadline_and_is_named(tmp_path):
    r, seconds = _preflight(_fakes(tmp_path, hang_nvml=True))
    assert seconds < 3.5, (seconds, r.stderr)
    line = r.stderr.strip()
    assert line.startswith("gpudoctor: could not check · GPUs unknown (timed out) · "), line
    assert "timed out: NVML nvmlInit" in line
    # No rule fired, but the GPU rules could not be evaluated: preflight cannot vouch for the host (exit 2).
    assert r.returncode == 2


def test_a_hanging_nvidia_smi_does_not_touch_the_check(tmp_path):
    r, seconds = _preflight(_fakes(tmp_path, hang_nvml=False))
    assert seconds < 3.5, (seconds, r.stderr)
    assert "timed out" not in r.stderr  # gpudoctor does not run nvidia-smi
    assert r.stderr.startswith("gpudoctor: ok · ")
