"""The all-reduce bus bandwidth a node should reach, from the slowest link of the best ring NCCL can lay
over the predicted transports, and its comparison with `bench`'s measured all-reduce.

Bus bandwidth is nccl-tests' measure (busbw = algbw x 2(n-1)/n for all-reduce,
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md), which for a ring equals the
bandwidth each GPU sends to its neighbour: the ring's slowest link. Per link, per direction:
  p2p-nvlink  the GPU's NVLink bandwidth from the GPU catalogue (rules/knowledge/gpus.yaml nvlink_gbs, both
              directions together, halved): all of it behind an NVSwitch, links/nvlink_links of it to a
              directly wired peer;
  p2p-pcie    the PCIe link's, from the PCIe table (rules/knowledge/pcie.yaml x16_gbs, scaled by width), the
              narrower of the two GPUs';
  shm         the same PCIe figure, and across sockets NCCL's own figure for the CPU-to-CPU link
              (NVIDIA/nccl@v2.23.4-1:src/graph/topo.h QPI_BW 6, SKL_QPI_BW 10, AMD_BW 16, ARM_BW 6, P9_BW 32
              GB/s): NCCL's model, not a measured or published figure (unsourced as a bandwidth);
  net         the NIC port's rate / 8, and the PCIe figure.
NVLS (NVLink SHARP) can beat a ring on an NVSwitch node; the figure here is the ring's. Directly wired
NVLink meshes run several rings at once over different links: the figure is one ring's, a lower bound.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Optional

from ..knowledge.lookups import gpu_by_name
from ..knowledge.rows import Knowledge
from .predict import Prediction, cpu_bw
from .topology import Topology

EXACT_RING_MAX = 10  # up to this many GPUs the best ring is searched exhaustively (bitmask DP)


@dataclass(frozen=True)
class BusBw:
    value: Optional[float]  # GB/s
    bottleneck: str = ""  # which link limits it, and its figure's source
    unknown: str = ""  # why there is no value


@dataclass(frozen=True)
class Comparison:
    predicted: Optional[float]
    measured: Optional[float]
    ratio: Optional[float]  # measured / predicted
    text: str


def _pcie_gbs(topo: Topology, g: int, kb: Knowledge) -> tuple[Optional[float], str]:
    gpu = topo.gpus[g]
    model = gpu_by_name(gpu.name, kb) if gpu.name else None
    gen = gpu.pcie_gen or (model.pcie_gen if model else None)
    width = gpu.pcie_width or (model.pcie_width if model else None)
    row = next((r for r in kb.pcie if r.gen == gen), None)
    if row is None or row.x16_gbs is None or not width:
        return None, f"GPU{g}'s PCIe generation and width are not known"
    return row.x16_gbs * width / 16, f"PCIe gen {gen} x{width} (rules/knowledge/pcie.yaml)"


def _nvlink_gbs(topo: Topology, i: int, j: int, kb: Knowledge) -> tuple[Optional[float], str]:
    gi = topo.gpus[i]
    model = gpu_by_name(gi.name, kb) if gi.name else None
    if model is None or model.nvlink_gbs is None:
        return None, f"the GPU catalogue has no NVLink bandwidth for GPU{i} ({gi.name or 'name unknown'})"
    half = model.nvlink_gbs / 2
    if gi.nvswitch_links and (topo.gpus[j].nvswitch_links or 0):
        return half, f"NVLink of the {model.name} behind NVSwitch, per direction (rules/knowledge/gpus.yaml)"
    links = gi.nvlink_to[j] if gi.nvlink_to else 0
    if not model.nvlink_links or not links:
        return None, f"how many of GPU{i}'s NVLinks join GPU{j} is not known"
    bw = half * links / model.nvlink_links
    return bw, f"{links} of {model.nvlink_links} NVLinks of the {model.name}, per direction"


def _link(pred: Prediction, topo: Topology, i: int, j: int, kb: Knowledge) -> tuple[Optional[float], str]:
    pair = pred.pair(i, j)
    t = pair.transport
    if t == "p2p-nvlink":
        if pair.via is not None:
            a, why_a = _nvlink_gbs(topo, i, pair.via, kb)
            b, why_b = _nvlink_gbs(topo, pair.via, j, kb)
            if a is None or b is None:
                return None, why_a if a is None else why_b
            return min(a, b), f"NVLink through GPU{pair.via}"
        return _nvlink_gbs(topo, i, j, kb)
    if t in ("p2p-pcie", "shm", "net"):
        bws = [_pcie_gbs(topo, i, kb), _pcie_gbs(topo, j, kb)]
        for bw, why in bws:
            if bw is None:
                return None, why
        value, why = min(bws)  # type: ignore[type-var]
        if t == "shm" and pair.path == "SYS":
            cpu = cpu_bw(topo.cpu_vendor, topo.cpu_model, topo.nccl_version)
            if cpu is None:
                return None, "the CPU-to-CPU figure NCCL uses depends on the CPU vendor and model, not known"
            if cpu < value:
                value, why = (
                    cpu,
                    f"CPU-to-CPU link, NCCL's model figure for {topo.cpu_vendor} (topo.h; unsourced)",
                )
        if t == "net":
            rates = [n.rate_gbps / 8 for n in topo.nics or () if n.active and n.rate_gbps]
            if not rates:
                return None, "the NIC's rate is not known"
            if max(rates) < value:
                value, why = max(rates), "the NIC port's rate"
        return value, f"{t}: {why}"
    return None, f"GPU{i} -> GPU{j}: the transport is {t}"


def _best_ring(bw: list[list[Optional[float]]], fill: float) -> float:
    """The largest bottleneck over Hamiltonian cycles (unknown links counted as `fill`)."""
    n = len(bw)
    w = [[(fill if bw[i][j] is None else bw[i][j]) for j in range(n)] for i in range(n)]
    if n == 2:
        return min(w[0][1], w[1][0])  # type: ignore[type-var]
    if n > EXACT_RING_MAX:  # every link at least this: a bound, not the best ring
        return min(w[i][j] for i in range(n) for j in range(n) if i != j)  # type: ignore[type-var]
    # best[mask][last]: the largest bottleneck of a path from 0 through mask ending at last
    best: dict[tuple[int, int], float] = {(1, 0): float("inf")}
    for mask in range(1, 1 << n):
        if not mask & 1:
            continue
        for last in range(n):
            cur = best.get((mask, last))
            if cur is None:
                continue
            for nxt in range(1, n):
                if mask & (1 << nxt):
                    continue
                key = (mask | (1 << nxt), nxt)
                val = min(cur, w[last][nxt])  # type: ignore[type-var]
                if val > best.get(key, -1.0):
                    best[key] = val
    full = (1 << n) - 1
    return max(min(best[(full, last)], w[last][0]) for last in range(1, n) if (full, last) in best)  # type: ignore[type-var]


def busbw_detail(prediction: Prediction, topo: Topology, kb: Optional[Knowledge] = None) -> BusBw:
    """The predicted all-reduce bus bandwidth inside the node, with the limiting link, or why not."""
    n = len(topo.gpus)
    if n < 2:
        return BusBw(None, unknown="an all-reduce inside the node needs two GPUs")
    if kb is None:
        from ..knowledge.loading import knowledge

        kb = knowledge()
    bw: list[list[Optional[float]]] = [[None] * n for _ in range(n)]
    why: dict[tuple[int, int], str] = {}
    for i, j in itertools.permutations(range(n), 2):
        bw[i][j], why[(i, j)] = _link(prediction, topo, i, j, kb)
    low, high = _best_ring(bw, 0.0), _best_ring(bw, float("inf"))
    if low != high or low == 0.0:
        missing = next(why[k] for k in why if bw[k[0]][k[1]] is None)
        return BusBw(None, unknown=missing)
    limit = min((i, j) for i, j in itertools.permutations(range(n), 2) if bw[i][j] == low)
    return BusBw(round(low, 2), bottleneck=f"GPU{limit[0]} -> GPU{limit[1]}: {why[limit]}")


def busbw(prediction: Prediction, topo: Topology, kb: Optional[Knowledge] = None) -> Optional[float]:
    """The predicted all-reduce bus bandwidth of the node in GB/s, or None when it cannot be told."""
    return busbw_detail(prediction, topo, kb).value


def measured_allreduce(facts: Any) -> Optional[float]:
    """`bench`'s measured all-reduce bus bandwidth (bench[k].test == allreduce, status ok), GB/s."""
    for k in range(facts.count("bench")):
        if facts.value(f"bench[{k}].test") == "allreduce" and facts.value(f"bench[{k}].status") == "ok":
            value = facts.value(f"bench[{k}].value")
            if isinstance(value, (int, float)):
                return float(value)
    return None


def compare(predicted: BusBw, facts: Any) -> Comparison:
    """The measured all-reduce against the prediction, in one line."""
    measured = measured_allreduce(facts)
    if predicted.value is None:
        return Comparison(None, measured, None, f"no prediction: {predicted.unknown}")
    if measured is None:
        return Comparison(
            predicted.value, None, None, f"predicted {predicted.value:g} GB/s; no all-reduce measured"
        )
    ratio = round(measured / predicted.value, 3)
    percent = int(measured / predicted.value * 100 + 0.5)
    return Comparison(
        predicted.value,
        measured,
        ratio,
        f"measured {measured:g} GB/s, {percent}% of the predicted {predicted.value:g} GB/s "
        f"(limited by {predicted.bottleneck})",
    )
