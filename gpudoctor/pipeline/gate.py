"""An image or a lockfile judged on every group of a fleet's nodes (`fleet REPORTS --image REF`, `--lock
FILE`), before it is rolled out: nodes with the same GPU model, driver and machine answer alike, so each
group is judged once, on its first node's report.

A group's facts are the node's, from its report, for the machine's side (driver, GPUs, kernel, the
container toolkit's mode), and the subject's for its own side (its Python environment, container variables,
CUDA libraries), collected once by the probes through the subject's view of a node known only from its
report (host/facts_only.py). They are derived again and judged by the same rules as `check`.
"""

from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple

from ..collect import Collection
from ..facts import Fact, head
from ..host.base import Deadline
from ..profiles import PROFILES
from ..subject import IMAGE_SIDE, LOCK_SIDE, NEUTRAL, Subject
from .check import Environment, choose_probes, choose_rules, judge
from .result import Result, Target, Verdict
from .verdict import decide

# The node's, though in a section the subject fills: how its container toolkit is set up.
NODE_OWNED = ("container.toolkit_",)
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
    """The facts of the subject's own side (IMAGE_SIDE or LOCK_SIDE sections), collected once by those of
    the `chosen` probes that produce them."""
    sections = IMAGE_SIDE if subject.kind == "image" else LOCK_SIDE
    mine = [p for p in chosen if any(head(prefix) in sections for prefix in p[1])]
    items, missing, _statuses = Collection(subject.host, deadline, mine).gather()
    keep = {k: v for k, v in items.items() if head(k) in sections and not k.startswith(NODE_OWNED)}
    return keep, {k: v for k, v in missing.items() if k in sections}


def judge_fleet(
    nodes: list[Node],
    open_subject: Callable[[str], Subject],
    rule_paths: list[str],
    fail_on: str,
    deadline: Deadline,
) -> list[Group]:
    """Each group judged: `open_subject(machine)` gives the subject as a node of that machine runs it (an
    image index gives each architecture its own image), read once per machine."""
    started = time.monotonic()
    probes, chosen = choose_probes(PROFILES["workstation"], None, False, False, None)
    by_machine: dict[str, tuple] = {}
    out = []
    for key, members in groups_of(nodes):
        machine = key[2]
        if machine not in by_machine:
            subject = open_subject(machine)
            choice = choose_rules(probes, chosen, rule_paths, None, deadline, subject.facts)
            by_machine[machine] = (subject, choice, *subject_side(subject, chosen, deadline))
        subject, choice, mine, mine_missing = by_machine[machine]
        node = members[0]
        target = Target(subject.name, "--image" if subject.kind == "image" else "--lock")
        env = Environment(target, {**node_side(node.facts, subject.kind), **mine}, dict(mine_missing), [])
        result = judge(env, choice, started, host_kind="report", source=node.file)
        out.append(Group(*key, [m.name for m in members], result, decide(result, fail_on)))
    return out


def node_side(facts: Any, kind: str) -> dict[str, Fact]:
    """The node's facts for the machine's side: not the subject's sections (its own environment's, from
    the report, are not what is judged) nor what was derived from them (knowledge.*, derived again)."""
    drop = set(IMAGE_SIDE if kind == "image" else LOCK_SIDE) | set(NEUTRAL)
    return {k: v for k, v in facts.items() if head(k) not in drop or k.startswith(NODE_OWNED)}
