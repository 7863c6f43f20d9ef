"""Merge node reports into a fleet: the fleet rules evaluated over all nodes, and the exit code policy.

One function (evaluate) runs every rule of the table in rules.py; values come from the reports' facts
trees, where an unknown fact is {"unknown": reason} and a list's count is the length of its array. The
peer rules (rules/fleet/peers.yaml, and users' --rules) are ordinary rules over the records stage's facts
(records.py); judge_peers turns their findings into fleet findings.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

from ..engine.model import SEVERITY_RANK, Rule
from ..facts import Facts
from ..pipeline.verdict import EXIT_CANNOT_CHECK
from ..pipeline.verdict import exit_code as findings_exit_code
from .load import Invalid, Loaded, NodeFinding, NodeReport, facts_of
from .rules import FLEET_RULES, MIN_VALUES, FleetRule, percent

NAMES_IN_MESSAGE = 20  # nodes a message names before "and N more" (JSON carries them all)


@dataclass(frozen=True)
class FleetFinding:
    rule: FleetRule
    key: Optional[str]  # the group (`by` value): "torch", "NVIDIA H200"; None without by
    value: Any  # drift: the value these nodes have; outlier, slower: None (see gpus)
    majority: Any  # the most common value; None when values tie (drift); slower: the group's median
    majority_count: int  # nodes (drift) or GPUs (outlier) that have it; slower: 0
    compared: int  # nodes (drift), GPUs (outlier) or values (slower) compared in the group
    nodes: tuple[str, ...]
    gpus: tuple[tuple[str, int, Any], ...]  # outlier, slower: (node, GPU index, value)
    message: str
    items: tuple[int, ...] = ()  # slower: each of gpus' position in its node's list (`bench[3]`)

    @property
    def severity(self) -> str:
        return self.rule.severity


@dataclass(frozen=True)
class Group:
    key: Optional[str]
    majority: Any  # None when tied (drift); slower: the median, None when not compared
    values: tuple[tuple[Any, int], ...]  # (value, nodes or GPUs), most common first; slower: none
    # slower: how many known values, the lowest and the highest, their unit; compared when there are enough
    count: int = 0
    lowest: Any = None
    highest: Any = None
    unit: str = ""
    compared: bool = True


@dataclass(frozen=True)
class FleetRuleResult:
    rule: FleetRule
    status: str  # fired | passed | not compared (no node had a known value; slower: no group had enough)
    groups: tuple[Group, ...]
    unknown: tuple[tuple[str, str], ...]  # (node, reason) where the value is unknown
    findings: tuple[FleetFinding, ...]


@dataclass(frozen=True)
class RuleSummary:
    """One node rule across the fleet: which nodes it fired on."""

    rule: str
    severity: str
    title: str
    nodes: tuple[str, ...]
    findings: int


@dataclass
class Fleet:
    nodes: list[NodeReport]  # sorted by name
    results: list[FleetRuleResult]
    invalid: list[Invalid]
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    ignore: dict[str, str] = field(default_factory=dict)  # fleet rule id -> why a policy ignores it
    peer_results: list[FleetRuleResult] = field(default_factory=list)  # the peer rules', after results

    @property
    def findings(self) -> list[FleetFinding]:
        """Most severe first; then in rule-table order (the peer rules after), each rule's findings in its
        own order. Findings of rules the policy ignores are not among them (see ignored_findings)."""
        results = self.results + self.peer_results
        found = (f for r in results if r.rule.id not in self.ignore for f in r.findings)
        return sorted(found, key=lambda f: -SEVERITY_RANK[f.severity])

    @property
    def ignored_findings(self) -> list[tuple[FleetFinding, str]]:
        return [
            (f, self.ignore[r.rule.id])
            for r in self.results + self.peer_results
            if r.rule.id in self.ignore
            for f in r.findings
        ]

    def fleet_counts(self) -> dict[str, int]:
        return _count(f.severity for f in self.findings)

    def node_counts(self) -> dict[str, int]:
        return _count(f.severity for n in self.nodes for f in n.findings)

    @property
    def gpus(self) -> int:
        return sum(len(_items(n.facts, "gpus")[0] or []) for n in self.nodes)


def merge(
    loaded: Loaded,
    rules: tuple[FleetRule, ...] = FLEET_RULES,
    ignore: Optional[dict[str, str]] = None,
    peer_rules: Optional[list[Rule]] = None,
) -> Fleet:
    """`ignore`: fleet rule id -> reason (a policy's `[ignore]`); their findings are kept apart.
    `peer_rules`: the rules over the records stage's facts; None: the shipped rules/fleet/peers.yaml."""
    nodes = sorted(loaded.nodes, key=lambda n: _natural(n.name))
    return Fleet(
        nodes=nodes,
        results=evaluate(rules, nodes),
        invalid=list(loaded.invalid),
        duplicates=dict(loaded.duplicates),
        ignore=dict(ignore or {}),
        peer_results=judge_peers(shipped_peer_rules() if peer_rules is None else peer_rules, nodes),
    )


@dataclass(frozen=True)
class Verdict:
    """The fleet's exit code, computed once per run (verdict()) and handed to every renderer."""

    code: int
    fail_on: str
    skip_invalid: bool = False


def verdict(fleet: Fleet, fail_on: str, skip_invalid: bool = False) -> Verdict:
    return Verdict(exit_code(fleet, fail_on, skip_invalid), fail_on, skip_invalid)


def exit_code(fleet: Fleet, fail_on: str, skip_invalid: bool = False) -> int:
    """2 when no report could be read, or any could not be and skip_invalid is off; else like check."""
    if not fleet.nodes or (fleet.invalid and not skip_invalid):
        return EXIT_CANNOT_CHECK
    return findings_exit_code([*fleet.findings, *(f for n in fleet.nodes for f in n.findings)], fail_on)


def sorted_node_findings(node: NodeReport) -> list[NodeFinding]:
    return sorted(
        node.findings,
        key=lambda f: (-SEVERITY_RANK[f.severity], f.gpu if f.gpu is not None else -1, f.rule, f.item or 0),
    )


def by_rule(nodes: list[NodeReport]) -> list[RuleSummary]:
    """Node findings gathered by rule: most severe first, then the rules that fired on most nodes."""
    first: dict[str, NodeFinding] = {}
    on: dict[str, list[str]] = {}
    count: dict[str, int] = {}
    for n in nodes:
        for f in n.findings:
            first.setdefault(f.rule, f)
            count[f.rule] = count.get(f.rule, 0) + 1
            names = on.setdefault(f.rule, [])
            if not names or names[-1] != n.name:
                names.append(n.name)
    out = [RuleSummary(r, f.severity, f.title, tuple(on[r]), count[r]) for r, f in first.items()]
    return sorted(out, key=lambda r: (-SEVERITY_RANK[r.severity], -len(r.nodes), r.rule))


# --- reading values out of a facts tree ------------------------------------------------------------


_PREFIX = re.compile(r"[.\[]")


def lookup(facts: Any, path: str) -> tuple[Any, Optional[str]]:
    """(value, None) for a known fact, (None, reason) otherwise: the reason it is unknown, "not in
    report", "null in report", "not a value" (an object or a list of objects). `x.count` of a list is its
    length. `facts` is a node's Facts (a facts tree is read as one)."""
    if not isinstance(facts, Facts):
        facts = facts_of(facts)
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
        whole = path[: -len(".count")]
        if whole in facts and facts.get(whole).known and isinstance(facts.get(whole).value, list):
            return len(facts.get(whole).value), None
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


def _member(facts: Facts, member: str, field_: str) -> tuple[Any, Optional[str]]:
    return lookup(facts, f"{member}.{field_}")


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value  # lookup's values are flat


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- the rules -------------------------------------------------------------------------------------


def evaluate(rules: tuple[FleetRule, ...], nodes: list[NodeReport]) -> list[FleetRuleResult]:
    """Every fleet rule over the nodes, in table order."""
    kinds = {"drift": _drift, "outlier": _outlier, "slower": _slower}
    return [kinds[r.kind](r, nodes) for r in rules]


def shipped_peer_rules() -> list[Rule]:
    """rules/fleet/peers.yaml, validated as every rule file is; RuleLoadError lists every problem."""
    from ..datafiles import shipped_rules_dir
    from ..engine.loader import load_rules

    return load_rules([str(shipped_rules_dir() / "fleet" / "peers.yaml")], include_shipped=False)


def judge_peers(rules: list[Rule], nodes: list[NodeReport]) -> list[FleetRuleResult]:
    """The peer rules over the fleet's records: each finding is a record (a value of a group of peers)
    and names the GPUs or nodes that have it."""
    from ..engine.evaluate import evaluate_rule
    from .records import record_facts, records

    if not rules:
        return []
    found = records(nodes)
    facts = record_facts(found)
    out = []
    for rule in rules:
        result = evaluate_rule(rule, facts)
        as_fleet = FleetRule(rule.id, rule.title, rule.severity, "peers", "peers[].value", "", rule.why)
        findings = tuple(_peer_finding(as_fleet, found[f.item or 0], f.message) for f in result.findings)
        status = {"fired": "fired", "passed": "passed"}.get(result.status, "not compared")
        out.append(FleetRuleResult(as_fleet, status, (), (), findings))
    return out


def _peer_finding(rule: FleetRule, record: Any, message: str) -> FleetFinding:
    nodes = tuple(dict.fromkeys(m.node for m in record.members))
    return FleetFinding(
        rule=rule,
        key=record.group,
        value=record.value,
        majority=record.median,
        majority_count=0,
        compared=record.peers,
        nodes=nodes,
        gpus=tuple((m.node, m.gpu, m.value) for m in record.members if m.gpu is not None),
        message=message,
    )


def _split(fact: str) -> tuple[str, str]:
    """`gpus[].pcie.width_current` -> ("gpus", "pcie.width_current")."""
    head, _, rest = fact.partition("[].")
    return head, rest


def _node_values(rule: FleetRule, node: NodeReport) -> tuple[dict[Optional[str], Any], Optional[str]]:
    """A drift rule's value(s) on one node: {group key: value}, or the reason it is unknown."""
    if "[]" not in rule.fact:
        value, reason = lookup(node.facts, rule.fact)
        return ({} if reason else {None: _hashable(value)}), reason
    list_name, field_ = _split(rule.fact)
    members, reason = _items(node.facts, list_name)
    if members is None:
        return {}, reason
    by = _split(rule.by)[1] if rule.by else None
    distinct: dict[Optional[str], list] = {}
    for m in members:
        key = None
        if by is not None:
            key, key_reason = _member(node.facts, m, by)
            if key_reason is not None:
                continue
            key = str(key)
        value, value_reason = _member(node.facts, m, field_)
        if value_reason is None:
            values = distinct.setdefault(key, [])
            if _hashable(value) not in values:
                values.append(_hashable(value))
    # One value per group: the value itself, or the node's distinct values together when they differ.
    return {k: v[0] if len(v) == 1 else tuple(sorted(v, key=str)) for k, v in distinct.items()}, None


def _ranked(counts: dict[Any, int]) -> list[tuple[Any, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))


def _drift(rule: FleetRule, nodes: list[NodeReport]) -> FleetRuleResult:
    groups: dict[Optional[str], dict[Any, list[str]]] = {}
    unknown = []
    for node in nodes:
        values, reason = _node_values(rule, node)
        if reason is not None:
            unknown.append((node.name, reason))
        for key, value in values.items():
            groups.setdefault(key, {}).setdefault(value, []).append(node.name)
    out_groups, findings = [], []
    for key in _sorted_keys(groups):
        by_value = groups[key]
        ranked = _ranked({v: len(names) for v, names in by_value.items()})
        tied = len(ranked) > 1 and ranked[0][1] == ranked[1][1]
        majority = None if tied else ranked[0][0]
        out_groups.append(Group(key, _json(majority), tuple((_json(v), c) for v, c in ranked)))
        if len(ranked) < 2:
            continue
        compared = sum(c for _, c in ranked)
        for value, _ in ranked:
            if value == majority and not tied:
                continue
            names = tuple(by_value[value])
            findings.append(
                FleetFinding(
                    rule=rule,
                    key=key,
                    value=_json(value),
                    majority=_json(majority),
                    majority_count=0 if tied else ranked[0][1],
                    compared=compared,
                    nodes=names,
                    gpus=(),
                    message=_drift_message(rule, key, value, names, compared, ranked, tied),
                )
            )
    return _result(rule, out_groups, unknown, findings)


class _Seen(NamedTuple):  # a tuple: a fleet of 20,000 nodes makes a million of them
    """One known number of a per-member rule: its group, node and member."""

    key: Optional[str]
    node: NodeReport
    value: Any
    member: str  # the member's fact prefix: `gpus[3]`, `bench[12]`

    @property
    def item(self) -> int:
        """The member's position in the node's list."""
        return int(self.member[self.member.rindex("[") + 1 : -1])

    @property
    def gpu(self) -> int:
        """The member's `index`, else its `gpu` (bench[] has no index), else its position. Only findings
        name GPUs, so this is read for them alone."""
        for field_ in ("index", "gpu"):
            value, _ = _member(self.node.facts, self.member, field_)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return self.item


def _member_values(
    rule: FleetRule, nodes: list[NodeReport], measured: bool = False
) -> tuple[list[_Seen], list[tuple[str, str]]]:
    """Every known number of a per-member rule (`gpus[].<field>`, `bench[].value`), and per node the first
    reason one was not known: the list is not there or unknown, or a member's value is unknown or not a
    number. `measured`: a member whose `status` is there and not "ok" (or unknown) is left out the same
    way."""
    list_name, field_ = _split(rule.fact)
    by = _split(rule.by)[1] if rule.by else None
    seen: list[_Seen] = []
    unknown = []
    for node in nodes:
        members, reason = _items(node.facts, list_name)
        if members is None:
            unknown.append((node.name, reason or ""))
            continue
        first_reason = None
        for m in members:
            key = None
            if by is not None:
                raw_key, _ = _member(node.facts, m, by)
                key = None if raw_key is None else str(raw_key)
            value, value_reason = _member(node.facts, m, field_)
            if value_reason is None and not _number(value):
                value_reason = "not a number"
            where = field_
            if measured:
                status_reason = _not_measured(node.facts, m)
                if status_reason is not None:
                    where, value_reason = "status", status_reason
            if value_reason is not None:
                first_reason = first_reason or f"{m}.{where}: {value_reason}"
                continue
            seen.append(_Seen(key, node, value, m))
        if first_reason:
            unknown.append((node.name, first_reason))
    return seen, unknown


def _not_measured(facts: Facts, member: str) -> Optional[str]:
    """Why a measurement does not count: its `status` is not "ok" (`timed out`) or is unknown. A list
    without a status has every member count."""
    status, reason = _member(facts, member, "status")
    if reason == "not in report" or status == "ok":
        return None
    return reason or str(status)


def _sorted_keys(keys: Any) -> list[Optional[str]]:
    return sorted(keys, key=lambda k: (k is not None, k or ""))


def _outlier(rule: FleetRule, nodes: list[NodeReport]) -> FleetRuleResult:
    seen, unknown = _member_values(rule, nodes)
    counts: dict[Optional[str], dict[Any, int]] = {}
    for v in seen:
        counts.setdefault(v.key, {})
        counts[v.key][v.value] = counts[v.key].get(v.value, 0) + 1
    out_groups, norms = [], {}
    for key in _sorted_keys(counts):
        ranked = _ranked(counts[key])
        top = [v for v, c in ranked if c == ranked[0][1]]
        # A tie for most common: the better value is the norm, since being on the good side is no finding.
        norm = max(top) if rule.worse == "lower" else min(top)
        norms[key] = (norm, counts[key][norm], sum(counts[key].values()))
        out_groups.append(Group(key, norm, tuple(ranked)))
    odd: dict[tuple[Optional[str], str], list[tuple[int, Any]]] = {}
    for v in seen:
        norm = norms[v.key][0]
        if (v.value < norm) if rule.worse == "lower" else (v.value > norm):
            odd.setdefault((v.key, v.node.name), []).append((v.gpu, v.value))
    findings = []
    for (key, node_name), gpus in odd.items():
        norm, norm_count, compared = norms[key]
        findings.append(
            FleetFinding(
                rule=rule,
                key=key,
                value=None,
                majority=norm,
                majority_count=norm_count,
                compared=compared,
                nodes=(node_name,),
                gpus=tuple((node_name, g, v) for g, v in gpus),
                message=_outlier_message(rule, key, node_name, gpus, norm, norm_count, compared),
            )
        )
    return _result(rule, out_groups, unknown, findings)


def _slower(rule: FleetRule, nodes: list[NodeReport]) -> FleetRuleResult:
    seen, unknown = _member_values(rule, nodes, measured=True)
    values: dict[Optional[str], list[_Seen]] = {}
    for v in seen:
        values.setdefault(v.key, []).append(v)
    out_groups, medians = [], {}
    for key in _sorted_keys(values):
        numbers = [v.value for v in values[key]]
        unit, _ = _member(values[key][0].node.facts, values[key][0].member, "unit")
        compared = len(numbers) >= MIN_VALUES
        if compared:
            medians[key] = _median(numbers)
        out_groups.append(
            Group(
                key,
                medians.get(key),
                (),
                count=len(numbers),
                lowest=min(numbers),
                highest=max(numbers),
                unit=unit if isinstance(unit, str) else "",
                compared=compared,
            )
        )
    slow: dict[tuple[Optional[str], str], list[_Seen]] = {}
    for v in seen:
        if v.key in medians and v.value < rule.tolerance * medians[v.key]:  # type: ignore[operator]
            slow.setdefault((v.key, v.node.name), []).append(v)
    findings = []
    units = {g.key: g.unit for g in out_groups}
    for (key, node_name), found in slow.items():
        median, compared = medians[key], len(values[key])
        findings.append(
            FleetFinding(
                rule=rule,
                key=key,
                value=None,
                majority=median,
                majority_count=0,
                compared=compared,
                nodes=(node_name,),
                gpus=tuple((node_name, v.gpu, v.value) for v in found),
                message=_slower_message(rule, key, node_name, found, median, compared, units[key]),
                items=tuple(v.item for v in found),
            )
        )
    return _result(rule, out_groups, unknown, findings)


def _median(numbers: list) -> Any:
    """The median; of whole numbers, whole when it is (x16, not x16.0, between two x16)."""
    median = statistics.median(numbers)
    whole = all(isinstance(n, int) for n in numbers) and float(median).is_integer()
    return int(median) if whole else median


def _result(rule: FleetRule, groups: list, unknown: list, findings: list) -> FleetRuleResult:
    status = "fired" if findings else ("passed" if any(g.compared for g in groups) else "not compared")
    return FleetRuleResult(rule, status, tuple(groups), tuple(unknown), tuple(findings))


# --- messages --------------------------------------------------------------------------------------


def show(rule: FleetRule, value: Any) -> str:
    """A value as messages show it: x16, gen 5, "2.28.9, 2.28.3", none."""
    if isinstance(value, (tuple, list)):
        return ", ".join(rule.fmt.format(v) for v in value) if value else "none"
    return "unknown" if value is None else rule.fmt.format(value)


def what(rule: FleetRule, key: Optional[str]) -> str:
    return rule.what.format(key=key if key is not None else "unknown")


def name_list(names: Sequence[str], limit: int = NAMES_IN_MESSAGE) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _drift_message(
    rule: FleetRule,
    key: Optional[str],
    value: Any,
    names: tuple[str, ...],
    compared: int,
    ranked: list[tuple[Any, int]],
    tied: bool,
) -> str:
    n = len(names)
    head = f"{n} of {_nodes(compared)} {'has' if n == 1 else 'have'} {what(rule, key)} {show(rule, value)}"
    if tied:
        spread = ", ".join(f"{show(rule, v)} on {c}" for v, c in ranked)
        return f"{head} (no value is the most common: {spread}): {name_list(names)}"
    top, top_count = ranked[0]
    verb = "has" if top_count == 1 else "have"
    return f"{head} where {top_count} {verb} {show(rule, top)}: {name_list(names)}"


def _outlier_message(
    rule: FleetRule,
    key: Optional[str],
    node: str,
    gpus: list[tuple[int, Any]],
    norm: Any,
    norm_count: int,
    compared: int,
) -> str:
    by_value: dict[Any, list[int]] = {}
    for gpu, value in gpus:
        by_value.setdefault(value, []).append(gpu)
    parts = [
        f"{show(rule, v)} on GPU{'s' if len(g) > 1 else ''} {', '.join(str(x) for x in g)}"
        for v, g in by_value.items()
    ]
    model = f"{key} GPUs" if key is not None else "GPUs"
    return (
        f"{node}: {what(rule, key)} {'; '.join(parts)}, where {norm_count} of {compared} {model} "
        f"in the fleet {'has' if norm_count == 1 else 'have'} {show(rule, norm)}"
    )


def with_unit(rule: FleetRule, value: Any, unit: str) -> str:
    """A measurement as messages show it: "731.2 TFLOP/s"."""
    return show(rule, value) + (f" {unit}" if unit else "")


def _which(v: _Seen) -> str:
    """The GPU(s) a measurement is of: "GPU 3"; p2p "GPU 0 to 3"; an all-reduce "8 GPUs"."""
    peer, _ = _member(v.node.facts, v.member, "peer")
    if isinstance(peer, int) and not isinstance(peer, bool):
        return f"GPU {v.gpu} to {peer}"
    gpus, _ = _member(v.node.facts, v.member, "gpus")
    if isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 1:
        return f"{gpus} GPUs"
    return f"GPU {v.gpu}"


def _slower_message(
    rule: FleetRule,
    key: Optional[str],
    node: str,
    found: list[_Seen],
    median: Any,
    compared: int,
    unit: str,
) -> str:
    # floor, not round: a value under 90% of the median never reads as 90%
    parts = [
        f"{with_unit(rule, v.value, unit)} on {_which(v)} ({math.floor(100 * v.value / median)}%)"
        if median
        else f"{with_unit(rule, v.value, unit)} on {_which(v)}"
        for v in found
    ]
    shown = ", ".join(parts[:NAMES_IN_MESSAGE])
    if len(parts) > NAMES_IN_MESSAGE:
        shown += f" and {len(parts) - NAMES_IN_MESSAGE} more"
    return (
        f"{node}: {what(rule, key)} {shown}, where the median of {compared} in the fleet is "
        f"{with_unit(rule, median, unit)} and under {percent(rule.tolerance or 0)} of it is slower"
    )


# --- small helpers ---------------------------------------------------------------------------------


def _count(severities: Any) -> dict[str, int]:
    out = {"error": 0, "warning": 0, "info": 0}
    for s in severities:
        out[s] += 1
    return out


_DIGITS = re.compile(r"(\d+)")


def _natural(name: str) -> list:
    """gpu-2 before gpu-10 (digits compared as numbers, without int(): a name may be any length)."""
    key = []
    for part in _DIGITS.split(name):
        digits = part.lstrip("0") or "0"
        key.append((0, len(digits), digits, part) if part.isdigit() else (1, 0, part, ""))
    return key
