"""An image or a lockfile judged on every group of a fleet's nodes (`fleet REPORTS --image REF`, `--lock
FILE`), before it is rolled out: nodes with the same GPU model, driver and machine answer alike, so each
group is judged once, on its first node's report.

A group's facts are the node's, from its report, for the machine's side (driver, GPUs, kernel, the
container toolkit's mode), and the subject's for its own side (its Python environment, container variables,
CUDA libraries), collected once by the probes through the subject's view of a node known only from its
report (host/facts_only.py). They are derived again and judged by the same rules as `check`.

Where a machine's groups do not all run it, the subject is judged once more for all of them together, on
weakest(): the lowest driver among them and every GPU model they hold. The resolvers' answers are monotone
in both (a wheel whose CUDA the lowest driver runs runs on every newer one; kernels for every compute
capability serve each), so what that plan changes on the subject's side runs on every group.
"""

from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple, Optional

from ..collect import Collection
from ..compat import version_tuple
from ..facts import Fact, Facts, head, list_facts, unknown
from ..host.base import Deadline
from ..policy import Policy
from ..profiles import PROFILES
from ..subject import NEUTRAL, Subject, owned, owns, sections
from .check import Environment, choose_probes, choose_rules, judge
from .result import Result, Target, Verdict
from .verdict import decide

NO_GPU = "no GPU"


class Node(NamedTuple):
    name: str
    file: str
    facts: Any  # Facts: the node's whole report


class Group(NamedTuple):
    gpu: str  # the first GPU's model, or NO_GPU
    driver: str
    machine: str
    nodes: list[str]  # their names, in the fleet's order
    result: Result
    verdict: Verdict


class Everywhere(NamedTuple):
    """The subject judged for every group of one machine at once, on weakest() of their nodes."""

    machine: str
    driver: str  # the lowest driver among the groups
    gpus: list[str]  # every GPU model among them
    groups: int  # how many groups it stands for
    result: Result
    verdict: Verdict


class Gate(NamedTuple):
    groups: list[Group]
    everywhere: list[Everywhere]  # one per machine with two or more groups, not all of which run it


def group_key(facts: Any) -> tuple[str, str, str]:
    """(GPU model, driver version, machine) of a node: what decides how an image or a lockfile fares."""
    return (
        str(facts.value("gpus[0].name") or NO_GPU),
        str(facts.value("driver.version") or "unknown"),
        str(facts.value("system.machine") or "unknown"),
    )


def groups_of(nodes: list[Node]) -> list[tuple[tuple[str, str, str], list[Node]]]:
    """The nodes by group_key, groups in the order their first node comes."""
    found: dict[tuple[str, str, str], list[Node]] = {}
    for node in nodes:
        found.setdefault(group_key(node.facts), []).append(node)
    return list(found.items())


def subject_side(
    subject: Subject, chosen: list, deadline: Deadline
) -> tuple[dict[str, Fact], dict[str, str]]:
    """The facts the subject decides (subject.owns: its IMAGE_SIDE or LOCK_SIDE sections, IMAGE_OWNED),
    collected once by those of the `chosen` probes that produce them."""
    kind = subject.kind
    heads = set(sections(kind)) | {head(name) for name in owned(kind)}
    mine = [p for p in chosen if any(head(prefix) in heads for prefix in p[1])]
    items, missing, _statuses = Collection(subject.host, deadline, mine).gather()
    keep = {k: v for k, v in items.items() if owns(kind, k)}
    return keep, {k: v for k, v in missing.items() if k in sections(kind)}


def judge_fleet(
    nodes: list[Node],
    open_subject: Callable[[str, Optional[str]], Subject],
    rule_paths: list[str],
    fail_on: str,
    deadline: Deadline,
    policy: Optional[Policy] = None,
    per_python: bool = False,
) -> Gate:
    """Each group judged, then each machine's groups together where some do not run it (Everywhere).
    `open_subject(machine, python)` gives the subject as a node of that machine runs it (an image index
    gives each architecture its own image), read once per machine; with `per_python` (a lockfile, which is
    installed with the node's interpreter) once per machine and node Python version (python.version of its
    report), else `python` is None. `policy`: check's, applied as check applies it (its requirements, its
    ignored rules)."""
    started = time.monotonic()
    probes, chosen = choose_probes(PROFILES["workstation"], None, False, False, None)
    opened: dict[tuple, tuple] = {}

    def on(node: Node, machine: str) -> tuple[Result, Verdict]:
        python = str(node.facts.value("python.version") or "") if per_python else None
        if (machine, python) not in opened:
            subject = open_subject(machine, python)
            choice = choose_rules(probes, chosen, rule_paths, policy, deadline, subject.facts)
            opened[machine, python] = (subject, choice, *subject_side(subject, chosen, deadline))
        subject, choice, mine, mine_missing = opened[machine, python]
        target = Target(subject.name, "--image" if subject.kind == "image" else "--lock")
        env = Environment(target, {**node_side(node.facts, subject.kind), **mine}, dict(mine_missing), [])
        result = judge(
            env,
            choice,
            started,
            host_kind="report",
            source=node.file,
            policy=policy.path if policy else None,
            ignore=dict(policy.ignore) if policy else {},
        )
        return result, decide(result, fail_on)

    groups = []
    for key, members in groups_of(nodes):
        groups.append(Group(*key, [m.name for m in members], *on(members[0], key[2])))
    everywhere = []
    for machine in dict.fromkeys(g.machine for g in groups):
        mine = [g for g in groups if g.machine == machine]
        if len(mine) < 2 or all(g.verdict.code == 0 for g in mine):
            continue
        firsts = {g.nodes[0] for g in mine}
        node = weakest([n for n in nodes if n.name in firsts and group_key(n.facts)[2] == machine])
        gpus = [str(node.facts.value(f"gpus[{i}].name") or NO_GPU) for i in range(node.facts.count("gpus"))]
        driver = str(node.facts.value("driver.version") or "unknown")
        everywhere.append(Everywhere(machine, driver, gpus, len(mine), *on(node, machine)))
    return Gate(groups, everywhere)


def weakest(nodes: list[Node]) -> Node:
    """One node standing for all of `nodes` (each group's first node, of one machine): the facts of the
    one with the lowest driver (an unknown driver is the lowest), its GPUs replaced by one of each model
    among them all (by name, from the first node holding it). A node whose GPUs are unknown makes them
    unknown."""
    lowest = min(nodes, key=lambda n: version_tuple(str(n.facts.value("driver.version") or "")))
    items = {k: v for k, v in lowest.facts.items() if head(k) != "gpus"}
    models: dict[str, dict[str, Fact]] = {}
    for node in nodes:
        count = node.facts.get("gpus.count")
        if not count.known:
            # a report gives a section it could not read as one unknown fact, `gpus`
            section = node.facts.get("gpus") if "gpus" in node.facts else count
            items["gpus.count"] = unknown(f"node {node.name}: {section.unknown}", "report")
            return Node(lowest.name, lowest.file, Facts(items, lowest.facts.missing))
        its = [(k, v) for k, v in node.facts.items() if head(k) == "gpus"]
        for i in range(node.facts.count("gpus")):
            prefix = f"gpus[{i}]."
            member = {k[len(prefix) :]: v for k, v in its if k.startswith(prefix)}
            models.setdefault(str(node.facts.value(f"gpus[{i}].name") or f"{node.name} GPU {i}"), member)
    items.update(list_facts("gpus", list(models.values()), "every GPU model of the groups"))
    return Node(lowest.name, lowest.file, Facts(items, lowest.facts.missing))


def node_side(facts: Any, kind: str) -> dict[str, Fact]:
    """The node's facts for the machine's side: not the subject's sections (its own environment's, from
    the report, are not what is judged) nor what was derived from them (knowledge.*, derived again)."""
    return {k: v for k, v in facts.items() if not owns(kind, k) and head(k) not in NEUTRAL}
