"""`fleet REPORTS --image REF` (or `--lock FILE`): per group of nodes, whether the image or lockfile runs
there and why not; the whole run's exit code. Text for people, JSON for a deploy pipeline or an admission
webhook (schema gpudoctor.gate, version 1).

Where a machine's groups do not all run it, the report adds what would run on every group at once: the
steps of the plan for all of them together (pipeline/gate.py Everywhere) that change the image or the
lockfile, apart from the node side (driver upgrade, reboot), which each group's own plan gives."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..pipeline.gate import Everywhere, Gate, Group
from ..subject import finding_side, kind_of
from .json_report import finding_data
from .lines import Line, finding_lines, plain_text, side_words
from .plan_report import step_lines
from .safe import safe_line

SCHEMA = "gpudoctor.gate"
SCHEMA_VERSION = 1
MAX_NAMES = 6  # node names listed in a group's line; the rest are counted
NODE_KINDS = ("driver", "reboot")  # plan steps carried out on the node, not in the image or lockfile


def exit_code(groups: list[Group]) -> int:
    """1 when some group would refuse or crash it (a finding at or above --fail-on), else 2 when some group
    could not be judged and its verdict says that fails, else 0: the worst group's."""
    codes = {g.verdict.code for g in groups}
    return 1 if 1 in codes else max(codes, default=0)


def _outcome(verdict: Any) -> Line:
    """The verdict's line, indented under its group, in its colour."""
    if verdict.code == 1:
        n = len(verdict.failing)
        text = f"does not run: {n} finding{'s' if n != 1 else ''} at or above {verdict.fail_on}"
    elif verdict.code == 2:
        text = "could not be judged: " + ", ".join(verdict.unknown_errors)
    else:
        text = "runs"
    return [("  " + text, {0: "green", 1: "bold red", 2: "yellow"}[verdict.code])]


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMES])
    return shown + (f", and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")


def fixing_steps(verdict: Any, plan: Any) -> list[int]:
    """The numbers (from 1) of the plan's steps for a finding at or above --fail-on: what makes it run. The
    plan's other steps (warnings below it, notes) are left to `gpudoctor plan` on the node."""
    failing = {f.rule.id for f in verdict.failing}
    return [n for n, step in enumerate(plan.steps, 1) if failing & set(step.rules)]


def subject_steps(every: Everywhere, plan: Any) -> list[int]:
    """Of fixing_steps(), those that change the subject rather than the node: not a driver upgrade or a
    reboot, and for a finding that is the subject's or both sides' (subject.side)."""
    kind = kind_of(every.result.target.chosen_by)
    sides = {f.rule.id: finding_side(kind, f) for f in every.verdict.failing}
    return [
        n
        for n in fixing_steps(every.verdict, plan)
        if plan.steps[n - 1].kind not in NODE_KINDS
        and any(sides.get(rule, "host") != "host" for rule in plan.steps[n - 1].rules)
    ]


def _steps(plan: Any, numbers: list[int], width: int) -> list[Line]:
    """The steps `numbers` of the plan, numbered again from 1, indented under their group."""
    lines: list[Line] = []
    for shown, n in enumerate(numbers, 1):
        lines += [[("  " + text, "")] for text in step_lines(shown, plan.steps[n - 1], width - 2)]
    return lines


def _everywhere_lines(every: Everywhere, plan: Any, width: int) -> list[Line]:
    kind = kind_of(every.result.target.chosen_by)
    noun = "image" if kind == "image" else "lockfile"
    lines: list[Line] = [
        [(f"Every group of {every.machine} nodes at once ({every.groups} groups)", "bold")],
        [
            (
                f"  judged on the lowest driver among them, {every.driver}, with every GPU model: "
                + ", ".join(every.gpus),
                "dim",
            )
        ],
        _outcome(every.verdict),
    ]
    numbers = subject_steps(every, plan) if plan is not None else []
    if numbers:
        lines.append([(f"  What in the {noun} would make it run on every group:", "bold")])
        lines += _steps(plan, numbers, width)
    elif every.verdict.code == 1:
        lines.append(
            [(f"  No change to the {noun} alone runs on every group: each group's plan above says", "")]
        )
    return lines + [[]]


def build_lines(gate: Gate, what: str, plans: list, every_plans: list, width: int = 100) -> list[Line]:
    """`plans`: each group's fix plan (plan.FixPlan) where it does not run it, else None; `every_plans`:
    the same for each of gate.everywhere."""
    groups = gate.groups
    nodes = sum(len(g.nodes) for g in groups)
    lines: list[Line] = [
        [
            ("gpudoctor ", "bold"),
            (__version__, "bold"),
            (
                f" · {what} on {nodes} node{'s' if nodes != 1 else ''} in {len(groups)} group"
                f"{'s' if len(groups) != 1 else ''}",
                "",
            ),
        ],
        [],
    ]
    for g, plan in zip(groups, plans):
        kind = kind_of(g.result.target.chosen_by)
        lines.append(
            [(f"{g.gpu} · driver {g.driver} · {g.machine}", "bold"), (f" · {_names(g.nodes)}", "dim")]
        )
        lines.append(_outcome(g.verdict))
        for f in g.verdict.failing:
            lines += finding_lines(f, width, side_words(kind, finding_side(kind, f)))
        for f, why in g.result.ignored_findings:
            lines.append([(f"  ignored by policy: {f.rule.id} ({f.severity}): {why}", "dim")])
        numbers = fixing_steps(g.verdict, plan) if plan is not None else []
        if numbers:
            lines.append([("  What would make it run (the plan for this group):", "bold")])
            lines += _steps(plan, numbers, width)
        lines.append([])
    for every, plan in zip(gate.everywhere, every_plans):
        lines += _everywhere_lines(every, plan, width)
    failing = [g for g in groups if g.verdict.code == 1]
    code = exit_code(groups)
    if failing:
        n = sum(len(g.nodes) for g in failing)
        text = f"{len(failing)} of {len(groups)} groups ({n} of {nodes} nodes) would not run it"
    else:
        text = "every group runs it" if code == 0 else "some groups could not be judged"
    lines.append([("Verdict: ", "bold"), (f"{text} (exit {code})", "bold red" if code == 1 else "bold")])
    return [safe_line(line) for line in lines]


def render_text(gate: Gate, what: str, plans: list, every_plans: list, width: int = 100) -> str:
    return plain_text(build_lines(gate, what, plans, every_plans, width))


def render_json(gate: Gate, kind: str, name: str, plans: list, every_plans: list) -> str:
    """`plans`: each group's plan as `plan --format json` gives it, or None where it runs; `every_plans`:
    (plan.FixPlan, its JSON) for each of gate.everywhere, or None where it runs."""
    groups = gate.groups
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "subject": {"kind": "image" if kind == "image" else "lockfile", "name": name},
        "summary": {
            "groups": len(groups),
            "nodes": sum(len(g.nodes) for g in groups),
            "failing_groups": sum(1 for g in groups if g.verdict.code == 1),
            "failing_nodes": sum(len(g.nodes) for g in groups if g.verdict.code == 1),
            "exit_code": exit_code(groups),
        },
        "groups": [
            {
                "gpu": g.gpu,
                "driver": g.driver,
                "machine": g.machine,
                "nodes": list(g.nodes),
                "runs": g.verdict.code == 0,
                "exit_code": g.verdict.code,
                "fail_on": g.verdict.fail_on,
                "findings": [finding_data(f, kind) for f in g.result.findings],
                "ignored_findings": [
                    dict(finding_data(f, kind), reason=why) for f, why in g.result.ignored_findings
                ],
                "unknown_rules": {
                    r.rule.id: dict(r.unknown_facts) for r in g.result.results if r.status == "unknown"
                },
                "plan": plan,
            }
            for g, plan in zip(groups, plans)
        ],
        "every_group": [
            {
                "machine": e.machine,
                "driver": e.driver,
                "gpus": list(e.gpus),
                "groups": e.groups,
                "runs": e.verdict.code == 0,
                "exit_code": e.verdict.code,
                "findings": [finding_data(f, kind) for f in e.result.findings],
                "subject_steps": subject_steps(e, pair[0]) if pair else [],
                "plan": pair[1] if pair else None,
            }
            for e, pair in zip(gate.everywhere, every_plans)
        ],
    }
    return json.dumps(data, indent=2, default=str) + "\n"
