"""The preflight report: one line when nothing fails the check, one line per failing finding when
something does. Meant for container entrypoints and job prologs, where a log has room for little else.

    gpudoctor: ok · 1 × NVIDIA H200 · driver 580.159.04 · CUDA 13.0
    gpudoctor: ERROR GD-CONTAINER-001: The image requires 'cuda>=13.1' ... · fix: Run an image built for ...
    gpudoctor: could not check · GPUs unknown (timed out) · ... · 26 rule(s) could not be evaluated, ...

A shipped rule a rule pack replaced is named on the line (or on a line of its own after the failures).
"""

from __future__ import annotations

from ..engine.model import Finding
from ..facts import Facts
from ..pipeline.result import Result, Verdict
from .lines import command_text
from .safe import terminal_lines
from .text import overridden


def _flat(text: str) -> str:
    return " ".join(text.split())


def gpus_part(facts: Facts) -> str:
    count = facts.get("gpus.count")
    if not count.known:
        return f"GPUs unknown ({count.unknown})"
    if not count.value:
        return "no GPU"
    names: dict[str, int] = {}
    for i in range(facts.count("gpus")):
        name = str(facts.value(f"gpus[{i}].name", "unknown GPU"))
        names[name] = names.get(name, 0) + 1
    return ", ".join(f"{n} × {name}" for name, n in names.items())


def driver_part(facts: Facts) -> str:
    version = facts.get("driver.version")
    if version.known:
        return f"driver {version.value}"
    if facts.value("driver.loaded") is False:
        return "no driver"
    return f"driver unknown ({version.unknown})"


def cuda_part(facts: Facts) -> str:
    cuda = facts.get("driver.max_cuda")
    return f"CUDA {cuda.value}" if cuda.known else ""


def finding_line(f: Finding) -> str:
    line = f"gpudoctor: {f.severity.upper()} {f.rule.id}: {_flat(f.message)}"
    if f.fix:
        step = f.fix[0]
        line += f" · fix: {command_text(step) if step.argv else _flat(step.text)}"
    return line


def render(result: Result, verdict: Verdict) -> str:
    """`verdict`: the run's, decided once by the caller (pipeline/verdict.py)."""
    return terminal_lines(_render(result, verdict))


def _render(result: Result, verdict: Verdict) -> str:
    bad = verdict.failing
    timed_out = result.unanswered()
    if bad:
        lines = [finding_line(f) for f in bad]
        if timed_out:
            lines.append(f"gpudoctor: timed out: {', '.join(timed_out)}")
        if result.overrides:
            lines.append(f"gpudoctor: overridden: {'; '.join(overridden(result))}")
        return "\n".join(lines) + "\n"
    facts = result.facts
    cannot = verdict.code == 2  # could not check (pipeline/verdict.py)
    head = "could not check" if cannot else ("ok" if not timed_out else "incomplete")
    parts = [head, gpus_part(facts), driver_part(facts), cuda_part(facts)]
    for severity in ("error", "warning"):  # below --fail-on, or they would be failing
        ids = sorted({f.rule.id for f in result.findings if f.severity == severity})
        if ids:
            parts.append(f"{len(ids)} {severity}(s): {', '.join(ids)}")
    if timed_out:
        parts.append(f"timed out: {', '.join(timed_out)}")
    unknown = sum(1 for r in result.results if r.status == "unknown")
    if cannot:
        ids = ", ".join(verdict.unknown_errors)
        parts.append(f"{unknown} rule(s) could not be evaluated, error-level: {ids}")
    elif unknown:
        parts.append(f"{unknown} rule(s) could not be evaluated")
    if result.overrides:  # no shipped rule is replaced silently, not even in one line
        parts.append(f"overridden: {'; '.join(overridden(result))}")
    return "gpudoctor: " + " · ".join(p for p in parts if p) + "\n"
