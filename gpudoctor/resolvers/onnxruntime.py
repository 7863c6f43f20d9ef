"""The ONNX Runtime resolver: an onnxruntime-gpu release that exists and that this driver and these GPUs
run, in the place of the CPU-only onnxruntime."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from ..compat import driver_verdict, sm, toolkit_supports_gpu
from ..compat import version_tuple as _vt
from ..knowledge import Knowledge
from .base import Resolution, begin, beyond_tables

if TYPE_CHECKING:
    from ..facts import Facts


def onnxruntime_gpu(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The onnxruntime-gpu release (onnxruntime.yaml: only releases that exist) whose CUDA major the driver
    runs and builds code for every GPU, for the interpreter's Python: the newest of the installed
    onnxruntime's major.minor, else the newest (with downgrade=no, none older). With the `cuda` and `cudnn`
    extras where it has them (1.21.0 on), so the CUDA libraries it loads come with it. The CPU package is
    removed first: both install the same `onnxruntime` module."""
    req = begin("onnxruntime", "an onnxruntime-gpu build", facts, kb, item, args)
    if isinstance(req, Resolution):
        return req
    host, have, avoid = req.host, req.have, req.avoid
    rows = list(kb.onnxruntime_gpu)
    beyond = beyond_tables("onnxruntime", have, [r.version for r in rows])
    if beyond:
        return Resolution("onnxruntime", "onnxruntime", False, reasons=(beyond,))
    mine = (
        _vt(have.version)[:2] if have is not None and have.version and len(_vt(have.version)) >= 2 else None
    )
    newest_first = sorted(rows, key=lambda r: _vt(r.version), reverse=True)
    order = [r for r in newest_first if mine and _vt(r.version)[:2] == mine]
    order += [
        r for r in newest_first if r not in order and (req.downgrade or not mine or _vt(r.version)[:2] > mine)
    ]
    older = (
        [] if req.downgrade or not mine else [r.version for r in newest_first if _vt(r.version)[:2] < mine]
    )
    rejected: list[str] = []
    driver_only: list[int] = []  # CUDA majors of releases only the driver keeps out
    if older:
        rejected.append(
            f"older releases (down to {older[-1]}) are not considered: a warning's fix never downgrades"
        )
    for row in order:
        label = f"onnxruntime-gpu {row.version} (CUDA {row.cuda_major}.x, cuDNN {row.cudnn_major}.x)"
        if row.python_min and _vt(host.python) < _vt(row.python_min):
            rejected.append(f"{label}: needs Python {row.python_min} or newer; this is {host.python}")
            continue
        old = [
            (cc, name) for cc, name in host.gpus if toolkit_supports_gpu(str(row.cuda_major), cc, kb) is False
        ]
        if old:
            cc, name = old[0]
            rejected.append(f"{label}: CUDA {row.cuda_major}.x has no code for {name} ({sm(cc)})")
            continue
        dv = driver_verdict(f"{row.cuda_major}.0", host.driver, kb, avoid)
        if not dv.runs:
            rejected.append(f"{label}: {dv.reason}")
            driver_only.append(row.cuda_major)
            continue
        pin = (
            f"onnxruntime-gpu[cuda,cudnn]=={row.version}" if row.extras else f"onnxruntime-gpu=={row.version}"
        )
        head = (
            f"onnxruntime-gpu {row.version} is the newest release of the installed onnxruntime "
            f"{have.version}'s major.minor that this host runs"
            if have is not None and mine and _vt(row.version)[:2] == mine
            else f"onnxruntime-gpu {row.version} is the newest release this host runs"
        )
        libs = (
            "its `cuda` and `cudnn` extras install the CUDA and cuDNN libraries it loads; call "
            "onnxruntime.preload_dlls() before the first session when torch is not imported first"
            if row.extras
            else f"it has no extras: the CUDA {row.cuda_major} and cuDNN {row.cudnn_major} libraries must be "
            "on the host or in the environment (nvidia-*-cu12 wheels, as torch brings)"
        )
        uninstall = ("onnxruntime",) if have is not None and have.distribution == "onnxruntime" else ()
        return Resolution(
            "onnxruntime",
            "onnxruntime",
            True,
            packages=(pin,),
            uninstall=uninstall,
            minor_compat=dv.minor_compat,
            reasons=(head, *rejected, dv.reason),
            notes=(
                libs,
                *(
                    ("onnxruntime is removed first: both install the onnxruntime module",)
                    if uninstall
                    else ()
                ),
            ),
        )
    return Resolution(
        "onnxruntime",
        "onnxruntime",
        False,
        reasons=(
            f"no onnxruntime-gpu release runs on driver {host.driver} with these GPUs and Python "
            f"{host.python}",
            *rejected[:6],
        ),
        needs_cuda=f"{min(driver_only)}.0" if driver_only else None,
    )
