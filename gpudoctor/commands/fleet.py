"""`gpudoctor fleet`: merge per-node JSON reports into one fleet view; one verdict for all renderers."""

from __future__ import annotations

import sys
from typing import Optional

from . import CommandError, problems, use_color
from ._shared import warn


def run(
    paths: tuple[str, ...],
    fmt: str = "text",
    fail_on: str = "error",
    skip_invalid: bool = False,
    policy: Optional[str] = None,
    rules: tuple[str, ...] = (),
    image: Optional[str] = None,
    lock: Optional[str] = None,
) -> int:
    """`policy`: a policy file whose `[ignore]` entries for fleet rules (GD-FLEET-*) are ignored here, with
    their reasons; its other entries are check's. `rules`: users' rule files over the fleet's records,
    loaded beside the shipped ones (rules/fleet/). `image`, `lock`: judge that on each group of nodes
    instead of merging (gate())."""
    if image or lock:
        return gate(paths, fmt, fail_on, skip_invalid, rules, image, lock, policy)
    from ..fleet.load import load_reports
    from ..fleet.merge import merge, verdict
    from ..report import fleet_report
    from ..report.safe import terminal_text

    fleet_rules = _fleet_rules(rules)
    ignore = _fleet_ignores(policy, {r.id for r in fleet_rules}) if policy else {}
    merged = merge(load_reports(list(paths)), fleet_rules, ignore)
    for bad in merged.invalid:
        warn(terminal_text(f"cannot use {bad.file}: {bad.reason}"))
    v = verdict(merged, fail_on, skip_invalid)  # the one verdict, handed to whichever renderer
    if fmt == "json":
        sys.stdout.write(fleet_report.render_json(merged, v))
    elif fmt == "markdown":
        sys.stdout.write(fleet_report.render_markdown(merged, v))
    elif use_color():
        fleet_report.print_rich(merged, v)
    else:
        sys.stdout.write(fleet_report.render_text(merged, v))
    return v.code


def _fleet_rules(paths: tuple[str, ...]) -> list:
    """The shipped fleet rules and users' own (`--rules`), validated as `check --rules` validates."""
    from ..engine.loader import RuleLoadError
    from ..fleet.merge import shipped_fleet_rules

    try:
        return shipped_fleet_rules(paths)
    except RuleLoadError as e:
        raise problems("rule files have", e) from None


def _fleet_ignores(path: str, ids: set[str]) -> dict[str, str]:
    from ..policy import PolicyError, load

    try:
        pol = load(path)
    except PolicyError as e:
        raise problems("policy has", e) from None
    if pol is None:
        return {}
    # A policy's other ids are check's; a GD-FLEET-* id must name a fleet rule.
    ignore = {rid: why for rid, why in pol.ignore if rid.startswith("GD-FLEET-") or rid in ids}
    unknown = sorted(set(ignore) - ids)
    if unknown:
        raise CommandError(
            f"{pol.path}: ignore.{unknown[0]}: no such fleet rule (`gpudoctor rules list` shows them)"
        )
    return ignore


def gate(
    paths: tuple[str, ...],
    fmt: str,
    fail_on: str,
    skip_invalid: bool,
    rules: tuple[str, ...],
    image: Optional[str],
    lock: Optional[str],
    policy: Optional[str] = None,
) -> int:
    """`fleet REPORTS --image REF` / `--lock FILE`: the subject judged on each group of nodes (pipeline/
    gate.py), by check's rules (and `--rules`, check rule files here) under check's policy (`--policy`, else
    the one check would find here), --fail-on aside."""
    from ..engine.loader import RuleLoadError
    from ..fleet.load import load_reports
    from ..host.base import Deadline
    from ..host.facts_only import FactsOnlyHost
    from ..pipeline.gate import Node, judge_fleet
    from ..policy import PolicyError, load
    from ..report import gate_report
    from ..report.safe import terminal_text
    from ._shared import make_plan, plan_json
    from .check import open_subject, refuse_subject_conflicts

    refuse_subject_conflicts(image, lock, [], False, False)
    if fmt == "markdown":
        raise CommandError("--image and --lock report as text or json")
    loaded = load_reports(list(paths), whole=True)
    for bad in loaded.invalid:
        warn(terminal_text(f"cannot use {bad.file}: {bad.reason}"))
    if not loaded.nodes:
        raise CommandError("no usable node report to judge it on")
    nodes = [Node(n.name, n.file, n.facts) for n in loaded.nodes]
    try:
        pol = load(policy)
        gate = judge_fleet(
            nodes,
            lambda machine, python: open_subject(FactsOnlyHost(), image, lock, machine, python),
            list(rules),
            fail_on,
            Deadline(30.0),
            pol,
            per_python=bool(lock),
        )
    except RuleLoadError as e:
        raise problems("rule files have", e) from None
    except PolicyError as e:
        raise problems("policy has", e) from None
    # What would make each group that does not run it run it: the image's (or lockfile's) side and the
    # node's, as `plan` gives them for one host.
    plans = [make_plan(g.result) if g.verdict.code == 1 else None for g in gate.groups]
    # And what would run on every group of a machine at once (pipeline/gate.py weakest()).
    every = [make_plan(e.result) if e.verdict.code == 1 else None for e in gate.everywhere]
    if fmt == "json":
        plan_data = [plan_json(g.result, p) if p else None for g, p in zip(gate.groups, plans)]
        every_data = [(p, plan_json(e.result, p)) if p else None for e, p in zip(gate.everywhere, every)]
        kind = "image" if image else "lock"
        sys.stdout.write(gate_report.render_json(gate, kind, str(image or lock), plan_data, every_data))
    else:
        what = f"image {image}" if image else f"lockfile {lock}"
        sys.stdout.write(gate_report.render_text(gate, what, plans, every))
    code = gate_report.exit_code(gate.groups)
    return 2 if loaded.invalid and not skip_invalid and code == 0 else code
