"""Facts of the hosts the resolver tests judge: one framework, the GPUs given (as NVML names them, with
their compute capability)."""

from __future__ import annotations

from typing import Any, Optional

from gpudoctor.facts import Facts, known, unknown

H100 = ("NVIDIA H100 80GB HBM3", "9.0")
V100 = ("Tesla V100-SXM2-32GB", "7.0")
A100 = ("NVIDIA A100-SXM4-80GB", "8.0")
RTX5090 = ("NVIDIA GeForce RTX 5090", "12.0")


def host(
    driver: Optional[str],
    gpus: list[tuple[str, Any]],
    python: str = "3.11.9",
    machine: Optional[str] = "x86_64",
    **framework: Any,
) -> Facts:
    """Facts of a host with one framework (frameworks[0]); a GPU capability of None is unknown, and so is
    the interpreter's machine when `machine` is None."""
    items = {
        "driver.version": known(driver, "t") if driver else unknown("NVMLError_LibraryNotFound"),
        "python.version": known(python, "t"),
        "python.machine": known(machine, "t") if machine else unknown("not recorded"),
        "python.executable": known("/venv/bin/python", "t"),
        "gpus.count": known(len(gpus), "t"),
        "frameworks.count": known(1 if framework else 0, "t"),
    }
    for i, (name, cc) in enumerate(gpus):
        items[f"gpus[{i}].name"] = known(name, "t")
        items[f"gpus[{i}].compute_capability"] = known(cc, "t") if cc else unknown("not supported")
    for key, value in framework.items():
        items[f"frameworks[0].{key}"] = known(value, "t")
    return Facts(items)


def torch(version: str, build: str = "cpu", cuda: Optional[str] = None) -> dict[str, Any]:
    fw = {"name": "torch", "distribution": "torch", "version": version, "build": build}
    return fw if cuda is None else dict(fw, cuda=cuda)
