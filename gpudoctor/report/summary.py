"""The host at a glance: one line per area, built from facts, shared by the text and Markdown reports."""

from __future__ import annotations

from typing import Any

from ..engine.template import size
from ..facts import FRAMEWORKS, Facts

AREAS = (
    "Driver", "GPUs", "CUDA", "cuDNN", "NCCL", "NCCL paths", "Python", "Frameworks", "Runtime", "System",
)  # fmt: skip


def _v(facts: Facts, name: str, default: str = "unknown") -> Any:
    value = facts.value(name)
    return default if value is None else value


def _join(parts: list[str]) -> str:
    return " · ".join(p for p in parts if p)


def driver_line(facts: Facts) -> str:
    if facts.value("driver.loaded") is False and not facts.value("gpus.count"):
        return f"no NVIDIA driver/GPU found (NVML: {_v(facts, 'driver.nvml_status')})"
    module = facts.value("driver.kernel_module")
    return _join(
        [
            f"{_v(facts, 'driver.version')}" + (f" ({module} kernel module)" if module else ""),
            f"supports CUDA {_v(facts, 'driver.max_cuda')}",
            f"NVML {_v(facts, 'driver.nvml_status')}",
        ]
    )


def gpu_lines(facts: Facts) -> list[str]:
    lines = []
    for i in range(facts.count("gpus")):
        g = f"gpus[{i}]."
        if facts.value(g + "lost") is True:  # nothing else it said can be trusted, or was read
            name, bus = facts.value(g + "name"), facts.value(g + "bus_id")
            named = _join([str(name) if name else "", f"PCI {bus}" if bus else ""])
            lines.append(
                f"{_v(facts, g + 'index', i)}: " + _join([named, 'LOST: NVML answers "GPU is lost"'])
            )
            continue
        mem = facts.value(g + "memory.total_bytes")
        cc = facts.value(g + "compute_capability")
        arch = facts.value(g + "architecture")
        pcie = (
            f"PCIe gen {_v(facts, g + 'pcie.gen_current', '?')} x{_v(facts, g + 'pcie.width_current', '?')}"
            f" of gen {_v(facts, g + 'pcie.gen_max', '?')} x{_v(facts, g + 'pcie.width_max', '?')}"
        )
        power = facts.value(g + "power.draw_w")
        limit = facts.value(g + "power.limit_w")
        temp = facts.value(g + "temperature.gpu_c")
        lines.append(
            f"{_v(facts, g + 'index', i)}: "
            + _join(
                [
                    str(_v(facts, g + "name")),
                    " ".join(str(x) for x in (arch, f"sm {cc}" if cc else None) if x),
                    size(mem) if mem is not None else "",
                    pcie,
                    f"{temp} C" if temp is not None else "",
                    f"{power:.0f} of {limit:.0f} W" if power is not None and limit is not None else "",
                ]
            )
        )
    return lines


def _copies(facts: Facts, name: str) -> str:
    n = facts.count(name)
    parts = [f"{_v(facts, f'{name}[{j}].version')} ({_v(facts, f'{name}[{j}].origin')})" for j in range(n)]
    return ", ".join(parts) if parts else "none found"


def cuda_line(facts: Facts) -> str:
    toolkit = facts.value("cuda.toolkit.version")
    return _join(
        [
            f"toolkit {toolkit} at {_v(facts, 'cuda.home')}" if toolkit else "no toolkit",
            f"runtimes {_copies(facts, 'cuda.runtimes')}",
        ]
    )


# How the report says what chose the interpreter it judged (python.selected_by).
CHOSEN_BY = {
    "--python": "--python",
    "command": "the interpreter the command runs",
    "VIRTUAL_ENV": "the active virtual environment",
    "CONDA_PREFIX": "the active conda environment",
    "PATH": "python3 on PATH",
    "gpudoctor": "gpudoctor's own: no python3 on PATH",
}


def python_line(facts: Facts) -> str:
    chosen = CHOSEN_BY.get(str(facts.value("python.selected_by")), "")
    if facts.value("python.executable") is None:
        why = facts.get("python.executable").unknown
        return f"unknown: {why}" + (f" (chosen by {chosen})" if chosen else "")
    venv = "venv" if facts.value("python.venv") else "no venv"
    where = f"{_v(facts, 'python.version')} at {_v(facts, 'python.executable')}"
    return f"{where} ({venv}, {_v(facts, 'python.installer')}" + (f"; {chosen})" if chosen else ")")


def frameworks_line(facts: Facts) -> str:
    count = facts.get("frameworks.count")
    if not count.known:
        return f"unknown: {count.unknown}"
    parts = []
    for i in range(facts.count("frameworks")):
        f = f"frameworks[{i}]."
        build = _v(facts, f + "build")
        detail = f"cuda {_v(facts, f + 'cuda')}" if build == "cuda" else build
        parts.append(f"{_v(facts, f + 'name')} {_v(facts, f + 'version')} {detail}")
    return _join(parts) or "none installed"


def _deep(facts: Facts) -> bool:
    """The runtime probe ran (check --deep), finished or not."""
    return "runtime.cuda.status" in facts or "runtime" in facts.missing


def runtime_line(facts: Facts) -> str:
    """What --deep saw: the libcuda smoke test, then each framework as its import reported it."""
    if "runtime" in facts.missing:  # the runtime probe itself did not finish
        return f"unknown ({facts.missing['runtime']})"
    status = facts.get("runtime.cuda.status")
    if status.known and status.value == "ok":
        cuda = f"CUDA ok ({_v(facts, 'runtime.cuda.device_count')} device(s))"
    elif status.known:
        result = facts.value("runtime.cuda.result")
        code = facts.value("runtime.cuda.code")
        detail = f"{result} ({code})" if result else str(_v(facts, "runtime.cuda.error"))
        cuda = f"CUDA {status.value}: {detail}"
    else:
        cuda = f"CUDA unknown ({status.unknown})"
    parts = [cuda]
    for name in FRAMEWORKS:
        fw = facts.get(f"runtime.{name}.status")
        if f"runtime.{name}.status" not in facts or fw.unknown == "not installed":
            continue
        if not fw.known:
            parts.append(f"{name} unknown ({fw.unknown})")
        elif fw.value != "ok":
            parts.append(f"{name} {fw.value}: {_v(facts, f'runtime.{name}.error')}")
        elif name == "torch":
            available = facts.value("runtime.torch.cuda_available")
            cudnn = facts.value("runtime.torch.cudnn")
            parts.append(
                "torch "
                + ("CUDA available" if available else "CUDA not available")
                + (f", cuDNN {cudnn}" if cudnn else "")
            )
        else:
            parts.append(f"{name} imported")
    return _join(parts)


def system_line(facts: Facts) -> str:
    container = facts.value("container.runtime")
    shm = facts.value("system.shm_bytes")
    mem = facts.value("system.memory_bytes")
    return _join(
        [
            str(_v(facts, "system.os")),
            f"kernel {_v(facts, 'system.kernel')}",
            f"{_v(facts, 'system.cpus')} CPUs",
            f"{size(mem)} RAM" if mem is not None else "",
            f"{container} container" if container and container != "none" else "",
            f"/dev/shm {size(shm)}" if shm is not None else "",
        ]
    )


def _tally(entries: list) -> str:
    """ "GPU0-GPU1: p2p-nvlink (NVL)" entries -> "28 p2p-nvlink" or "12 p2p-pcie, 16 shm"."""
    counts: dict[str, int] = {}
    for entry in entries:
        kind = str(entry).split(": ", 1)[-1].split(" ", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def nccl_paths_line(facts: Facts) -> str:
    """NCCL's predicted transports (gpudoctor/nccl/): between GPU pairs, NVLS, to the network, the ring's
    all-reduce bus bandwidth; `gpudoctor nccl` has each pair."""
    pairs, network = facts.value("nccl_paths.pairs") or [], facts.value("nccl_paths.network") or []
    busbw = facts.value("nccl_paths.busbw_gbs")
    return _join(
        [
            f"GPU pairs: {_tally(pairs)}" if pairs else "",
            "NVLS" if facts.value("nccl_paths.nvls") is True else "",
            f"to other nodes: {_tally(network)}" if network else "",
            f"all-reduce up to {busbw:g} GB/s" if isinstance(busbw, (int, float)) else "",
        ]
    )


def _nccl_paths(facts: Facts) -> list[tuple[str, list[str]]]:
    """The area where there is something to say: two GPUs or more, or an RDMA device."""
    rdma = facts.value("interconnect.rdma.device_count")
    if not facts.value("nccl_paths.pairs") and not (isinstance(rdma, int) and rdma > 0):
        return []
    return [("NCCL paths", [nccl_paths_line(facts)])]


def summary(facts: Facts) -> list[tuple[str, list[str]]]:
    """(area, lines) in report order."""
    return (
        [
            ("Driver", [driver_line(facts)]),
            ("GPUs", gpu_lines(facts) or ["none visible"]),
            ("CUDA", [cuda_line(facts)]),
            ("cuDNN", [_copies(facts, "cudnn.installs")]),
            ("NCCL", [_copies(facts, "nccl.installs")]),
        ]
        + _nccl_paths(facts)
        + [
            ("Python", [python_line(facts)]),
            ("Frameworks", [frameworks_line(facts)]),
        ]
        + ([("Runtime", [runtime_line(facts)])] if _deep(facts) else [])
        + [
            ("System", [system_line(facts)]),
        ]
    )
