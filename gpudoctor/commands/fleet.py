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
) -> int:
    """`policy`: a policy file whose `[ignore]` entries for fleet rules (GD-FLEET-*) are ignored here, with
    their reasons; its other entries are check's. `rules`: users' rule files over the fleet's records,
    loaded beside the shipped ones (rules/fleet/)."""
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
