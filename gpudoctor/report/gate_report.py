"""`fleet REPORTS --image REF` (or `--lock FILE`): per group of nodes, whether the image or lockfile runs
there and why not; the whole run's exit code. Text for people, JSON for a deploy pipeline or an admission
webhook (schema gpudoctor.gate, version 1)."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..pipeline.gate import Group
from ..subject import finding_side, kind_of
from .json_report import finding_data
from .lines import Line, finding_lines, plain_text, side_words
from .plan_report import step_lines
from .safe import safe_line

SCHEMA = "gpudoctor.gate"
SCHEMA_VERSION = 1
MAX_NAMES = 6  # node names listed in a group's line; the rest are counted


def exit_code(groups: list[Group]) -> int:
    """1 when some group would refuse or crash it (a finding at or above --fail-on), else 2 when some group
    could not be judged and its verdict says that fails, else 0: the worst group's."""
    codes = {g.verdict.code for g in groups}
    return 1 if 1 in codes else max(codes, default=0)


def _outcome(group: Group) -> str:
    if group.verdict.code == 1:
        n = len(group.verdict.failing)
        return f"does not run: {n} finding{'s' if n != 1 else ''} at or above {group.verdict.fail_on}"
    if group.verdict.code == 2:
        return "could not be judged: " + ", ".join(group.verdict.unknown_errors)
    return "runs"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMES])
    return shown + (f", and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")


def build_lines(groups: list[Group], what: str, plans: list, width: int = 100) -> list[Line]:
    """`plans`: each group's fix plan (plan.FixPlan) where it does not run it, else None."""
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
        style = {0: "green", 1: "bold red", 2: "yellow"}[g.verdict.code]
        lines.append([("  " + _outcome(g), style)])
        for f in g.verdict.failing:
            lines += finding_lines(f, width, side_words(kind, finding_side(kind, f)))
        if plan is not None and plan.steps:
            lines.append([("  What would make it run (the plan for this group):", "bold")])
            for n, step in enumerate(plan.steps, 1):
                lines += [[("  " + text, "")] for text in step_lines(n, step, width - 2)]
        lines.append([])
    failing = [g for g in groups if g.verdict.code == 1]
    code = exit_code(groups)
    if failing:
        n = sum(len(g.nodes) for g in failing)
        text = f"{len(failing)} of {len(groups)} groups ({n} of {nodes} nodes) would not run it"
    else:
        text = "every group runs it" if code == 0 else "some groups could not be judged"
    lines.append([("Verdict: ", "bold"), (f"{text} (exit {code})", "bold red" if code == 1 else "bold")])
    return [safe_line(line) for line in lines]


def render_text(groups: list[Group], what: str, plans: list, width: int = 100) -> str:
    return plain_text(build_lines(groups, what, plans, width))


def render_json(groups: list[Group], kind: str, name: str, plans: list) -> str:
    """`plans`: each group's plan as `plan --format json` gives it, or None where it runs."""
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
                "unknown_rules": {
                    r.rule.id: dict(r.unknown_facts) for r in g.result.results if r.status == "unknown"
                },
                "plan": plan,
            }
            for g, plan in zip(groups, plans)
        ],
    }
    return json.dumps(data, indent=2, default=str) + "\n"
