"""The bench's measurement source on machines without a GPU: tests/fake_frameworks (fakes of the torch and
CuPy calls the worker makes, on a virtual GPU) installed in a real venv, which the real worker runs in as
its target interpreter. Scenarios are JSON files (tests/fake_frameworks/_fakegpu.py says what they hold)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FAKE_TORCH = Path(__file__).parents[1] / "fake_frameworks"

# A healthy H200 as measured with plain torch calls (issue 14): TFLOP/s and GB/s.
H200_RATES = {
    "matmul_fp32": 51,
    "matmul_tf32": 387,
    "matmul_bf16": 733,
    "matmul_fp16": 707,
    "matmul_fp8": 1300,
    "h2d_pinned": 55,
    "h2d_pageable": 7,
    "d2h_pinned": 55,
    "d2h_pageable": 7,
    "d2d": 4170,
    "p2p": 390,
    "allreduce": 360,
}


def h200(i: int) -> dict:
    """GPU i as torch sees it. No UUID: devices then map to NVML's in order (both in PCI bus order)."""
    return {"name": "NVIDIA H200", "cc": "9.0"}


def fake_torch_venv(where: Path) -> str:
    """A venv (no pip: a fraction of a second) whose site-packages holds the fake torch, by a .pth file."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    (Path(purelib) / "fake_frameworks.pth").write_text(str(FAKE_TORCH) + "\n", encoding="utf-8")
    return str(python)


def scenario(tmp_path: Path, gpus: int = 1, **fields) -> Path:
    """A fake torch scenario file: `gpus` H200s at H200_RATES, with `fields` added or replaced."""
    data = {"devices": [h200(i) for i in range(gpus)], "rates": dict(H200_RATES)}
    rates = fields.pop("rates", None)
    if rates:
        data["rates"].update(rates)
    data.update(fields)
    path = tmp_path / "fake-torch.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
