"""The JSON report. Its shape is versioned (SCHEMA_VERSION) and documented in docs/json-report.md.

Consumers may rely on every key listed there; new keys may appear within a version, none disappear.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from .. import __version__
from ..engine.model import Finding, FixStep
from ..pipeline.result import Result, Verdict
from ..subject import finding_side, kind_of

SCHEMA = "gpudoctor.report"
SCHEMA_VERSION = 1


def step_data(s: FixStep) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": s.kind, "argv": list(s.argv), "text": s.text}
    if s.resolver:  # the command is computed by the planner: `gpudoctor plan`
        data["resolver"] = s.resolver
        data["args"] = dict(s.args)
    return data


def finding_data(f: Finding, subject: str = "") -> dict[str, Any]:
    """`subject` ("image", "lock": check --image, --lock) adds whose the finding is (`side`)."""
    data = {
        "rule": f.rule.id,
        "severity": f.severity,
        "category": f.rule.category,
        "title": f.rule.title,
        "message": f.message,
        "why": f.why,
        "item": f.item,
        "fix": [step_data(s) for s in f.fix],
        "references": list(f.rule.references),
        "evidence": {name: value for name, value in f.evidence},
    }
    if subject:
        data["side"] = finding_side(subject, f)
    return data


def report_data(result: Result, verdict: Verdict, include_timing: bool = True) -> dict[str, Any]:
    """`verdict`: the run's, decided once by the caller (pipeline/verdict.py)."""
    counts = result.counts()
    subject = kind_of(result.target.chosen_by)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "host": {
            "kind": result.host_kind,
            "source": result.source,
            "hostname": result.facts.value("host.hostname"),
        },
        "summary": dict(counts, fail_on=verdict.fail_on, exit_code=verdict.code),
        "findings": [finding_data(f, subject) for f in result.findings],
        "ignored": [dict(finding_data(f, subject), reason=reason) for f, reason in result.ignored_findings],
        "rules": [
            {
                "id": r.rule.id,
                "status": result.status(r),
                "severity": r.rule.severity,
                "unknown_facts": {name: reason for name, reason in r.unknown_facts},
            }
            | ({"reason": r.reason} if r.reason else {})  # why not applicable: its applies condition
            for r in result.results
        ],
        "probes": [
            {"name": p.name, "status": p.status, "detail": p.detail}
            | ({"seconds": round(p.seconds, 4)} if include_timing else {})
            for p in result.probes
        ],
        "timed_out": list(result.timed_out),
        "profile": {
            "name": result.profile,
            "skipped_probes": list(result.skipped_probes),
            "skipped_rules": list(result.skipped_rules),
        },
        "policy": result.policy,
        "facts": result.facts.tree(),
    }
    if result.overrides:  # only then: a report without overrides is what it always was
        data["overrides"] = override_data(result)
    if include_timing:
        data["elapsed_s"] = round(result.elapsed, 4)
    return data


def override_data(result: Result) -> list[dict[str, str]]:
    """Each shipped rule another rule replaced (`overrides: true`): its id, where the shipped one is, and
    where the rule that replaced it came from."""
    return [{"id": r.id, "shipped": r.replaces, "by": f"{r.file}:{r.line}"} for r in result.overrides]


# The report's data -> what is printed: `check` redacts home directories and user names (gpudoctor/redact.py).
Redact = Optional[Callable[[Any], Any]]


def render(result: Result, verdict: Verdict, include_timing: bool = True, redact: Redact = None) -> str:
    data = report_data(result, verdict, include_timing)
    return json.dumps(redact(data) if redact else data, indent=2, sort_keys=False, default=str) + "\n"


def render_many(
    results: list[Result],
    verdicts: list[Verdict],
    include_timing: bool = True,
    redact: Redact = None,
    labels: Optional[list] = None,
) -> str:
    """Several environments (`--python` given more than once, `--all-envs`): one report each, under
    `environments`, with the exit code of the whole run (the worst of theirs). `labels` (--all-envs): each
    report's `environment`, what `gpudoctor envs` says of it (name, kind, prefix, found_by, problem)."""
    reports = [report_data(r, v, include_timing) for r, v in zip(results, verdicts)]
    for report, label in zip(reports, labels or []):
        if label is not None:
            report["environment"] = label
    data = {
        "schema": SCHEMA + ".environments",
        "schema_version": SCHEMA_VERSION,
        "gpudoctor": __version__,
        "exit_code": max(v.code for v in verdicts),
        "environments": reports,
    }
    return json.dumps(redact(data) if redact else data, indent=2, sort_keys=False, default=str) + "\n"
