"""The fleet's records stage: what no single node can see, as facts that ordinary rules judge.

Two record lists (FACT_SPECS below), built from the nodes' reports:

- `drift[]`: a node-wide value that should be the same on every node (the driver, the torch version, the
  GPU count; DRIFTS). One record per distinct value of each compared fact: how many nodes have it and
  which, whether it is the fleet's one most common value, and the most common of the other values.
- `peers[]`: a number of each GPU (or bench measurement) beside those of its peers, the GPUs of the same
  model across the fleet (a bench measurement: the same model and test; COUNTERS). One record per distinct
  value of each group: how many have it and which, the group's median and most common value, and the
  value's deviation and ratio from the median. A fixed threshold cannot say whether 40 corrected ECC
  errors, a x8 link or 1,300 MHz under load is odd; the GPU's peers can.

Rules judge them (rules/fleet/*.yaml, and users' own with `gpudoctor fleet --rules FILE`). One record per
distinct value, not per node or GPU: a healthy fleet's values are mostly equal, so 20,000 nodes make a few
hundred records. A compared fact or counter of which no node has a value has one record whose value is
unknown, so that its rules say "not compared" rather than "passed". Reports carry no node role, so peers
are the GPU model alone.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple, Optional, Protocol

from ..facts import Facts, FactSpec, known, list_facts, unknown

# The facts only `gpudoctor fleet` produces, from the nodes' reports; rules/fleet/*.yaml read them.
FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("drift.count", "int", "", "fleet: distinct (report fact, group, value) records of the fleet"),
    FactSpec(
        "drift[].fact",
        "str",
        "",
        "fleet: the report fact compared across nodes: `driver.version`, `driver.max_cuda`, `nccl.versions`, "
        "`frameworks[].version` (by `frameworks[].name`), `gpus.count` or `gpus[].name`",
    ),
    FactSpec(
        "drift[].group", "str", "", "fleet: the group compared (a framework's name); absent without one"
    ),
    FactSpec(
        "drift[].value",
        "str",
        "",
        "fleet: the value these nodes have, as text; a node's distinct values of a per-item fact together, "
        "`2.28.9, 2.28.3`",
    ),
    FactSpec("drift[].count", "int", "", "fleet: how many nodes have this value"),
    FactSpec("drift[].peers", "int", "", "fleet: how many nodes of the fleet have a known value"),
    FactSpec(
        "drift[].common",
        "bool",
        "",
        "fleet: this is the fleet's most common value (false for every value when two tie for most common)",
    ),
    FactSpec("drift[].top", "str", "", "fleet: the most common of the other values (of a tie, the first)"),
    FactSpec("drift[].top_count", "int", "", "fleet: how many nodes have drift[].top"),
    FactSpec(
        "drift[].nodes",
        "list[str]",
        "",
        "fleet: the nodes that have the value, the first 20 and then `and N more`",
    ),
    FactSpec("peers.count", "int", "", "fleet: distinct (counter, peer group, value) records of the fleet"),
    FactSpec(
        "peers[].counter",
        "str",
        "",
        "fleet: what is compared: `ecc_corrected`, `pcie_replays`, `pcie_aer_correctable`, `nvlink_errors`, "
        "`xid_events`, `sm_clock_under_load`, `pcie_width`, `pcie_gen_max`, `nvlink_links_down`, "
        "`nvlink_links` or `bench` (docs/fleet.md lists the report fact each is read from)",
    ),
    FactSpec(
        "peers[].group",
        "str",
        "",
        "fleet: the peers compared: the GPU model (gpus[].name); for a node-wide counter the node's GPU "
        "models; for a bench measurement its bench[].group (`<gpu_name> <test>`)",
    ),
    FactSpec("peers[].value", "float", "", "fleet: the value these GPUs (or nodes) have"),
    FactSpec(
        "peers[].unit",
        "str",
        "",
        "fleet: what the value counts: `corrected ECC errors`, `MHz`, `lanes`; a bench measurement's own",
    ),
    FactSpec("peers[].count", "int", "", "fleet: how many GPUs (or nodes) of the group have this value"),
    FactSpec("peers[].peers", "int", "", "fleet: how many known values the group has (this one among them)"),
    FactSpec("peers[].median", "float", "", "fleet: the median of the group's values"),
    FactSpec(
        "peers[].mode",
        "float",
        "",
        "fleet: the group's most common value (of a tie, the better: the higher for a width, a generation "
        "or a link count, else the lower)",
    ),
    FactSpec(
        "peers[].mode_count", "int", "", "fleet: how many GPUs (or nodes) of the group have peers[].mode"
    ),
    FactSpec("peers[].deviation", "float", "", "fleet: peers[].value - peers[].median"),
    FactSpec(
        "peers[].ratio",
        "float",
        "",
        "fleet: peers[].value / peers[].median; unknown where the median is 0",
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
NAMES = 20  # nodes or GPUs a record names before "and N more" (a finding's JSON carries them all)


@dataclass(frozen=True)
class Drift:
    """A report fact compared across nodes."""

    fact: str  # `driver.version`; a per-item fact, `frameworks[].version`, gives a node its distinct values
    label: str  # how the fleet overview names it; `{group}` is the group
    by: Optional[str] = None  # a fact of the same list item that groups the comparison


DRIFTS = (
    Drift("driver.version", "driver version"),
    Drift("driver.max_cuda", "driver CUDA version"),
    Drift("nccl.versions", "NCCL versions"),
    Drift("frameworks[].version", "{group} version", by="frameworks[].name"),
    Drift("gpus.count", "GPU count"),
    Drift("gpus[].name", "GPU model"),
)


@dataclass(frozen=True)
class Counter:
    name: str  # peers[].counter
    list_name: str  # the report list it is read from
    fields: tuple[str, ...]  # summed; the value is unknown when any is
    unit: str  # "": each member's own `unit` (bench)
    by: str  # the member field that names the peer group
    better: str = "lower"  # of a tie for most common, the mode is the better value
    label: str = ""  # how the fleet overview names a group ("": not in the overview)
    fmt: str = "{}"  # how the overview shows a value


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
    Counter(
        "pcie_width", "gpus", ("pcie.width_current",), "lanes", "name", "higher", "PCIe width, {group}", "x{}"
    ),
    Counter(
        "pcie_gen_max", "gpus", ("pcie.gen_max",), "", "name", "higher", "PCIe generation, {group}", "gen {}"
    ),
    Counter(
        "nvlink_links_down",
        "gpus",
        ("nvlink.links_down",),
        "links",
        "name",
        "lower",
        "NVLink links down, {group}",
    ),
    Counter("nvlink_links", "gpus", ("nvlink.links",), "links", "name", "higher", "NVLink links, {group}"),
    Counter("bench", "bench", ("value",), "", "group", "higher", "{group}", "{:.1f}"),
)
BENCH_MEMBERS = ("unit", "peer", "gpus")  # what else a bench measurement's record reads: its unit, and
# for p2p and all-reduce the peer and the number of GPUs, so that `where` says which pair or how many

# Every report fact the records stage reads (fleet/load.py keeps these of each report).
READS = tuple(
    sorted(
        {f"{c.list_name}[].{f}" for c in COUNTERS for f in c.fields + (c.by,)}
        | {d.fact for d in DRIFTS}
        | {d.by for d in DRIFTS if d.by}
        | {f"bench[].{m}" for m in BENCH_MEMBERS}
        | {"gpus[].index", "gpu_health[].index", "bench[].gpu", "bench[].status", "xid.count", "gpus.count"}
    )
)


class Member(NamedTuple):  # a tuple: a fleet of 20,000 nodes makes a million of them
    """One node's (or GPU's, or measurement's) value of a compared fact."""

    node: str
    gpu: Optional[int]
    value: Any
    which: str = ""  # a bench measurement's GPUs, when not one: "GPU 0 to 3", "8 GPUs"

    @property
    def name(self) -> str:
        """How a record's `where` names it: `gpu-node-04 GPU 5`, `bench-node-02 GPU 0 to 3`,
        `bench-node-05 (8 GPUs)`, or the node alone."""
        if self.gpu is None:
            return self.node
        if self.which.endswith("GPUs"):
            return f"{self.node} ({self.which})"
        return f"{self.node} {self.which or f'GPU {self.gpu}'}"


@dataclass(frozen=True)
class Group:
    """A counter's values in one group of peers (or a drift fact's, across nodes)."""

    key: Optional[str]  # the GPU model, the framework's name; None for a drift fact without `by`
    values: dict[Any, list[Member]]  # in first-seen order
    unit: str = ""
    better: Optional[str] = None  # peers: "higher" or "lower"; drift: None

    @cached_property
    def ranked(self) -> list[tuple[Any, int]]:
        """(value, how many have it), most common first."""
        return sorted(((v, len(m)) for v, m in self.values.items()), key=lambda vc: (-vc[1], str(vc[0])))

    @cached_property
    def count(self) -> int:
        return sum(c for _, c in self.ranked)

    @property
    def compared(self) -> bool:
        return self.count >= MIN_PEERS

    @cached_property
    def mode(self) -> Any:
        """The most common value; of a tie, drift: None, peers: the better."""
        ranked = self.ranked
        top = [v for v, c in ranked if c == ranked[0][1]]
        if self.better is None:
            return None if len(top) > 1 else top[0]
        return max(top) if self.better == "higher" else min(top)

    @cached_property
    def median(self) -> Any:
        return _whole(statistics.median(v for v, m in self.values.items() for _ in m))


@dataclass(frozen=True)
class Record:
    """One record of drift[] or peers[]: a value of a group, and the nodes or GPUs that have it."""

    kind: str  # drift | peers
    what: Any  # its Drift or Counter
    group: Optional[Group]  # None: nothing to compare (the value is unknown)
    value: Any = None

    @property
    def members(self) -> list[Member]:
        return self.group.values[self.value] if self.group else []

    def facts(self) -> dict[str, Any]:
        names = [m.name for m in self.members[:NAMES]]
        if len(self.members) > NAMES:
            names.append(f"and {len(self.members) - NAMES} more")
        g = self.group
        assert g is not None
        if self.kind == "drift":
            others = [vc for vc in g.ranked[:2] if vc[0] != self.value]
            return {
                "fact": self.what.fact,
                "group": g.key,
                "value": show(self.value),
                "count": len(self.members),
                "peers": g.count,
                "common": self.value == g.mode,
                "top": show(others[0][0]) if others else None,
                "top_count": others[0][1] if others else None,
                "nodes": names,
            }
        return {
            "counter": self.what.name,
            "group": g.key,
            "value": self.value,
            "unit": g.unit,
            "count": len(self.members),
            "peers": g.count,
            "median": g.median,
            "mode": g.mode,
            "mode_count": len(g.values[g.mode]),
            "deviation": self.value - g.median,
            "ratio": self.value / g.median if g.median else None,
            "where": names,
        }


def show(value: Any) -> str:
    """A drift value as text: a node's several values together, "2.28.9, 2.28.3"; none."""
    if isinstance(value, (tuple, list)):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)


@dataclass
class Records:
    """The records stage's result: every compared fact's and counter's groups, and per node the first
    reason a value was unknown (for the fleet overview), and the records rules judge."""

    groups: dict[Any, list[Group]]  # Drift or Counter -> its groups, by key
    unknown: dict[Any, list[tuple[str, str]]]  # Drift or Counter -> (node, why its value is unknown)

    @property
    def records(self) -> list[Record]:
        """drift[] then peers[] records, each in DRIFTS / COUNTERS order, the groups by key, the values
        of a drift group most common first, of a peer group ascending. A peer group of fewer than
        MIN_PEERS values makes none."""
        out = []
        for what, groups in self.groups.items():
            kind = "drift" if isinstance(what, Drift) else "peers"
            before = len(out)
            for g in groups:
                if kind == "drift":
                    out += [Record(kind, what, g, v) for v, _ in g.ranked]
                elif g.compared:
                    out += [Record(kind, what, g, v) for v in sorted(g.values)]
            if len(out) == before:
                out.append(Record(kind, what, None))
        return out


def build(nodes: list[NodeReport]) -> Records:
    """The drift facts' and the counters' groups over the nodes, in DRIFTS / COUNTERS order."""
    groups: dict[Any, list[Group]] = {}
    unknown_on: dict[Any, list[tuple[str, str]]] = {}
    for what in (*DRIFTS, *COUNTERS):
        values: dict[Optional[str], Group] = {}
        why: list[tuple[str, str]] = []
        read = _drift_values if isinstance(what, Drift) else _counter_values
        for node in nodes:
            reason = None
            for key, member, unit in read(what, node):  # type: ignore[operator]
                if member is None:
                    reason = reason or unit
                    continue
                group = values.get(key) or values.setdefault(
                    key, Group(key, {}, unit, getattr(what, "better", None))
                )
                group.values.setdefault(member.value, []).append(member)
            if reason:
                why.append((node.name, reason))
        groups[what] = [values[k] for k in sorted(values, key=lambda k: (k is not None, k or ""))]
        unknown_on[what] = why
    return Records(groups, unknown_on)


def records(nodes: list[NodeReport]) -> list[Record]:
    return build(nodes).records


NOT_COMPARED = "no node of the fleet has a known value to compare"
NO_PEERS = "no group of the fleet has 3 or more known values (same GPU model) to compare"


def record_facts(found: list[Record]) -> Facts:
    """The records as the facts rules read: drift.count, drift[i].<field>, peers.count, peers[i].<field>."""
    lists: dict[str, list] = {"drift": [], "peers": []}
    for r in found:
        if r.group is None:
            reason = NOT_COMPARED if r.kind == "drift" else NO_PEERS
            name = {"fact": r.what.fact} if r.kind == "drift" else {"counter": r.what.name}
            facts = {k: known(v, "fleet") for k, v in name.items()}
            judged = ("value", "common") if r.kind == "drift" else ("value", "median", "deviation", "ratio")
            facts.update({k: unknown(reason, "fleet") for k in judged})
        else:
            facts = {k: known(v, "fleet") for k, v in r.facts().items() if v is not None}
            if r.kind == "peers" and "ratio" not in facts:
                facts["ratio"] = unknown("the median is 0", "fleet")
        lists[r.kind].append(facts)
    return Facts(
        {**list_facts("drift", lists["drift"], "fleet"), **list_facts("peers", lists["peers"], "fleet")}
    )


# --- reading values out of a node's facts ---------------------------------------------------------------

Read = Iterator[tuple[Optional[str], Optional[Member], str]]  # (group, member, unit) or (None, None, why)


def _drift_values(drift: Drift, node: NodeReport) -> Read:
    """A drift fact's value on one node, per group: the value, or a node's distinct values of a per-item
    fact together (sorted); or why it is unknown."""
    if "[]" not in drift.fact:
        value, reason = lookup(node.facts, drift.fact)
        if reason:
            yield None, None, reason
        else:
            yield None, Member(node.name, None, tuple(value) if isinstance(value, list) else value), ""
        return
    list_name, field_ = drift.fact.split("[].")
    members, reason = _items(node.facts, list_name)
    if members is None:
        yield None, None, reason or ""
        return
    by = drift.by.split("[].")[1] if drift.by else None
    distinct: dict[Optional[str], list] = {}
    for m in members:
        key = None
        if by is not None:
            key, key_reason = lookup(node.facts, f"{m}.{by}")
            if key_reason is not None:
                continue
            key = str(key)
        value, value_reason = lookup(node.facts, f"{m}.{field_}")
        if value_reason is None:
            value = tuple(value) if isinstance(value, list) else value
            values = distinct.setdefault(key, [])
            if value not in values:
                values.append(value)
    for key, values in distinct.items():
        one = values[0] if len(values) == 1 else tuple(sorted(values, key=str))
        yield key, Member(node.name, None, one), ""


def _counter_values(counter: Counter, node: NodeReport) -> Read:
    """(peer group, member, unit) for each known value of a counter on one node; and the first reason one
    was not known (a bench measurement whose status is not ok, a value that is not a number)."""
    facts = node.facts
    if counter.list_name == "xid":
        yield from _xid_values(counter, node)
        return
    members, reason = _items(facts, counter.list_name)
    if members is None:
        yield None, None, reason or ""
        return
    bench = counter.list_name == "bench"
    for item in members:
        if bench:
            status, why = lookup(facts, f"{item}.status")
            if why != "not in report" and status != "ok":
                yield None, None, f"{item}.status: {why or status}"
                continue
        values = [lookup(facts, f"{item}.{f}") for f in counter.fields]
        bad = next(
            ((f, why or "not a number") for f, (v, why) in zip(counter.fields, values) if not _number(v)),
            None,
        )
        if bad:
            yield None, None, f"{item}.{bad[0]}: {bad[1]}"
            continue
        group = _get(facts, f"{item}.{counter.by}")
        if not isinstance(group, str):
            continue
        gpu = _get(facts, f"{item}.{'gpu' if bench else 'index'}")
        gpu = gpu if isinstance(gpu, int) else int(item[item.rindex("[") + 1 : -1])
        unit = counter.unit or str(_get(facts, f"{item}.unit") or "")
        value = sum(v for v, _ in values)
        yield group, Member(node.name, gpu, value, _which(facts, item, gpu) if bench else ""), unit


def _which(facts: Facts, item: str, gpu: int) -> str:
    """The GPU(s) a measurement is of: "GPU 3"; p2p "GPU 0 to 3"; an all-reduce "8 GPUs"."""
    peer, gpus = _get(facts, f"{item}.peer"), _get(facts, f"{item}.gpus")
    if isinstance(peer, int) and not isinstance(peer, bool):
        return f"GPU {gpu} to {peer}"
    if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 1:
        return f"{gpus} GPUs"
    return f"GPU {gpu}"


def _xid_values(counter: Counter, node: NodeReport) -> Read:
    """Xid events per GPU (xid[].events summed by xid[].gpu); a GPU with none has 0. Only where the node's
    kernel log was read (xid.count known); an event on a GPU NVML does not list is not counted here."""
    facts = node.facts
    if not isinstance(facts.value("xid.count"), int) and facts.value("xid") != []:
        return
    events: dict[int, int] = {}
    for i in range(facts.count("xid")):
        gpu, n = _get(facts, f"xid[{i}].gpu"), _get(facts, f"xid[{i}].events")
        if isinstance(gpu, int) and _number(n):
            events[gpu] = events.get(gpu, 0) + n
    for i in range(facts.count("gpus")):
        index, name = _get(facts, f"gpus[{i}].index"), _get(facts, f"gpus[{i}].name")
        if isinstance(index, int) and isinstance(name, str):
            yield name, Member(node.name, index, events.get(index, 0)), counter.unit


_PREFIX = re.compile(r"[.\[]")


def lookup(facts: Facts, path: str) -> tuple[Any, Optional[str]]:
    """(value, None) for a known fact, (None, reason) otherwise: the reason it is unknown, "not in
    report", "null in report", "not a value" (an object or a list of objects). `x.count` of a list is its
    length."""
    if path in facts:
        fact = facts.get(path)
        if not fact.known:
            return None, fact.unknown
        value = fact.value
        if value is None:
            return None, "null in report"
        if isinstance(value, dict) or (
            isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value)
        ):
            return None, "not a value"
        return value, None
    if path.endswith(".count"):
        whole = facts.get(path[: -len(".count")])
        if whole.known and isinstance(whole.value, list):
            return len(whole.value), None
    return None, _absent(facts, path)


def _absent(facts: Facts, path: str) -> str:
    """Why a fact that is not there is not: an unknown section above it, or an object where a value was
    expected, or nothing in the report."""
    for m in _PREFIX.finditer(path):
        above = path[: m.start()]
        if above in facts:
            fact = facts.get(above)
            return fact.unknown if not fact.known else "not in report"  # type: ignore[return-value]
    if f"{path}.count" in facts or path in getattr(facts, "objects", ()):
        return "not a value"
    return "not in report"


def _items(facts: Facts, list_name: str) -> tuple[Optional[list[str]], Optional[str]]:
    """The members of a list that are objects, as fact prefixes (`gpus[0]`, ...), or why there are none."""
    count = facts.get(f"{list_name}.count")
    if f"{list_name}.count" in facts and count.known:
        return [f"{list_name}[{i}]" for i in range(count.value) if f"{list_name}[{i}]" not in facts], None
    if list_name in facts:
        fact = facts.get(list_name)
        if not fact.known:
            return None, fact.unknown
        return ([], None) if isinstance(fact.value, list) else (None, "not an array")
    reason = _absent(facts, list_name)
    return None, ("not an array" if reason == "not a value" else reason)


def _get(facts: Facts, name: str) -> Any:
    return facts.value(name)  # None when unknown or absent


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(median: Any) -> Any:
    return int(median) if isinstance(median, float) and median.is_integer() else median
