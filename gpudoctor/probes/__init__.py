"""Probes: one module per domain. Each has pure parse functions (text in, data out) and one
`probe(host) -> dict[str, Fact]` entry that reads only through the Host and never judges.

PROBES lists them with the fact-name prefixes each one owns, so that a probe that crashed or ran out of
time leaves its facts unknown with that reason.
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

from ..facts import Fact

Probe = Callable[..., "dict[str, Fact]"]


def registry(
    data_dir: Optional[str] = None, deep: bool = False, since: Optional[float] = None
) -> list[tuple[str, tuple[str, ...], Probe]]:
    """(name, owned prefixes, probe). Imported lazily so `gpudoctor --help` stays fast. `data_dir` is the
    directory `check --data-dir` names, for the storage probe. `deep` (`check --deep`) adds the runtime
    probe: child processes that load libcuda and import each framework (gpudoctor/probes/runtime.py).
    `since` (`check --since`, seconds) is the window of kernel-log events judged; None: since boot."""
    from . import (
        container,
        cuda,
        driver,
        fabric,
        gpu_health,
        gpu_processes,
        gpus,
        interconnect,
        kernel_log,
        libraries,
        monitoring,
        python_env,
        storage,
        system,
    )

    probes: list[tuple[str, tuple[str, ...], Probe]] = [
        ("driver", ("driver", "pci"), driver.probe),
        ("gpus", ("gpus",), gpus.probe),
        ("cuda", ("cuda",), cuda.probe),
        ("libraries", ("cudnn", "nccl", "cuda_libs"), libraries.probe),
        ("python", ("python", "frameworks"), python_env.probe),
        ("system", ("system", "env", "host"), system.probe),
        ("container", ("container",), container.probe),
        ("monitoring", ("monitoring",), monitoring.probe),
        ("storage", ("storage",), functools.partial(storage.probe, data_dir=data_dir)),
        ("kernel_log", ("kernel_log", "xid", "sxid"), functools.partial(kernel_log.probe, since=since)),
        ("interconnect", ("interconnect",), interconnect.probe),
        ("gpu_processes", ("gpu_processes", "gpu_mig"), gpu_processes.probe),  # issue 11, part D
        ("gpu_health", ("gpu_health",), gpu_health.probe),  # issue 11, part D
        ("fabric", ("fabric", "fabric_manager", "imex"), fabric.probe),  # issue 11, part 3
    ]
    if deep:
        from . import runtime

        probes.append(("runtime", ("runtime", "extensions"), runtime.probe))
    return probes
