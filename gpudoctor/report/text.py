"""The text report: the host at a glance, then findings grouped by area, then the verdict.

The same lines render plain (not a terminal, NO_COLOR, golden files) or styled through rich.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .. import __version__
from ..engine.model import CATEGORIES
from ..pipeline.result import Result, Verdict
from ..subject import finding_side, kind_of
from .lines import Line, finding_lines, plain_text, side_words, wrap_text
from .safe import safe_line
from .summary import summary

AREA_NAMES = {
    "driver": "Driver",
    "gpu": "GPUs",
    "cuda": "CUDA",
    "cudnn": "cuDNN",
    "frameworks": "Frameworks",
    "container": "Container",
    "system": "System",
}
LABEL_WIDTH = 12


def build_lines(
    result: Result,
    verdict: Verdict,
    width: int = 100,
    wrap: bool = False,
) -> list[Line]:
    """The report's lines, every piece made safe for a terminal; `verdict` is the run's (pipeline/verdict.py).
    `wrap` (a terminal) wraps the summary's text inside its column, so that the label column stays whole;
    files and pipes keep one line per area."""
    lines: list[Line] = []
    where = "live check" if result.host_kind == "live" else f"snapshot {result.source}"
    host = result.facts.value("host.hostname")
    subject = kind_of(result.target.chosen_by)
    if subject:  # check --image, --lock: what was judged, on which host
        judged = f"image {result.facts.value('image.ref')}" if subject == "image" else result.target.python
        where = f"{judged} on " + ("this host" if result.host_kind == "live" else f"snapshot {result.source}")
    lines.append(
        [("gpudoctor ", "bold"), (__version__, "bold"), (f" · {where}" + (f" of {host}" if host else ""), "")]
    )
    lines.append([])
    for area, area_lines in summary(result.facts):
        for n, text in enumerate(area_lines):
            label = area if n == 0 else ""
            chunks = wrap_text(text, LABEL_WIDTH, width) if wrap else [text]
            lines.append([(label.ljust(LABEL_WIDTH), "bold"), (chunks[0], "")])
            lines += [[(" " * LABEL_WIDTH, ""), (chunk, "")] for chunk in chunks[1:]]
    for text in overridden(result):  # no shipped rule is replaced silently
        lines.append([("Overridden".ljust(LABEL_WIDTH), "bold yellow"), (text, "")])
    for what in result.timed_out:
        lines.append([("Timed out".ljust(LABEL_WIDTH), "bold red"), (what, "")])
    for p in result.probes:
        if p.status != "ok":
            lines.append(
                [
                    ("Probe".ljust(LABEL_WIDTH), "bold red"),
                    (f"{p.name} {p.status}: {p.detail}".rstrip(": "), ""),
                ]
            )
    lines.append([])
    findings = result.findings
    if findings:
        lines.append([("Findings", "bold underline")])
        for category in CATEGORIES:
            group = [f for f in findings if f.rule.category == category]
            if not group:
                continue
            lines.append([(AREA_NAMES[category], "bold")])
            for f in group:  # with an image or a lockfile: whose the finding is
                lines += finding_lines(f, width, side_words(subject, finding_side(subject, f)))
        lines.append([])
    ignored = result.ignored_findings
    if ignored:
        lines.append([("Ignored by policy", "bold underline")])
        for f, reason in ignored:
            lines.append(
                [
                    ("  ", ""),
                    (f.severity.upper().ljust(8), "dim"),
                    (f.rule.id, "bold"),
                    (f"  {f.rule.title}", ""),
                ]
            )
            lines += [[("    " + chunk, "dim")] for chunk in wrap_text(f.message, 4, width)]
            lines += [
                [("    " + ("reason: " if n == 0 else "        ") + chunk, "")]
                for n, chunk in enumerate(wrap_text(reason, 12, width))
            ]
        lines.append([])
    unknown = unknown_lines(result)
    if unknown:  # "could not check" never reads as "fine": which rules, and why
        lines.append([("Could not be evaluated", "bold underline")])
        for text in unknown:
            chunks = wrap_text(text, 4, width)
            lines += [[("  " if n == 0 else "    ", ""), (chunk, "")] for n, chunk in enumerate(chunks)]
        lines.append([])
    lines.append(_verdict(result, verdict))
    return [safe_line(line) for line in lines]


def unknown_lines(result: Result, keep: Optional[Callable[[Any], bool]] = None) -> list[str]:
    """The rules that could not be evaluated, by reason: each reason a fact was unknown for, then the rules
    it kept from being evaluated (the facts themselves are in the JSON and Markdown reports). `keep`, when
    given, picks the rule results shown (check --all-envs: the machine's, or an environment's own)."""
    by_reason: dict[str, list[str]] = {}
    for r in result.results:
        if r.status == "unknown" and (keep is None or keep(r)):
            for why in dict.fromkeys(why for _name, why in r.unknown_facts) or ["facts unknown"]:
                by_reason.setdefault(why, []).append(r.rule.id)
    return [f"{why}: {', '.join(ids)}" for why, ids in by_reason.items()]


def overridden(result: Result) -> list[str]:
    """One line for each shipped rule a rule pack replaced (`overrides: true`), and where from."""
    return [f"{r.id} (shipped, {r.replaces}) replaced by {r.file}:{r.line}" for r in result.overrides]


def _verdict(result: Result, verdict: Verdict) -> Line:
    c = result.counts()
    words = (
        f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} info; {c['passed']} rule(s) passed"
    )
    if c["not_applicable"]:
        words += f", {c['not_applicable']} not applicable"
    if c["unknown"]:
        words += f", {c['unknown']} could not be evaluated (facts unknown)"
    if c["ignored"]:
        words += f", {c['ignored']} ignored by policy"
    if result.skipped_rules:
        words += f", {len(result.skipped_rules)} not evaluated ({skipped_because(result)})"
    return result_line(words, c, verdict)


def result_line(words: str, counts: dict, verdict: Verdict) -> Line:
    """The last line: the counts in `words`, coloured by the worst severity `counts` holds, then the exit code
    and why (check --all-envs ends its report with the same line)."""
    style = "bold red" if counts["error"] else ("bold yellow" if counts["warning"] else "bold green")
    return [
        ("Result".ljust(LABEL_WIDTH), "bold"),
        (words, style),
        (f" · exit {verdict.code} ({exit_reason(verdict)})", ""),
    ]


def skipped_because(result: Result) -> str:
    """Why some rules were not evaluated: the probes the profile skips, and the runtime probe's rules
    without --deep."""
    profile = [p for p in result.skipped_probes if p != "runtime"]
    parts = [f"profile {result.profile} skips {', '.join(profile)}"] if profile else []
    if "runtime" in result.skipped_probes:
        parts.append("runtime checks need --deep")
    return "; ".join(parts)


def exit_reason(verdict: Verdict) -> str:
    """Why the exit code is what it is, in a few words."""
    if verdict.code == 2:
        ids = ", ".join(verdict.unknown_errors)
        return f"could not check: error-level rule(s) {ids} could not be evaluated"
    return f"--fail-on {verdict.fail_on}"


def render_plain(result: Result, verdict: Verdict, width: int = 100, wrap: bool = False) -> str:
    lines = build_lines(result, verdict, width, wrap)
    return plain_text(lines)


def print_rich(result: Result, verdict: Verdict, console: Optional[object] = None) -> None:
    from rich.console import Console
    from rich.text import Text

    con = console or Console(highlight=False)
    for line in build_lines(result, verdict, con.width, wrap=True):  # type: ignore[attr-defined]
        con.print(Text.assemble(*line) if line else "")  # type: ignore[attr-defined]
