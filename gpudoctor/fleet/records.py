"""The fleet's records stage: counters and rates of each GPU set beside those of its peers, as facts.

A fixed threshold cannot say whether 40 corrected ECC errors or 1,300 MHz under load is odd; the GPU's peers
can. For each counter below, every GPU (or bench measurement) of the fleet is placed in its group of peers
(the same GPU model; a bench measurement: the same model and test), and each distinct value of a group is
one record of the `peers[]` list (FACT_SPECS below): the value, how many have it
and which, the group's median and most common value, and the value's deviation and ratio from the median.
Ordinary rules judge them (rules/fleet/peers.yaml, and users' own with `gpudoctor fleet --rules FILE`).

Reports carry no node role, so the peers are the GPU model alone. One record per distinct value, not per
GPU: a healthy fleet's counters are mostly equal, so 20,000 nodes make a few hundred records.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from ..facts import Facts, FactSpec, known, list_facts, unknown

# The facts only `gpudoctor fleet` produces, from the nodes' reports; rules/fleet/peers.yaml reads them.
FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("peers.count", "int", "", "fleet: distinct (counter, peer group, value) records of the fleet"),
    FactSpec(
        "peers[].counter",
        "str",
        "",
        "fleet: what is compared: `ecc_corrected`, `pcie_replays`, `pcie_aer_correctable`, `nvlink_errors`, "
        "`xid_events` or `sm_clock_under_load` (docs/fleet.md lists the report fact each is read from)",
    ),
    FactSpec(
        "peers[].group",
        "str",
        "",
        "fleet: the peers compared: the GPU model (gpus[].name); for a node-wide counter the node's GPU "
        "models; for a bench measurement its bench[].group (`<gpu_name> <test>`)",
    ),
    FactSpec("peers[].value", "float", "", "fleet: the value these GPUs (or nodes) have"),
    FactSpec("peers[].unit", "str", "", "fleet: what the value counts: `corrected ECC errors`, `MHz`, ..."),
    FactSpec("peers[].count", "int", "", "fleet: how many GPUs (or nodes) of the group have this value"),
    FactSpec("peers[].peers", "int", "", "fleet: how many known values the group has (this one among them)"),
    FactSpec("peers[].median", "float", "", "fleet: the median of the group's values"),
    FactSpec("peers[].mode", "float", "", "fleet: the group's most common value (of a tie, the lowest)"),
    FactSpec("peers[].deviation", "float", "", "fleet: peers[].value - peers[].median"),
    FactSpec(
        "peers[].ratio",
        "float",
        "",
        "fleet: peers[].value / peers[].median, to 3 places; unknown where the median is 0",
    ),
    FactSpec(
        "peers[].where",
        "list[str]",
        "",
        "fleet: the GPUs (or nodes) that have the value, `gpu-node-04 GPU 5`, the first 20 and then "
        "`and N more`",
    ),
)


class NodeReport(Protocol):
    """What the records stage reads of a node (fleet/load.py's NodeReport, which imports READS from here)."""

    name: str
    facts: Facts


MIN_PEERS = 3  # a median of fewer values says nothing about which one is off
WHERE_NAMES = 20  # GPUs a record's `where` names before "and N more" (a finding's JSON carries them all)


@dataclass(frozen=True)
class Counter:
    name: str  # peers[].counter
    list_name: str  # the report list it is read from
    fields: tuple[str, ...]  # summed; the value is unknown when any is
    unit: str
    by: str  # the member field that names the peer group


# What the records compare; the fact each is read from is in docs/fleet.md (from this table).
COUNTERS = (
    Counter("ecc_corrected", "gpus", ("ecc.corrected_volatile",), "corrected ECC errors", "name"),
    Counter("pcie_replays", "gpus", ("pcie.replay_counter",), "PCIe replays", "name"),
    Counter(
        "pcie_aer_correctable", "gpu_health", ("pcie.aer_correctable",), "correctable PCIe AER errors", "name"
    ),
    Counter(
        "nvlink_errors",
        "gpu_health",
        tuple(f"nvlink.{e}_errors" for e in ("replay", "recovery", "crc_flit", "crc_data")),
        "NVLink errors",
        "name",
    ),
    Counter("xid_events", "xid", ("events",), "Xid events", "gpu"),  # per GPU: xid[].gpu, its model
    Counter("sm_clock_under_load", "bench", ("sm_mhz",), "MHz", "group"),
)

# Every report fact the records stage reads (fleet/load.py keeps these of each report).
READS = tuple(
    sorted(
        {f"{c.list_name}[].{f}" for c in COUNTERS for f in c.fields + (c.by,)}
        | {"gpus[].index", "gpu_health[].index", "bench[].gpu", "bench[].status", "xid.count"}
    )
)


@dataclass(frozen=True)
class Member:
    node: str
    gpu: Optional[int]
    value: Any


@dataclass(frozen=True)
class Record:
    """One record of peers[]: a counter's value in a group, and the GPUs that have it. A counter that no
    group could compare has one record whose value is unknown, so that its rules say "not compared"
    rather than "passed"."""

    counter: Counter
    group: str
    value: Any
    members: tuple[Member, ...]
    peers: int
    median: Any
    mode: Any

    def facts(self) -> dict[str, Any]:
        if self.value is None:
            return {"counter": self.counter.name, "unit": self.counter.unit, "peers": self.peers}
        ratio = round(self.value / self.median, 3) if self.median else None
        shown = self.members[:WHERE_NAMES]
        where = [m.node if m.gpu is None else f"{m.node} GPU {m.gpu}" for m in shown]
        if len(self.members) > WHERE_NAMES:
            where.append(f"and {len(self.members) - WHERE_NAMES} more")
        return {
            "counter": self.counter.name,
            "group": self.group,
            "value": self.value,
            "unit": self.counter.unit,
            "count": len(self.members),
            "peers": self.peers,
            "median": self.median,
            "mode": self.mode,
            "deviation": self.value - self.median,
            "ratio": ratio,
            "where": where,
        }


def records(nodes: list[NodeReport]) -> list[Record]:
    """Every counter's records, in COUNTERS order; in each, the groups by name and their values ascending.
    A group of fewer than MIN_PEERS known values makes none; a counter without any, one with its value
    unknown (NOT_COMPARED)."""
    out: list[Record] = []
    for counter in COUNTERS:
        before = len(out)
        groups: dict[str, list[Member]] = {}
        for node in nodes:
            for group, member in _values(counter, node):
                groups.setdefault(group, []).append(member)
        for group in sorted(groups):
            members = groups[group]
            if len(members) < MIN_PEERS:
                continue
            numbers = [m.value for m in members]
            median = _whole(statistics.median(numbers))
            by_value: dict[Any, list[Member]] = {}
            for m in members:
                by_value.setdefault(m.value, []).append(m)
            mode = min(by_value, key=lambda v: (-len(by_value[v]), v))
            out += [
                Record(counter, group, value, tuple(by_value[value]), len(members), median, mode)
                for value in sorted(by_value)
            ]
        if len(out) == before:
            out.append(Record(counter, "", None, (), 0, None, None))
    return out


NOT_COMPARED = "no group of the fleet has 3 or more known values (same GPU model) to compare"


def record_facts(found: list[Record]) -> Facts:
    """The records as the facts rules read: peers.count and peers[i].<field>."""
    members = []
    for r in found:
        facts = {k: known(v, "fleet") for k, v in r.facts().items() if v is not None}
        if r.value is None:
            facts.update({k: unknown(NOT_COMPARED, "fleet") for k in ("value", "median", "deviation")})
            facts["ratio"] = unknown(NOT_COMPARED, "fleet")
        members.append(facts)
    return Facts(list_facts("peers", members, "fleet"))


def _values(counter: Counter, node: NodeReport) -> Iterator[tuple[str, Member]]:
    """(peer group, member) for each known value of a counter on one node."""
    facts = node.facts
    if counter.list_name == "xid":
        yield from _xid_values(counter, node)
        return
    for i in range(_count(facts, counter.list_name)):
        item = f"{counter.list_name}[{i}]"
        if counter.list_name == "bench" and _get(facts, f"{item}.status") not in (None, "ok"):
            continue
        value = _sum(facts, item, counter.fields)
        group = _get(facts, f"{item}.{counter.by}")
        if value is None or not isinstance(group, str):
            continue
        gpu = _get(facts, f"{item}.{'gpu' if counter.list_name == 'bench' else 'index'}")
        yield group, Member(node.name, gpu if isinstance(gpu, int) else i, value)


def _xid_values(counter: Counter, node: NodeReport) -> Iterator[tuple[str, Member]]:
    """Xid events per GPU (xid[].events summed by xid[].gpu); a GPU with none has 0. Only where the node's
    kernel log was read (xid.count known); an event on a GPU NVML does not list is not counted here."""
    facts = node.facts
    if _count(facts, "xid", default=None) is None:
        return
    events: dict[int, int] = {}
    for i in range(_count(facts, "xid")):
        gpu, n = _get(facts, f"xid[{i}].gpu"), _get(facts, f"xid[{i}].events")
        if isinstance(gpu, int) and _number(n):
            events[gpu] = events.get(gpu, 0) + n
    for i in range(_count(facts, "gpus")):
        index, name = _get(facts, f"gpus[{i}].index"), _get(facts, f"gpus[{i}].name")
        if isinstance(index, int) and isinstance(name, str):
            yield name, Member(node.name, index, events.get(index, 0))


def _count(facts: Facts, list_name: str, default: Optional[int] = 0) -> Any:
    count = facts.value(f"{list_name}.count")
    if isinstance(count, int):
        return count
    if facts.value(list_name) == []:
        return 0  # an empty list in a report has no count of its own
    return default


def _get(facts: Facts, name: str) -> Any:
    return facts.value(name)  # None when unknown or absent


def _sum(facts: Facts, item: str, fields: tuple[str, ...]) -> Any:
    values = [_get(facts, f"{item}.{f}") for f in fields]
    if not all(_number(v) for v in values):
        return None
    return sum(values)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(median: Any) -> Any:
    return int(median) if isinstance(median, float) and median.is_integer() else median
