"""engine/extensions.py: an operator a package adds to the rule language is validated, judged with the host's
other facts, documented and counted among the facts a rule reads, like the built-in ones; the module itself
loads nothing. The shipped extension, `nvidia_require`, is tested in tests/container/test_operator.py; here a
second one is provided as a package would: `driver_runs`, whether a framework's CUDA major is one the driver
runs (the comparison GD-CUDA-001 makes), judged on the recorded H200
(tests/fixtures/h200-driver580-snapshot)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpudoctor.engine import extensions
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import parse_rules
from gpudoctor.facts import Facts, unknown
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.profiles import rule_facts
from gpudoctor.report.rule_docs import comparison_text

from conftest import H200, ROOT

NAME = "driver_runs"


def judge(value, word, facts):
    driver = facts.get("driver.max_cuda_major")
    if not driver.known:
        return None, {"driver.max_cuda_major": driver.unknown}
    return (value <= driver.value) == (word == "runs"), {}


OPERATOR = extensions.Operator(
    words=("runs", "too_new"),  # not yes/no: YAML reads those as booleans
    fits=("int",),
    reads=("driver.max_cuda_major",),
    judge=judge,
    text=lambda fact, word: f"the driver {'runs' if word == 'runs' else 'does not run'} CUDA {fact}",
)

RULE = """\
rules:
  - id: USR-DRV-001
    title: A framework's CUDA is newer than the driver runs
    severity: error
    category: frameworks
    for_each: frameworks
    when:
      all:
        - {{fact: 'frameworks[i].build', eq: cuda}}
        - {{fact: 'frameworks[i].cuda_major', driver_runs: {word}}}
    message: "{{frameworks[i].name}} needs CUDA {{frameworks[i].cuda_major}}"
    why: w
"""


@pytest.fixture
def provided():
    extensions.extend(NAME, OPERATOR)
    yield OPERATOR
    del extensions.OPERATORS[NAME]


@pytest.fixture(scope="module")
def h200_facts():
    return run_check(SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), []).facts


def test_importing_it_loads_nothing_else():
    code = (
        "import sys, gpudoctor.engine.extensions; print(*sorted(m for m in sys.modules if 'gpudoctor.' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.stdout.split() == ["gpudoctor.engine", "gpudoctor.engine.extensions"]


def test_extend_adds_the_operator_and_again_changes_nothing(provided):
    assert extensions.OPERATORS[NAME] is provided
    extensions.extend(NAME, provided)
    assert [n for n in extensions.OPERATORS if n == NAME] == [NAME]
    assert extensions.OPERATORS[NAME] is provided


def test_unknown_before_it_is_provided():
    _, problems = parse_rules(RULE.format(word="too_new"), "user.yaml")
    assert len(problems) == 1 and "unknown operator 'driver_runs'" in str(problems[0])


def test_validated_with_its_words_and_types(provided):
    rules, problems = parse_rules(RULE.format(word="too_new"), "user.yaml")
    assert problems == []
    assert rules[0].when["all"][1] == {"fact": "frameworks[i].cuda_major", "driver_runs": "too_new"}
    _, problems = parse_rules(RULE.format(word="maybe"), "user.yaml")
    assert [p.split(": at ", 1)[1] for p in map(str, problems)] == [
        "when.all[1].driver_runs: 'driver_runs' expects 'runs' or 'too_new', got 'maybe'"
    ]
    _, problems = parse_rules(RULE.format(word="too_new").replace("cuda_major", "name"), "user.yaml")
    assert "'driver_runs' does not fit frameworks[i].name, declared str" in str(problems[0])


def test_judged_with_the_hosts_other_facts(provided, h200_facts):
    """On the H200, torch, JAX and CuPy are CUDA 13 builds and the driver runs CUDA 13: nothing fires."""
    assert (h200_facts.value("frameworks[0].cuda_major"), h200_facts.value("driver.max_cuda_major")) == (
        13,
        13,
    )
    rules, _ = parse_rules(RULE.format(word="too_new"), "user.yaml")
    (result,) = evaluate(rules, h200_facts)
    assert result.status == "passed"
    (fired,) = evaluate(parse_rules(RULE.format(word="runs"), "user.yaml")[0], h200_facts)
    assert fired.status == "fired"
    assert [f.message for f in fired.findings] == [
        "torch needs CUDA 13",
        "jax needs CUDA 13",
        "cupy needs CUDA 13",
    ]


def test_an_unknown_fact_it_reads_is_named_with_its_reason(provided, h200_facts):
    items = dict(h200_facts.items())
    items["driver.max_cuda_major"] = unknown("NVML not loaded", "nvml")
    rules, _ = parse_rules(RULE.format(word="too_new"), "user.yaml")
    (result,) = evaluate(rules, Facts(items))
    assert result.status == "unknown"
    assert ("driver.max_cuda_major", "NVML not loaded") in result.unknown_facts


def test_documented_in_its_own_words_and_its_reads_counted(provided):
    cond = {"fact": "frameworks[i].cuda_major", "driver_runs": "too_new"}
    assert comparison_text(cond) == "the driver does not run CUDA `frameworks[i].cuda_major`"
    rule = parse_rules(RULE.format(word="too_new"), "user.yaml")[0][0]
    assert {"driver.max_cuda_major", "frameworks[i].cuda_major"} <= rule_facts(rule)
