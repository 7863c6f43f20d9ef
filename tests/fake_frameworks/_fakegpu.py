"""The virtual GPU behind the fake frameworks (torch/, cupy/): the scenario, a clock per GPU, the rates.

The scenario is a JSON file named by GPUDOCTOR_FAKE_GPU:
  {"frameworks": ["torch"], "version": "2.13.0+cu128", "cupy_version": "13.3.0",
   "devices": [{"name": "NVIDIA H200", "uuid": "GPU-...", "cc": "9.0", "rates": {...}}],
   "rates": {"matmul_bf16": 733, "h2d_pinned": 55, ..., "p2p": 390, "allreduce": 360},
   "peer_access": true,
   "hang": "matmul_fp16" | "crash": "..." | "fail": "..." (what the operation of that test does instead),
   "import_error": "...", "cuda_error": "...", "cpu_build": true, "no_nccl": true}
`frameworks` says which of the fakes import (default: torch only). Rates are TFLOP/s for matrix products
and GB/s for copies; a device's "rates" win over the top-level ones. A test without a rate fails with a
CUDA-like error.
"""

from __future__ import annotations

import json
import os
import time


def scenario() -> dict:
    path = os.environ.get("GPUDOCTOR_FAKE_GPU")
    if not path:
        return {"devices": []}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


S = scenario()
clock: dict = {}  # device -> virtual seconds
current = [0]


def importable(framework: str) -> None:
    """Raise what importing `framework` raises in this scenario."""
    if framework not in S.get("frameworks", ["torch"]):
        raise ModuleNotFoundError(f"No module named {framework!r}", name=framework)
    if S.get("import_error"):
        raise ImportError(S["import_error"])


def rate(device: int, key: str) -> float:
    spec = S["devices"][device]
    value = spec.get("rates", {}).get(key, S.get("rates", {}).get(key))
    for action in ("hang", "crash", "fail"):
        if S.get(action) == key:
            if action == "hang":
                time.sleep(3600)
            if action == "crash":
                os.abort()
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
    if not value:
        raise RuntimeError(f"CUDA error: the fake scenario gives no rate for {key}")
    return float(value)


def spend(device: int, key: str, amount: float, scale: float) -> None:
    """Advance the GPU's clock by what `amount` flops or bytes take at the scenario's rate for `key`."""
    clock[device] = clock.get(device, 0.0) + amount / (rate(device, key) * scale)
