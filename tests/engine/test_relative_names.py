"""A for_each rule names its item's facts relatively (`.pcie.width_current`); the old `gpus[i].` form
keeps working, and both load to the same rule."""

from __future__ import annotations

import re

from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import parse_rules
from gpudoctor.facts import Facts, known

RELATIVE = """\
rules:
  - id: USR-PCIE-001
    title: "Narrow link on {.name}"
    severity: warning
    category: gpu
    for_each: gpus
    when:
      all:
        - {fact: .pcie.width_current, lt: {fact: ".pcie.width_max"}}
        - not: {fact: .name, matches: "A100"}
        - {fact: gpus.count, ge: 1}
    message: "GPU {.index} is x{.pcie.width_current} of x{.pcie.width_max}; {.memory.total_bytes|size}"
    why: Slow copies on {.bus_id}.
    fix:
      - kind: command
        argv: [nvidia-smi, -i, "{.index}"]
        text: "GPU {.index}"
"""

ABSOLUTE = re.sub(r'fact: "?\.([a-z_.]+)"?', r'fact: "gpus[i].\1"', RELATIVE).replace("{.", "{gpus[i].")


def test_relative_and_absolute_names_load_to_the_same_rule():
    (rel,), p1 = parse_rules(RELATIVE, "r.yaml")
    (abs_,), p2 = parse_rules(ABSOLUTE, "r.yaml")
    assert p1 == p2 == []
    assert "gpus[i]." in ABSOLUTE and "{." not in ABSOLUTE
    assert rel == abs_
    assert (
        rel.message == "GPU {gpus[i].index} is x{gpus[i].pcie.width_current} of x{gpus[i].pcie.width_max}; "
        "{gpus[i].memory.total_bytes|size}"
    )
    assert rel.fix[0].argv == ("nvidia-smi", "-i", "{gpus[i].index}")


def test_a_relative_rule_evaluates_per_item():
    (rule,), _ = parse_rules(RELATIVE, "r.yaml")
    facts = Facts(
        {
            "gpus.count": known(2, "t"),
            **{f"gpus[{i}].index": known(i, "t") for i in range(2)},
            **{f"gpus[{i}].name": known("NVIDIA H200", "t") for i in range(2)},
            "gpus[0].pcie.width_current": known(16, "t"),
            "gpus[1].pcie.width_current": known(8, "t"),
            **{f"gpus[{i}].pcie.width_max": known(16, "t") for i in range(2)},
            **{f"gpus[{i}].memory.total_bytes": known(1 << 30, "t") for i in range(2)},
        }
    )
    result = evaluate_rule(rule, facts)
    assert [f.message for f in result.findings] == ["GPU 1 is x8 of x16; 1 GiB"]
    assert result.findings[0].fix[0].argv == ("nvidia-smi", "-i", "1")


def test_a_relative_name_needs_for_each():
    text = RELATIVE.replace("    for_each: gpus\n", "")
    rules, problems = parse_rules(text, "r.yaml")
    assert rules == []
    messages = [str(p) for p in problems]
    assert (
        "r.yaml:8: USR-PCIE-001: at when.all[0].fact: '.pcie.width_current' names a fact of the item, "
        "but the rule has no for_each" in messages
    )
    assert any("at message: '.index' names a fact of the item" in m for m in messages)
    assert any("at fix[0].argv: '.index' names a fact of the item" in m for m in messages)


def test_a_relative_name_must_be_a_fact_of_the_item():
    rules, problems = parse_rules(RELATIVE.replace(".pcie.width_current, lt", ".no_such, lt"), "r.yaml")
    assert [p.message for p in problems] == [
        "unknown fact 'gpus[i].no_such' (see docs/facts.md for the names facts have)"
    ]
