"""Fix steps that name a resolver: the loader checks the name and args against the registry, the engine
carries them unresolved in findings."""

from __future__ import annotations

import pytest

from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import parse_rules
from gpudoctor.engine.model import FixStep
from gpudoctor.facts import Facts, known

RULE = """\
rules:
  - id: USR-FW-001
    title: CPU torch
    severity: error
    category: frameworks
    for_each: frameworks
    when: {{fact: "frameworks[i].build", eq: cpu}}
    message: "torch {{frameworks[i].version}} is CPU-only"
    why: w
    fix:
{step}
"""


def load(step: str):
    return parse_rules(RULE.format(step=step), "r.yaml")


def test_a_resolver_step_loads_with_its_args():
    rules, problems = load(
        "      - kind: pip\n        resolver: torch\n        args: {minor_compat: avoid}\n"
        '        text: "Reinstall torch {frameworks[i].version}"'
    )
    assert problems == []
    assert rules[0].fix == (
        FixStep("pip", (), "Reinstall torch {frameworks[i].version}", "torch", (("minor_compat", "avoid"),)),
    )


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (
            "      - {kind: pip, resolver: pytorch, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].resolver: unknown resolver 'pytorch' (expected one of torch, "
            "tensorflow, jax, onnxruntime, framework, driver)",
        ),
        (
            "      - {kind: pip, resolver: torch, args: {cuda: '12.4'}, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args.cuda: resolver torch takes no argument 'cuda' "
            "(expected: minor_compat, downgrade)",
        ),
        (
            "      - {kind: pip, resolver: torch, args: {minor_compat: never}, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args.minor_compat: expected one of allow, avoid, got 'never'",
        ),
        (
            "      - {kind: driver, resolver: driver, args: {cuda: ''}, text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args.cuda: expected a non-empty string",
        ),
        (
            "      - {kind: pip, resolver: torch, args: [minor_compat], text: t}",
            "r.yaml:11: USR-FW-001: at fix[0].args: expected a mapping of argument names to strings",
        ),
        (
            "      - {kind: pip, resolver: torch, argv: [pip, install, torch], text: t}",
            "r.yaml:11: USR-FW-001: at fix[0]: a step names a resolver or gives 'argv', not both",
        ),
        (
            "      - {kind: pip, resolver: torch}",
            "r.yaml:11: USR-FW-001: at fix[0]: a step that names a resolver needs 'text' (what reports show "
            "for it)",
        ),
        (
            "      - {kind: pip, argv: [pip, install, torch], args: {minor_compat: avoid}}",
            "r.yaml:11: USR-FW-001: at fix[0].args: 'args' go with 'resolver'",
        ),
    ],
)
def test_bad_resolver_steps_are_refused(step, expected):
    rules, problems = load(step)
    assert (rules, [str(p) for p in problems]) == ([], [expected])


def test_the_engine_carries_a_resolver_step_unresolved():
    rules, _ = load(
        "      - {kind: pip, resolver: framework, args: {minor_compat: avoid},"
        ' text: "torch {frameworks[i].version}"}'
    )
    facts = Facts(
        {
            "frameworks.count": known(1, "t"),
            "frameworks[0].build": known("cpu", "t"),
            "frameworks[0].version": known("2.5.1", "t"),
        }
    )
    result = evaluate_rule(rules[0], facts)
    assert result.findings[0].fix == (
        FixStep("pip", (), "torch 2.5.1", "framework", (("minor_compat", "avoid"),)),
    )
