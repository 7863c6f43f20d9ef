"""Where a severity meets --fail-on, and nowhere else: the exit code of a check, a bench and a fleet.

    0  nothing at or above --fail-on (and nothing the profile says must be known was unknown)
    1  a finding at or above --fail-on
    2  could not check: an error-level rule could not be evaluated and the profile (or --fail-on-unknown)
       says that fails; fleet: a report could not be read
Renderers receive the Verdict (pipeline/result.py) decided here; none of them imports this module
(tests/tools/test_import_graph.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..engine.model import SEVERITY_RANK, RuleResult
from ..facts import head
from ..host.base import NOT_RECORDED
from .result import Result, Verdict

EXIT_OK, EXIT_FINDINGS, EXIT_CANNOT_CHECK, EXIT_INTERNAL = 0, 1, 2, 3


def at_or_above(severity: str, fail_on: str) -> bool:
    return fail_on != "never" and SEVERITY_RANK[severity] >= SEVERITY_RANK[fail_on]


def exit_code(findings: Iterable[Any], fail_on: str) -> int:
    """1 when any finding (anything with a `.severity`: a check's, a fleet's) is at or above `fail_on`."""
    return EXIT_FINDINGS if any(at_or_above(f.severity, fail_on) for f in findings) else EXIT_OK


def decide(result: Result, fail_on: str) -> Verdict:
    """The exit code: 1 for findings at or above `fail_on`; else 2 when an error-level rule could not be
    evaluated and the profile (or --fail-on-unknown) says that fails; else 0."""
    failing = tuple(f for f in result.findings if at_or_above(f.severity, fail_on))
    unknown = tuple(r.rule.id for r in unknown_errors(result))
    code = EXIT_FINDINGS if failing else EXIT_OK
    if code == EXIT_OK and result.fail_unknown and unknown:
        code = EXIT_CANNOT_CHECK
    return Verdict(code, fail_on, failing, unknown)


def unknown_errors(result: Result) -> list[RuleResult]:
    """Error-level rules that could not be evaluated (not those the policy ignores, nor those unknown
    only for want of the facts the profile lets be unknown: `unknown_ok`, `unrecorded_ok`, nor for want of
    the driver's facts on a host with no driver and no GPU: there they do not exist, GD-HOST-001 says so and
    that a CPU run is expected)."""
    no_driver = _no_driver(result)
    return [
        r
        for r in result.results
        if r.status == "unknown"
        and r.rule.severity == "error"
        and r.rule.id not in result.ignore
        and not (
            r.unknown_facts
            and all(_unknown_ok(result, name, why, no_driver) for name, why in r.unknown_facts)
        )
    ]


def _no_driver(result: Result) -> bool:
    """No NVIDIA driver loaded and no GPU, on the PCI bus or through NVML (GD-HOST-001's case)."""
    facts = result.facts
    return (
        facts.value("driver.loaded") is False
        and facts.value("gpus.count") == 0
        and facts.value("pci.nvidia_gpus") in (0, None)
    )


def _unknown_ok(result: Result, name: str, why: str, no_driver: bool) -> bool:
    return (
        head(name) in result.unknown_ok
        or (result.unrecorded_ok and why.endswith(NOT_RECORDED))
        or (no_driver and head(name) == "driver")
    )
