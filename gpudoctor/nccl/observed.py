"""What an NCCL_DEBUG=INFO log shows NCCL chose between this node's GPUs, against the prediction: the log's
`Channel ... a[X] -> b[Y] via Z` lines (parsed by log.py) with X and Y matched to the topology's GPUs."""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

from .log import parse_log
from .predict import Prediction, disagreements
from .topology import Topology


class Observed(NamedTuple):
    version: Optional[str]
    pairs: int  # GPU pairs whose transport the log shows
    problem: str  # why it was not compared ("" when it was)
    disagreements: tuple[str, ...]


def against_log(text: str, prediction: Prediction, topo: Topology) -> Observed:
    """The log's choices inside one node (channels between GPUs, named by their bracket: the CUDA device
    from NCCL 2.12, the bus id before) against the prediction."""
    parsed = parse_log(text)
    seen = {
        (c.src_tag, c.dst_tag): c.transport.raw
        for c in parsed.channels
        if c.src_tag and c.dst_tag and c.transport.kind in ("p2p", "shm", "net")
    }
    if not seen:
        why = "it has no `Channel ... via` lines between GPUs (run with NCCL_DEBUG=INFO)"
        return Observed(parsed.version, 0, why, ())
    index, problem = gpu_index({a for a, _ in seen} | {b for _, b in seen}, topo)
    if problem:
        return Observed(parsed.version, 0, problem, ())
    observed = {(index[a], index[b]): via for (a, b), via in seen.items()}
    pairs = len({tuple(sorted(k)) for k in observed if k[0] != k[1]})
    return Observed(parsed.version, pairs, "", disagreements(prediction, observed))


def gpu_index(names: set[str], topo: Topology) -> tuple[dict[str, int], str]:
    """The index of each GPU the log names, or why they cannot be matched to this node's GPUs: CUDA device
    numbers (`0[3]`) taken as NVML indexes (CUDA_VISIBLE_DEVICES unset), else bus ids as NCCL prints them
    (hex: `18000` for 0000:18:00.0, busIdToInt64 drops ':' and '.')."""
    n = len(topo.gpus)
    if all(name.isdigit() and int(name) < n for name in names):
        return {name: int(name) for name in names}, ""
    buses = {int(re.sub(r"[:.]", "", g.bus_id), 16): g.index for g in topo.gpus if g.bus_id}
    if all(int(name, 16) in buses for name in names):
        return {name: buses[int(name, 16)] for name in names}, ""
    shown = ", ".join(sorted(names))
    return {}, f"its GPUs ({shown}) are not this host's {n} GPU(s): a log of another machine?"
