"""Typed rules: an operator that does not fit the fact's declared type is refused when the rule loads, with
file, line, rule id and the operator to use; at run time a value of the wrong type is unknown, with a
reason, never a comparison that passed."""

from __future__ import annotations

import pytest

from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import load_rules, parse_rules
from gpudoctor.facts import Facts, known

RULE = """\
rules:
  - id: USR-TYPE-001
    title: t
    severity: warning
    category: driver
    {for_each}
    when: {when}
    message: m
    why: w
"""


def problems(when: str, for_each: str = "") -> list[str]:
    text = RULE.replace("{when}", when).replace("{for_each}", for_each)
    rules, found = parse_rules(text, "user.yaml")
    return [str(p) for p in found]


@pytest.mark.parametrize(
    ("when", "hint"),
    [
        ("{fact: driver.version, lt: 600}", "use version_lt"),
        ("{fact: driver.version, ge: 600}", "use version_ge"),
        ("{fact: driver.branch, version_lt: '600'}", "use lt"),
        ("{fact: driver.kernel_module, gt: 1}", "use eq, ne, in, not_in or matches"),
        ("{fact: driver.loaded, lt: 1}", "use eq: true or eq: false"),
        ("{fact: pci.unbound_addresses, eq: '0000:00:06.0'}", "use contains"),
        ("{fact: driver.branch, matches: '^5'}", "use one of:"),
        ("{fact: driver.kernel_module, bits_any: 1}", "use eq, ne"),
        ("{fact: driver.max_cuda, eq: 13.0}", "quote it, or use version_eq"),
        ("{fact: driver.branch, eq: '580'}", "with '580'"),
        ("{fact: driver.loaded, in: ['yes', 'no']}", "with 'yes'"),
        ("{fact: driver.branch, lt: {fact: driver.version}}", "types differ"),
        ("{fact: gpus.count, eq: {fact: driver.kernel_module}}", "types differ"),
    ],
)
def test_an_operator_that_does_not_fit_the_type_is_refused(when, hint):
    found = problems(when)
    assert len(found) == 1, found
    assert found[0].startswith("user.yaml:7: USR-TYPE-001: at when."), found
    assert hint in found[0]


def test_the_message_names_the_operator_to_use():
    (found,) = problems("{fact: driver.version, lt: 600}")
    assert found == (
        "user.yaml:7: USR-TYPE-001: at when.lt: 'lt' does not fit driver.version, declared version: "
        "use version_lt"
    )


@pytest.mark.parametrize(
    "when",
    [
        "{fact: driver.version, version_lt: '600'}",
        "{fact: driver.branch, lt: 600}",
        "{fact: driver.branch, in: [580, 590]}",
        "{fact: driver.max_cuda, eq: '13.0'}",
        "{fact: driver.max_cuda, matches: '^13'}",
        "{fact: gpus.count, gt: {fact: pci.nvidia_gpus}}",
        "{fact: pci.unbound_addresses, contains: '0000:00:06.0'}",
        "{fact: driver.kernel_module, exists: true}",
        "{fact: '.power.limit_w', lt: 300}",
        "{fact: 'gpus[i].power.limit_w', lt: {fact: 'gpus[i].power.default_limit_w'}}",
    ],
)
def test_fitting_comparisons_load(when):
    assert problems(when, "for_each: gpus") == []


def test_every_shipped_rule_fits_the_types():
    assert load_rules([])  # raises RuleLoadError listing any that does not


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("580", "has '580', not the int the schema declares"),
        (True, "has True, not the int the schema declares"),
        (None, "has None, not the int the schema declares"),
    ],
)
def test_a_value_of_the_wrong_type_is_unknown_at_run_time(value, reason):
    (rule,), found = parse_rules(
        RULE.replace("{when}", "{fact: driver.branch, lt: 600}").replace("{for_each}", ""), "user.yaml"
    )
    result = evaluate_rule(rule, Facts({"driver.branch": known(value, "t")}))
    assert result.status == "unknown"
    assert result.unknown_facts == (("driver.branch", reason),)


def test_a_value_an_operator_cannot_judge_is_unknown_with_a_reason():
    (rule,), _ = parse_rules(
        RULE.replace("{when}", "{fact: driver.version, version_lt: '600'}").replace("{for_each}", ""),
        "u.yaml",
    )
    result = evaluate_rule(rule, Facts({"driver.version": known("not a version", "t")}))
    assert result.status == "unknown"
    assert result.unknown_facts == (
        ("driver.version", "'not a version' cannot be compared by 'version_lt' with '600'"),
    )


@pytest.mark.parametrize(
    ("when", "found"),
    [
        # A pattern or a range may come from a fact (a policy's, policy.*): a string fact, nothing else.
        ('{fact: "gpus[0].name", matches: {fact: policy.gpus.model_pattern}}', None),
        ("{fact: driver.max_cuda, version_in: {fact: policy.driver.cuda}}", None),
        ("{fact: driver.max_cuda, version_in: '>=12.4,<14'}", None),
        (
            '{fact: "gpus[0].name", matches: {fact: gpus.count}}',
            "compares gpus[0].name (str) with gpus.count (int)",
        ),
        (
            "{fact: driver.max_cuda, version_in: {fact: driver.version}}",
            "with driver.version (version): types",
        ),
        ("{fact: driver.max_cuda, version_in: '==12.*'}", "expects a version range such as '>=12.4,<14'"),
        ("{fact: driver.max_cuda, version_in: '~=12.4'}", "expects a version range such as '>=12.4,<14'"),
        (
            "{fact: driver.branch, version_in: '>=580'}",
            "'version_in' does not fit driver.branch, declared int",
        ),
        ("{fact: driver.loaded, exists: {fact: driver.loaded}}", "'exists' takes a value"),
    ],
)
def test_a_pattern_or_a_range_may_be_a_string_fact(when, found):
    text = problems(when)
    assert (len(text), found is None or found in text[0]) == (0 if found is None else 1, True), text
