"""Conditions evaluate in three values: a rule fires only when its condition is known to be true. Their
patterns run on RE2, and their operators must fit the facts' declared types (checked when a rule loads)."""

from __future__ import annotations

import time

import pytest

from gpudoctor.engine.conditions import Evaluation
from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import load_rules, parse_rules
from gpudoctor.facts import Facts, known, unknown


def facts(**values) -> Facts:
    items = {}
    for name, value in values.items():
        name = name.replace("__", ".").replace("_I0_", "[0].")
        items[name] = unknown(value[1]) if isinstance(value, tuple) and value[0] == "?" else known(value, "t")
    return Facts(items)


F = Facts(
    {
        "driver.version": known("580.159.04", "t"),
        "driver.max_cuda": known("13.0", "t"),
        "driver.max_cuda_major": known(13, "t"),
        "driver.nvml_status": known("ok", "t"),
        "gpus.count": known(1, "t"),
        "gpus[0].name": known("NVIDIA H200", "t"),
        "gpus[0].pcie.width_current": known(8, "t"),
        "gpus[0].pcie.width_max": known(16, "t"),
        "gpus[0].clocks.event_reasons": known(0x44, "t"),
        "gpus[0].clocks.event_reason_names": known(["SwPowerCap", "HwThermalSlowdown"], "t"),
        "gpus[0].ecc.uncorrected_volatile": unknown("not supported", "t"),
        "cudnn.versions": known(["9.19.0.56", "9.14.0"], "t"),
        "policy.gpus.model_pattern": known("(?i:h200)", "t"),
        "policy.driver.cuda": known(">=12.4,<14", "t"),
    }
)


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        ({"fact": "driver.max_cuda_major", "eq": 13}, True),
        ({"fact": "driver.max_cuda_major", "ne": 13}, False),
        ({"fact": "gpus[i].pcie.width_current", "lt": {"fact": "gpus[i].pcie.width_max"}}, True),
        ({"fact": "gpus[i].pcie.width_current", "ge": 16}, False),
        ({"fact": "driver.version", "version_ge": "525.60.13"}, True),
        ({"fact": "driver.version", "version_lt": "580.65.06"}, False),
        # 580.159 is newer than 580.65: a string comparison would say otherwise.
        ({"fact": "driver.version", "version_gt": "580.65.06"}, True),
        ({"fact": "driver.nvml_status", "in": ["ok", "x"]}, True),
        ({"fact": "driver.nvml_status", "not_in": ["ok"]}, False),
        ({"fact": "cudnn.versions", "contains": "9.14.0"}, True),
        ({"fact": "gpus[i].name", "matches": "H[12]00"}, True),
        ({"fact": "gpus[i].name", "matches": {"fact": "policy.gpus.model_pattern"}}, True),
        ({"fact": "gpus[i].name", "matches": {"fact": "policy.gpus.model"}}, None),  # not given
        # A range: every bound met, each compared as versions (13.0 is not below 13 as a string is).
        ({"fact": "driver.max_cuda", "version_in": ">=12.4,<14"}, True),
        ({"fact": "driver.max_cuda", "version_in": {"fact": "policy.driver.cuda"}}, True),
        ({"fact": "driver.max_cuda", "version_in": ">=13.1"}, False),
        ({"fact": "driver.max_cuda", "version_in": ">=12,<13"}, False),
        ({"fact": "driver.max_cuda", "version_in": "==13.0.0,!=12.8"}, True),
        ({"fact": "driver.max_cuda", "version_in": ">12.9,<=13"}, True),
        ({"fact": "driver.nvml_status", "version_in": ">=12.4"}, None),  # "ok" is no version
        ({"fact": "driver.max_cuda", "version_in": "~=13.0"}, None),  # not a range version_in reads
        ({"fact": "gpus[i].clocks.event_reasons", "bits_any": "0xC8"}, True),
        ({"fact": "gpus[i].clocks.event_reasons", "bits_all": "0x44"}, True),
        ({"fact": "gpus[i].clocks.event_reasons", "bits_none": 0x1}, True),
        ({"fact": "gpus[i].ecc.uncorrected_volatile", "gt": 0}, None),
        ({"fact": "gpus[i].ecc.uncorrected_volatile", "exists": True}, False),
        ({"fact": "gpus[i].ecc.uncorrected_volatile", "unknown": True}, True),
        ({"fact": "driver.version", "exists": True}, True),
        ({"fact": "no.such", "eq": 1}, None),
        # A string compared with a number is not comparable: unknown, never an exception.
        ({"fact": "gpus[i].name", "gt": 3}, None),
    ],
)
def test_comparisons(cond, expected):
    assert Evaluation(F, 0)(cond) is expected


UNKNOWN = {"fact": "gpus[i].ecc.uncorrected_volatile", "gt": 0}
TRUE = {"fact": "driver.max_cuda_major", "eq": 13}
FALSE = {"fact": "driver.max_cuda_major", "eq": 12}


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        ({"all": [TRUE, TRUE]}, True),
        ({"all": [TRUE, FALSE]}, False),
        ({"all": [UNKNOWN, FALSE]}, False),
        ({"all": [UNKNOWN, TRUE]}, None),
        ({"any": [UNKNOWN, TRUE]}, True),
        ({"any": [UNKNOWN, FALSE]}, None),
        ({"any": [FALSE, FALSE]}, False),
        ({"not": UNKNOWN}, None),
        ({"not": FALSE}, True),
    ],
)
def test_three_valued_logic(cond, expected):
    assert Evaluation(F, 0)(cond) is expected


def test_evaluation_remembers_what_it_read():
    ev = Evaluation(F, 0)
    ev({"all": [TRUE, UNKNOWN]})
    assert ev.read == {"driver.max_cuda_major": 13}
    assert ev.unknown == {"gpus[0].ecc.uncorrected_volatile": "not supported"}


# --- patterns -----------------------------------------------------------------------------------------------
# Rule patterns run on RE2: a search is linear in the value's length, so no rule outlives the deadline; a
# pattern RE2 cannot run (backreferences, lookaround) is refused when the rule loads, with the reason.

PATTERN_RULE = """\
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
    rules, problems = parse_rules(PATTERN_RULE.replace("PATTERN", pattern), "user.yaml")
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
    rules, problems = parse_rules(PATTERN_RULE.replace("PATTERN", pattern), "user.yaml")
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


# --- typed rules --------------------------------------------------------------------------------------------
# Typed rules: an operator that does not fit the fact's declared type is refused when the rule loads, with
# file, line, rule id and the operator to use; at run time a value of the wrong type is unknown, with a
# reason, never a comparison that passed.

TYPED_RULE = """\
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
    text = TYPED_RULE.replace("{when}", when).replace("{for_each}", for_each)
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
        TYPED_RULE.replace("{when}", "{fact: driver.branch, lt: 600}").replace("{for_each}", ""), "user.yaml"
    )
    result = evaluate_rule(rule, Facts({"driver.branch": known(value, "t")}))
    assert result.status == "unknown"
    assert result.unknown_facts == (("driver.branch", reason),)


def test_a_value_an_operator_cannot_judge_is_unknown_with_a_reason():
    (rule,), _ = parse_rules(
        TYPED_RULE.replace("{when}", "{fact: driver.version, version_lt: '600'}").replace("{for_each}", ""),
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
