"""NCCL's predicted paths as facts, for rules and the check report: the node's topology (topology.from_facts)
judged by predict() and busbw, each pair and GPU in one line, and the findings that say where NCCL will take
a slower path than the hardware allows. The facts are declared with the interconnect probe's
(probes/interconnect.py), whose section they extend: rules on them are not evaluated where it does not run.

A finding count is unknown, with the first reason, when no finding was made and some pair (or GPU) could not
be predicted: "could not check" never reads as "nothing found".
"""

from __future__ import annotations

from typing import Any, Optional

from ..facts import Fact, Facts, known, unknown
from .busbw import busbw_detail
from .predict import Prediction, predict
from .topology import from_facts

SOURCE = "derived:gpus, interconnect, env, nccl.newest"


def is_network(subjects: tuple[str, ...]) -> bool:
    """A predict.Finding about the way out of the node ("GPU3 -> mlx5_0/1", "node -> network")."""
    return any(" -> " in s for s in subjects)


MAX_SUBJECTS = 6  # pairs or GPUs named in a finding's line; the rest are counted


def finding_text(finding: Any, gpus: int) -> str:
    """One line: what it is about (every pair, or the first few), the cause, the fix."""
    subjects = list(finding.subjects)
    if len(subjects) > 1 and len(subjects) == gpus * (gpus - 1) // 2 and all("-GPU" in s for s in subjects):
        shown = f"every GPU pair ({len(subjects)})"
    elif len(subjects) > MAX_SUBJECTS:
        shown = ", ".join(subjects[:MAX_SUBJECTS]) + f" and {len(subjects) - MAX_SUBJECTS} more"
    else:
        shown = ", ".join(subjects)
    return f"{shown}: {finding.cause}; fix: {finding.fix}"


def _count(entries: list[str], unknown_reason: Optional[str]) -> Fact:
    if entries or unknown_reason is None:
        return known(len(entries), SOURCE)
    return unknown(unknown_reason, SOURCE)


def prediction_facts(prediction: Prediction, busbw: Any) -> dict[str, Fact]:
    """The nccl_paths.* facts of a prediction and its bus bandwidth (busbw.BusBw)."""
    pairs = [p for p in prediction.pairs if p.src < p.dst]
    n = len(prediction.network)  # one per GPU
    inner = [finding_text(f, n) for f in prediction.findings if not is_network(f.subjects)]
    outer = [finding_text(f, n) for f in prediction.findings if is_network(f.subjects)]
    pair_unknown = next(
        (f"GPU{p.src}-GPU{p.dst}: {_why(p)}" for p in pairs if p.transport == "unknown"), None
    )
    net_unknown = next(
        (f"GPU{q.gpu}: {_why(q)}" for q in prediction.network if q.transport == "unknown"), None
    )
    if prediction.net_name is None and prediction.net_reasons:  # the network itself: say why
        net_unknown = "; ".join(prediction.net_reasons)
    out = {
        "nccl_paths.pairs": known(
            [f"GPU{p.src}-GPU{p.dst}: {p.transport}" + (f" ({p.path})" if p.path else "") for p in pairs],
            SOURCE,
        ),
        "nccl_paths.network": known([f"GPU{q.gpu}: {net_line(q)}" for q in prediction.network], SOURCE),
        "nccl_paths.findings": known(inner, SOURCE),
        "nccl_paths.finding_count": _count(inner, pair_unknown),
        "nccl_paths.net_findings": known(outer, SOURCE),
        "nccl_paths.net_finding_count": _count(outer, net_unknown),
        "nccl_paths.nvls": known(prediction.nvls, SOURCE)
        if prediction.nvls is not None
        else unknown("; ".join(prediction.nvls_reasons) or "unknown", SOURCE),
    }
    out["nccl_paths.busbw_gbs"] = (
        known(round(busbw.value, 2), SOURCE) if busbw.value is not None else unknown(busbw.unknown, SOURCE)
    )
    return out


def _why(p: Any) -> str:
    return p.reasons[-1] if p.reasons else "unknown"


def net_line(q: Any) -> str:
    """A GPU's way to other nodes: `ib-gdr via mlx5_0/1 (PIX)`, `, through GPU2 (PXN)` when it relays."""
    where = f" via {q.nic}" if q.nic else ""
    path = f" ({q.path})" if q.path else ""
    return q.transport + where + path + (f", through GPU{q.pxn_via} (PXN)" if q.pxn_via is not None else "")


def path_facts(facts: Facts) -> dict[str, Fact]:
    """The nccl_paths.* facts of a host whose GPUs were read."""
    topo = from_facts(facts)
    prediction = predict(topo)
    out = prediction_facts(prediction, busbw_detail(prediction, topo))
    count = out["nccl_paths.net_finding_count"]
    rdma = facts.get("interconnect.rdma.device_count")
    if topo.nics is None and not count.known and not rdma.known:  # the reason the devices are unknown
        out["nccl_paths.net_finding_count"] = unknown(f"{count.unknown}: {rdma.unknown}", SOURCE)
    return out
