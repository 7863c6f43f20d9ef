"""Rule patterns run on RE2: a search is linear in the value's length, so no rule outlives the deadline;
a pattern RE2 cannot run (backreferences, lookaround) is refused when the rule loads, with the reason."""

from __future__ import annotations

import time

import pytest

from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import load_rules, parse_rules
from gpudoctor.facts import Facts, known

RULE = """\
rules:
  - id: USR-RE-001
    title: t
    severity: error
    category: system
    when: {fact: env.cuda_visible_devices, matches: PATTERN}
    message: m
    why: w
"""


def rule(pattern: str):
    rules, problems = parse_rules(RULE.replace("PATTERN", pattern), "user.yaml")
    assert problems == []
    return rules[0]


def test_a_catastrophic_pattern_finishes_at_once():
    # Python's backtracking `re` took 17.7 s on 29 characters (16 s under the 5 s preflight deadline).
    r = rule("'^(a+)+$'")
    started = time.monotonic()
    for n in (29, 40, 10_000):
        result = evaluate_rule(r, Facts({"env.cuda_visible_devices": known("a" * n + "!", "t")}))
        assert result.status == "passed"
    assert time.monotonic() - started < 1.0
    assert evaluate_rule(r, Facts({"env.cuda_visible_devices": known("a" * 29, "t")})).status == "fired"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"'(a)\1'", "invalid escape sequence"),
        ("'(?<=a)b'", "invalid perl operator"),
        ("'a{2000}'", "invalid repetition size"),
        ("'(unclosed'", "missing )"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_with_the_reason(pattern, reason, capfd):
    rules, problems = parse_rules(RULE.replace("PATTERN", pattern), "user.yaml")
    assert rules == [] and len(problems) == 1
    text = str(problems[0])
    assert text.startswith("user.yaml:6: USR-RE-001: at when.matches: not a valid regular expression: RE2")
    assert reason in text and "no backreferences or lookaround" in text
    assert capfd.readouterr().err == ""  # RE2's own logging stays off


def test_shipped_patterns_compile_in_re2():
    from gpudoctor.engine.conditions import compile_pattern

    patterns = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("matches"), str):  # not {fact: NAME}: a pattern a fact holds
                patterns.append(node["matches"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for r in load_rules([]):
        walk(r.when)
    assert len(patterns) >= 3
    for p in patterns:
        compile_pattern(p)
