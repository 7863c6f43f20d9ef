"""`gpudoctor nccl`: NCCL's predicted transports on this node, as text (a matrix of GPU pairs, each GPU's way
to other nodes, the findings) and as JSON (schema gpudoctor.nccl, version 1)."""

from __future__ import annotations

import json
from typing import Any, Optional

from .. import __version__
from ..nccl.path_facts import net_line
from .safe import terminal_text

SCHEMA = "gpudoctor.nccl"
SCHEMA_VERSION = 1
# A matrix cell: the transport, shortened; with the path type where it says more than the transport.
CELL = {"p2p-nvlink": "NV", "p2p-pcie": "P2P", "shm": "SHM", "net": "NET", "none": "-", "unknown": "?"}
LEGEND = (
    "NV: peer-to-peer over NVLink (NVL direct or through an NVSwitch, NVB through one GPU) · P2P: "
    "peer-to-peer over PCIe · SHM: through host memory · NET: through the NIC · ?: unknown"
)


def _cell(pair: Any) -> str:
    short = CELL.get(pair.transport, pair.transport)
    return f"{short}/{pair.path}" if pair.path and pair.transport != "unknown" else short


def matrix_lines(prediction: Any, n: int) -> list[str]:
    """The GPUs' matrix, rows the sender, as `nvidia-smi topo -m` lays out its own."""
    cells = {(p.src, p.dst): _cell(p) for p in prediction.pairs}
    width = max([len(c) for c in cells.values()] + [4]) + 2
    lines = [(" " * 6 + "".join(f"GPU{j}".ljust(width) for j in range(n))).rstrip()]
    for i in range(n):
        row = "".join((cells.get((i, j), "X") if i != j else "X").ljust(width) for j in range(n))
        lines.append(f"GPU{i}".ljust(6) + row.rstrip())
    return lines


def render_text(view: Any, where: str) -> str:
    """`view`: commands/nccl.py's NcclView; `where`: what was read (live check of HOST, snapshot S)."""
    p, topo = view.prediction, view.topology
    n = len(topo.gpus)
    version = f"NCCL {topo.nccl_version}" if topo.nccl_version else "NCCL version unknown"
    lines = [
        f"gpudoctor {__version__} · NCCL paths on {where} · {version} · {n} GPU{'s' if n != 1 else ''}",
        "",
    ]
    if n >= 2:
        lines += ["Between GPUs (the transport NCCL will use, and its path type)"]
        lines += ["  " + line for line in matrix_lines(p, n)]
        lines += ["  " + LEGEND, ""]
    lines.append("To other nodes: " + (p.net_name or "unknown") + f" ({'; '.join(p.net_reasons)})")
    lines += [f"  GPU{q.gpu}  {net_line(q)}" for q in p.network]
    nvls = {True: "yes", False: "no", None: "unknown"}[p.nvls]
    why = f" ({'; '.join(p.nvls_reasons)})" if p.nvls_reasons else ""
    lines += ["", f"NVLS (NVSwitch multicast): {nvls}{why}"]
    lines.append("All-reduce bus bandwidth: " + _busbw(view))
    lines.append("")
    if p.findings:
        lines.append("Findings: where NCCL will take a slower path than the hardware allows")
        for f in p.findings:
            lines += [f"  {', '.join(f.subjects)}", f"    {f.cause}", f"    fix: {f.fix}"]
    else:
        lines.append("No finding: every pair and GPU predicted takes the best path the hardware allows.")
    if view.log is not None:
        lines += ["", *log_lines(view)]
    lines += ["", f"Verdict: exit {view.code}"]
    return "\n".join(terminal_text(line) for line in lines) + "\n"


def _busbw(view: Any) -> str:
    b = view.busbw
    text = (
        f"up to {b.value:g} GB/s (limited by {b.bottleneck})"
        if b.value is not None
        else f"unknown ({b.unknown})"
    )
    if view.comparison is not None:
        text += f"; bench: {view.comparison.text}"
    return text


def log_lines(view: Any) -> list[str]:
    log = view.log
    head = (
        f"NCCL's log ({log.path}): NCCL {log.version or 'version unknown'}, {log.pairs} GPU pair(s) and "
        f"{log.network_gpus} GPU(s) to the network seen"
    )
    lines = [head, f"  not compared: {log.problem}"] if log.problem else [head]
    if view.disagreements:
        return [*lines, "  disagrees with the prediction:", *(f"    {d}" for d in view.disagreements)]
    if not log.problem:
        lines.append("  agrees with the prediction on every pair and GPU it shows")
    return lines


def render_json(view: Any, where: str) -> str:
    p, topo, b = view.prediction, view.topology, view.busbw
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "where": where,
        "nccl_version": topo.nccl_version,
        "gpus": [{"index": g.index, "bus_id": g.bus_id, "name": g.name} for g in topo.gpus],
        "pairs": [
            {
                "src": q.src,
                "dst": q.dst,
                "transport": q.transport,
                "path": q.path,
                "via": q.via,
                "reasons": list(q.reasons),
                "limited_by": list(q.limited_by),
            }
            for q in p.pairs
        ],  # fmt: skip
        "network": {
            "name": p.net_name,
            "reasons": list(p.net_reasons),
            "gpus": [
                {
                    "gpu": q.gpu,
                    "transport": q.transport,
                    "nic": q.nic,
                    "path": q.path,
                    "gdr": q.gdr,
                    "pxn_via": q.pxn_via,
                    "reasons": list(q.reasons),
                    "limited_by": list(q.limited_by),
                }
                for q in p.network
            ],  # fmt: skip
        },
        "nvls": {"value": p.nvls, "reasons": list(p.nvls_reasons)},
        "busbw": {
            "predicted_gbs": b.value,
            "bottleneck": b.bottleneck,
            "unknown": b.unknown or None,
            "measured_gbs": view.comparison.measured if view.comparison else None,
            "ratio": view.comparison.ratio if view.comparison else None,
        },
        "findings": [
            {"code": f.code, "subjects": list(f.subjects), "cause": f.cause, "fix": f.fix} for f in p.findings
        ],
        "log": _log_data(view),
        "exit_code": view.code,
    }
    return json.dumps(data, indent=2) + "\n"


def _log_data(view: Any) -> Optional[dict]:
    if view.log is None:
        return None
    return {
        "path": view.log.path,
        "nccl_version": view.log.version,
        "pairs": view.log.pairs,
        "network_gpus": view.log.network_gpus,
        "problem": view.log.problem or None,
        "disagreements": list(view.disagreements),
    }
