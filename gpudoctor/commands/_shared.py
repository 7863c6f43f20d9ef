"""What several commands share: loading rules, opening the host, refusing an unusable --python, the plan."""

from __future__ import annotations

import sys
from pathlib import Path
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
    snapshot: Optional[str],
    python: list[str],
    timeout: Optional[float],
    inspect_python: bool = True,
    deep: bool = False,
) -> tuple[Any, str, Any]:
    """The host (live or a snapshot's), its source, and the run's deadline (--timeout, else the default
    profile's: profiles.resolve_timeout). With `inspect_python` (the command will judge a Python
    environment), the host starts inspecting it at once, in the background."""
    from ..host.base import Deadline, SnapshotError
    from ..host.open import open_host
    from ..profiles import DEFAULT, PROFILES, resolve_timeout

    if snapshot and python:
        raise CommandError(
            "--snapshot replays a recorded host, whose Python environment was recorded with it: "
            "--python cannot choose another one there; drop --python, or drop --snapshot to judge it live"
        )
    deadline = Deadline(resolve_timeout(PROFILES[DEFAULT], timeout, deep))
    try:
        host, source = open_host(snapshot, python, deadline)
    except SnapshotError as e:
        raise CommandError(str(e)) from None
    if inspect_python:
        host.inspect_python_early()
    return host, source, deadline


def check_one(
    snapshot: Optional[str],
    python: list[str],
    rules: tuple[str, ...],
    policy: Optional[str],
    timeout: Optional[float],
) -> Any:
    """One check (the workstation profile) of one environment, for the commands that act on its result
    (fix, explain); bad rule files and policies, and an unusable --python, are CommandErrors."""
    from ..engine.loader import RuleLoadError
    from ..pipeline.check import run_checks
    from ..policy import PolicyError, load

    try:
        pol = load(policy)
        host, source, deadline = collect(snapshot, python, timeout)
        results = run_checks(host, source, deadline, list(rules), policy=pol)
    except RuleLoadError as e:
        raise problems("rule files have", e) from None
    except PolicyError as e:
        raise problems("policy has", e) from None
    refuse_bad_python(results)
    return results[0]


def refuse_bad_python(results: list) -> None:
    """An interpreter named with --python that could not be inspected: exit 2, one line, no report. Each
    Result names the target it judged (Result.target), and what chose it."""
    for result in results:
        if result.target.chosen_by != "--python":
            continue
        exe = result.facts.get("python.executable")
        if not exe.known:
            why = exe.unknown or "unknown"
            raise CommandError(
                f"--python: {why}"
                if why.startswith("inspecting ")
                else f"--python: inspecting {result.target.python} failed: {why}"
            )


def parse_mirrors(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """--index-mirror ORIGINAL=MIRROR values: each side a plain http(s) URL (no credentials: a refused
    value is echoed with its password redacted)."""
    from ..redact import redact_url_secrets
    from ..remedy.patterns import URL

    out = []
    for value in values:
        original, sep, mirror = value.partition("=")
        if not sep or not URL.match(original) or not URL.match(mirror):
            raise CommandError(
                f"--index-mirror {redact_url_secrets(repr(value))}: expected ORIGINAL=MIRROR, two plain "
                "http(s) URLs without credentials (pip reads those from netrc or a keyring) "
                "(e.g. https://download.pytorch.org/whl/=https://mirror.example/pytorch/whl/)"
            )
        out.append((original, mirror))
    return tuple(out)


def make_plan(result: Any, mirrors: tuple[tuple[str, str], ...] = ()) -> Any:
    from ..knowledge import KnowledgeError
    from ..plan import build_plan

    try:
        return build_plan(result.findings, result.facts, mirrors=mirrors)
    except KnowledgeError as e:
        raise problems("knowledge tables have", e) from None


def plan_json(result: Any, fix_plan: Any) -> dict:
    """The plan's JSON data, sealed with its basis and digest (a saved plan `fix --plan` can apply)."""
    from ..plan_file import basis, seal
    from ..report import plan_report

    host = {
        "kind": result.host_kind,
        "source": result.source,
        "hostname": result.facts.value("host.hostname"),
    }
    return seal(plan_report.plan_data(fix_plan, host), basis(result.findings, result.facts))


def where_checked(result: Any) -> str:
    hostname = result.facts.value("host.hostname")
    where = "live check" if result.host_kind == "live" else f"snapshot {result.source}"
    return where + (f" of {hostname}" if hostname else "")


def print_plan(
    result: Any, fmt: str, mirrors: tuple[tuple[str, str], ...] = (), output: Optional[str] = None
) -> None:
    """The plan as text or JSON on stdout; with `output`, also saved there as JSON."""
    import json

    from ..report import plan_report

    fix_plan = make_plan(result, mirrors)
    if output:
        from ..datafiles import write_output

        try:
            write_output(Path(output), json.dumps(plan_json(result, fix_plan), indent=2) + "\n")
        except OSError as e:
            raise CommandError(f"-o {output}: {e.strerror or e}") from None
    if fmt == "json":
        sys.stdout.write(json.dumps(plan_json(result, fix_plan), indent=2) + "\n")
        return
    sys.stdout.write(plan_report.render_text(fix_plan, where_checked(result)))
    if output:
        sys.stdout.write(
            f"Saved to {output}: apply exactly this plan with `gpudoctor fix --plan {output}`.\n"
        )


def report_width() -> int:
    """A plain report's width: the terminal's when stdout is one (so that two-column parts wrap inside
    it), else 100 as always."""
    if sys.stdout.isatty():
        import shutil

        return min(100, shutil.get_terminal_size((100, 24)).columns)
    return 100


def warn(message: str) -> None:
    from ..report.safe import terminal_lines

    sys.stderr.write(terminal_lines(f"gpudoctor: {message}\n"))
