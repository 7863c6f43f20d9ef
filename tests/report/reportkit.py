"""Check results built from plain fact values, for the renderers' tests."""

from __future__ import annotations

from typing import Optional

from gpudoctor.check import CheckResult
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules, parse_rules
from gpudoctor.facts import Facts, known, unknown


def facts_of(values: dict) -> Facts:
    """{name: value}; a value {"unknown": reason} makes the fact unknown."""
    return Facts(
        {
            name: unknown(v["unknown"]) if isinstance(v, dict) and "unknown" in v else known(v, "test")
            for name, v in values.items()
        }
    )


def rules_of(yaml_text: str) -> list:
    rules, problems = parse_rules(yaml_text, "test.yaml")
    assert problems == [], problems
    return rules


def result_of(
    values: dict,
    rules: Optional[list] = None,
    ignore: Optional[dict] = None,
    timed_out: tuple = (),
) -> CheckResult:
    facts = facts_of(values)
    return CheckResult(
        facts=facts,
        results=evaluate(rules if rules is not None else load_rules([]), facts),
        probes=[],
        host_kind="snapshot",
        source="test",
        elapsed=0.5,
        timed_out=list(timed_out),
        ignore=dict(ignore or {}),
    )
