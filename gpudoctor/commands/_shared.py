"""What several commands share: loading rules, opening the host, refusing an unusable --python, the plan."""

from __future__ import annotations

import sys
from typing import Any, Optional

from . import CommandError, problems


def load_rules(paths: list[str]) -> list:
    from ..engine.loader import RuleLoadError
    from ..engine.loader import load_rules as load

    try:
        return load(paths)
    except RuleLoadError as e:
        raise problems("rule files have", e) from None


def collect(
    snapshot: Optional[str], python: list[str], timeout: float, inspect_python: bool = True
) -> tuple[Any, str, Any]:
    """The host (live or a snapshot's), its source, and the run's deadline. With `inspect_python` (the
    command will judge a Python environment), the host starts inspecting it at once, in the background."""
    from ..host.base import Deadline, SnapshotError
    from ..host.open import open_host

    if snapshot and python:
        raise CommandError(
            "--snapshot replays a recorded host, whose Python environment was recorded with it: "
            "--python cannot choose another one there; drop --python, or drop --snapshot to judge it live"
        )
    deadline = Deadline(timeout)
    try:
        host, source = open_host(snapshot, python, deadline)
    except SnapshotError as e:
        raise CommandError(str(e)) from None
    if inspect_python:
        host.inspect_python_early()
    return host, source, deadline


def refuse_bad_python(results: list, pythons: list[str]) -> None:
    """An interpreter named with --python that could not be inspected: exit 2, one line, no report."""
    for result, python in zip(results, pythons):
        exe = result.facts.get("python.executable")
        if not exe.known:
            why = exe.unknown or "unknown"
            raise CommandError(
                f"--python: {why}"
                if why.startswith("inspecting ")
                else f"--python: inspecting {python} failed: {why}"
            )


def print_plan(result: Any, fmt: str) -> None:
    from ..knowledge import KnowledgeError
    from ..plan import build_plan
    from ..report import plan_report

    try:
        fix_plan = build_plan(result.findings, result.facts)
    except KnowledgeError as e:
        raise problems("knowledge tables have", e) from None
    hostname = result.facts.value("host.hostname")
    if fmt == "json":
        host = {"kind": result.host_kind, "source": result.source, "hostname": hostname}
        sys.stdout.write(plan_report.render_json(fix_plan, host))
        return
    where = "live check" if result.host_kind == "live" else f"snapshot {result.source}"
    sys.stdout.write(plan_report.render_text(fix_plan, where + (f" of {hostname}" if hostname else "")))


def warn(message: str) -> None:
    sys.stderr.write(f"gpudoctor: {message}\n")
