"""Markdown for CI summaries (GitHub's $GITHUB_STEP_SUMMARY, merge-request notes): the verdict, the host
at a glance, and a table of findings with their fixes."""

from __future__ import annotations

from .. import __version__
from ..engine.model import Finding
from ..pipeline.result import Result, Verdict
from .lines import command_text
from .summary import summary
from .text import AREA_NAMES, exit_reason, overridden, skipped_because


def cell(text: str) -> str:
    """Text that stays inside one table cell: pipes and asterisks escaped, newlines as <br>, HTML
    brackets as entities."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
    return text.replace("\r", "").replace("\n", "<br>")


def code(text: str) -> str:
    """An inline code span that survives any backticks inside it; pipes escaped for tables."""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|").replace("\n", " ")


def _fix(f: Finding) -> str:
    parts = []
    for step in f.fix:
        if step.argv:
            parts.append(code(command_text(step)))
        else:
            parts.append(cell(step.text))
    return "<br>".join(parts)


def headline(result: Result, verdict: Verdict) -> str:
    c = result.counts()
    mark = "❌" if verdict.code else ("⚠️" if c["error"] or c["warning"] else "✅")
    return (
        f"{mark} gpudoctor: {c['error']} error(s), {c['warning']} warning(s), {c['info']} info"
        f" · exit {verdict.code} ({exit_reason(verdict)})"
    )


def render(result: Result, verdict: Verdict) -> str:
    """`verdict`: the run's, decided once by the caller (pipeline/verdict.py)."""
    c = result.counts()
    where = "live check" if result.host_kind == "live" else f"snapshot `{result.source}`"
    host = result.facts.value("host.hostname")
    lines = [
        f"## {headline(result, verdict)}",
        "",
        f"gpudoctor {__version__} · {where}"
        + (f" of `{host}`" if host else "")
        + f" · profile {result.profile}"
        + (f" · policy `{result.policy}`" if result.policy else ""),
        "",
        "| area | |",
        "| --- | --- |",
    ]
    for area, area_lines in summary(result.facts):
        lines.append(f"| {area} | {'<br>'.join(cell(t) for t in area_lines)} |")
    if result.timed_out:
        lines.append(f"| Timed out | {cell(', '.join(result.timed_out))} |")
    for text in overridden(result):
        lines.append(f"| Overridden | {cell(text)} |")
    findings = result.findings
    if findings:
        lines += [
            "",
            "### Findings",
            "",
            "| severity | rule | area | finding | fix |",
            "| --- | --- | --- | --- | --- |",
        ]
        for f in findings:
            sev = f"**{f.severity}**" if f.severity == "error" else f.severity
            lines.append(
                f"| {sev} | {f.rule.id} | {AREA_NAMES[f.rule.category]} | {cell(f.message)} | {_fix(f)} |"
            )
    ignored = result.ignored_findings
    if ignored:
        lines += ["", "### Ignored by policy", "", "| rule | finding | reason |", "| --- | --- | --- |"]
        lines += [f"| {f.rule.id} | {cell(f.message)} | {cell(reason)} |" for f, reason in ignored]
    unknown = [r for r in result.results if r.status == "unknown"]
    if unknown:
        lines += ["", "### Could not be evaluated", "", "| rule | unknown facts |", "| --- | --- |"]
        for r in unknown:
            facts = ", ".join(f"{code(name)} ({cell(reason)})" for name, reason in r.unknown_facts)
            lines.append(f"| {r.rule.id} | {facts} |")
    tail = f"{c['passed']} rule(s) passed"
    if c["not_applicable"]:
        tail += f", {c['not_applicable']} not applicable"
    if result.skipped_rules:
        tail += f"; {len(result.skipped_rules)} not evaluated ({skipped_because(result)})"
    lines += ["", tail, ""]
    return "\n".join(lines)
