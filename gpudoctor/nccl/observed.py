"""What an NCCL_DEBUG=INFO log shows NCCL chose, against the prediction: the log's `Channel ... a[X] -> b[Y]
via Z` lines (parsed by log.py) with X and Y matched to the topology's GPUs. Channels between two GPUs of
the node are compared per pair; `[send]`/`[receive] via NET/...` channels, per GPU to the network (the GPU
at this end: the sender of a send, the receiver of a receive), with the `Using network X` line."""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

from .log import Channel, NcclLog, parse_log
from .predict import Prediction, disagreements
from .topology import Topology


class Observed(NamedTuple):
    version: Optional[str]
    pairs: int  # GPU pairs whose transport the log shows
    problem: str  # why it was not compared ("" when it was)
    disagreements: tuple[str, ...]
    network_gpus: int = 0  # GPUs whose transport to the network the log shows


def against_log(text: str, prediction: Prediction, topo: Topology) -> Observed:
    """The log's choices (channels between GPUs, named by their bracket: the CUDA device from NCCL 2.12,
    the bus id before) against the prediction."""
    parsed = parse_log(text)
    same_host = _same_host(parsed)
    seen: dict[tuple[str, str], str] = {}
    net: dict[str, set[str]] = {}  # the GPU at this end -> the labels of its network channels
    for c in parsed.channels:
        if not (c.src_tag and c.dst_tag) or c.transport.kind not in ("p2p", "shm", "net"):
            continue
        if c.transport.kind == "net" and not same_host(c):
            local = c.dst_tag if c.direction == "receive" else c.src_tag
            net.setdefault(local, set()).add(c.transport.label)
        else:
            seen[(c.src_tag, c.dst_tag)] = c.transport.raw
    net_line = _network_line(parsed, prediction)
    if not seen and not net:
        why = "it has no `Channel ... via` lines between GPUs (run with NCCL_DEBUG=INFO)"
        return Observed(parsed.version, 0, why, net_line)
    index, problem = gpu_index({a for a, _ in seen} | {b for _, b in seen} | set(net), topo)
    if problem:
        return Observed(parsed.version, 0, problem, ())
    observed = {(index[a], index[b]): via for (a, b), via in seen.items()}
    pairs = len({tuple(sorted(k)) for k in observed if k[0] != k[1]})
    found = disagreements(prediction, observed) + net_line
    found += network_disagreements(prediction, {index[g]: labels for g, labels in net.items()})
    return Observed(parsed.version, pairs, "", found, len(net))


def _same_host(parsed: NcclLog):
    """Whether a NET channel joins two ranks of one host: both ranks' hosts are known from the log's
    `comm ... rank R` lines and are the same (NCCL takes NET inside a node only when P2P and SHM cannot
    connect). Otherwise the channel goes to another node."""
    hosts: dict[int, set[str]] = {}
    for r in parsed.ranks:
        if r.host:
            hosts.setdefault(r.rank, set()).add(r.host)

    def same(c: Channel) -> bool:
        a, b = hosts.get(c.src, set()), hosts.get(c.dst, set())
        return len(a) == 1 and a == b

    return same


def _family(net: str) -> str:
    """A network plugin's name as NCCL prints it, by what it runs on: IB, IBext, IBext_v8 (the HPC-X
    plugin over the same verbs) are IB; anything else is itself (Socket, AWS Libfabric, ...)."""
    return "IB" if net.startswith("IB") else net


def _network_line(parsed: NcclLog, prediction: Prediction) -> tuple[str, ...]:
    """`Using network X` (the network NCCL loaded) against the predicted one, when both are known."""
    if not parsed.networks or prediction.net_name is None:
        return ()
    used = parsed.networks[0]
    if _family(used) == _family(prediction.net_name):
        return ()
    why = f" ({prediction.net_reasons[-1]})" if prediction.net_reasons else ""
    return (f"network: predicted {prediction.net_name}{why}, NCCL used {used} (`Using network {used}`)",)


def _net_kind(label: str) -> str:
    """A NET channel's label (`NET/IB/GDRDMA`, `NET/Socket`, `NET/IBext_v8`) as the prediction's network
    transport: ib-gdr, ib, socket; another plugin keeps its name (`net:AWS Libfabric`)."""
    parts = label.split("/")
    name = parts[1] if len(parts) > 1 else ""
    if name == "Socket":
        return "socket"
    if _family(name) == "IB":
        return "ib-gdr" if label.endswith("/GDRDMA") else "ib"
    return f"net:{name}"


def network_disagreements(prediction: Prediction, observed: dict[int, set[str]]) -> tuple[str, ...]:
    """Where the log's NET channels of a GPU (by index -> labels) differ from the GPU's predicted network
    transport. A predicted "unknown" is reported with its reason."""
    predicted = {q.gpu: q for q in prediction.network}
    out = []
    for g, labels in sorted(observed.items()):
        q = predicted.get(g)
        for label in sorted(labels):
            kind = _net_kind(label)
            if q is None:
                out.append(f"GPU{g} -> network: NCCL used {kind} ({label}); no such GPU in the topology")
            elif q.transport != kind:
                why = f" ({q.reasons[-1]})" if q.transport == "unknown" and q.reasons else ""
                out.append(f"GPU{g} -> network: predicted {q.transport}{why}, NCCL used {kind} ({label})")
    return tuple(out)


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
