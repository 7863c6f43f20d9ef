"""The rule language's `nvidia_require` operator (gpudoctor/container/operator.py), provided to the engine
from outside it (engine/extensions.py): validated, evaluated, selected and documented like a built-in one, and
absent from a rule language it was not provided to."""

from __future__ import annotations

import json
from pathlib import Path

from gpudoctor.container import operator
from gpudoctor.engine.conditions import Evaluation
from gpudoctor.engine.loader import parse_rules
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.report.rule_docs import comparison_text

from conftest import run_cli

# The real capture (tests/fixtures/h200-driver580-snapshot): an nvidia/cuda 13.0.2 image's NVIDIA_REQUIRE_CUDA
# on an H200 whose 580.159.04 driver gives CUDA 13.0, as its probes read it.
CAPTURE = Path(__file__).parents[1] / "fixtures" / "h200-driver580-snapshot"
EXPR = json.loads((CAPTURE / "env.json").read_text())["NVIDIA_REQUIRE_CUDA"]
HOST = {
    "driver.version": known("580.159.04", "nvml"),
    "driver.max_cuda": known("13.0", "nvml"),
    "gpus.count": known(1, "nvml"),
    "gpus[0].brand": known("nvidia", "nvml"),
    "gpus[0].compute_capability": known("9.0", "nvml"),
}
# CUDA 12.6 Update 1's driver (NVIDIA CUDA Toolkit release notes, Table 3, docs.nvidia.com/cuda/
# cuda-toolkit-release-notes, read 2026-11-30): below cuda>=13.0, and no brand group of the image names 560.
OLDER = {"driver__version": known("560.35.03", "nvml"), "driver__max_cuda": known("12.6", "nvml")}
RULE = """rules:
  - id: USR-REQ-001
    title: what the container runtime says of the image's CUDA requirement
    severity: error
    category: container
    when: {{fact: container.nvidia_require_cuda, nvidia_require: {word}}}
    message: judged {word}
    why: the runtime refuses to start it
"""


def evaluated(word: str, **facts) -> tuple:
    items = dict(HOST, **{"container.nvidia_require_cuda": known(EXPR, "env")})
    items.update({k.replace("__", "."): v for k, v in facts.items()})
    ev = Evaluation(Facts(items), None)
    return ev({"fact": "container.nvidia_require_cuda", "nvidia_require": word}), ev.unknown


def test_it_judges_the_expression_on_the_hosts_driver_and_gpus():
    operator.provide()
    assert evaluated("met") == (True, {})
    assert evaluated("unmet") == (False, {})
    assert evaluated("unmet", **OLDER) == (True, {})
    assert evaluated("met", **OLDER) == (False, {})


def test_an_unknown_fact_that_decides_is_named_with_its_reason():
    operator.provide()
    assert evaluated("unmet", driver__max_cuda=unknown("NVML not loaded", "nvml")) == (
        None,
        {"driver.max_cuda": "NVML not loaded"},
    )


def test_a_rule_using_it_validates_only_once_provided():
    _, problems = parse_rules(RULE.format(word="unmet"), "user.yaml")
    assert [str(p) for p in problems] == [
        "user.yaml:6: USR-REQ-001: at when.nvidia_require: unknown operator 'nvidia_require'; expected one "
        "of: eq, ne, lt, le, gt, ge, version_eq, version_ne, version_lt, version_le, version_gt, version_ge, "
        "version_in, in, not_in, contains, matches, bits_any, bits_all, bits_none, exists, unknown"
    ]
    operator.provide()
    rules, problems = parse_rules(RULE.format(word="unmet"), "user.yaml")
    assert problems == [] and rules[0].when == {
        "fact": "container.nvidia_require_cuda",
        "nvidia_require": "unmet",
    }
    _, problems = parse_rules(RULE.format(word="maybe"), "user.yaml")
    assert [str(p) for p in problems] == [
        "user.yaml:6: USR-REQ-001: at when.nvidia_require: 'nvidia_require' expects 'met' or 'unmet', "
        "got 'maybe'"
    ]


def test_it_fits_only_string_facts():
    operator.provide()
    rule = RULE.format(word="unmet").replace("container.nvidia_require_cuda", "gpus.count")
    _, problems = parse_rules(rule, "user.yaml")
    assert [str(p) for p in problems] == [
        "user.yaml:6: USR-REQ-001: at when.nvidia_require: 'nvidia_require' does not fit gpus.count, "
        "declared int: use one of: eq, ne, in, not_in, lt, le, gt, ge, bits_any, bits_all, bits_none"
    ]


def test_the_docs_say_it_in_words():
    operator.provide()
    cond = {"fact": "container.nvidia_require_cuda", "nvidia_require": "unmet"}
    assert comparison_text(cond) == (
        "the requirement in `container.nvidia_require_cuda` is not met by this host's driver and GPUs"
    )


def test_every_command_has_it_as_docs_writing_rules_promises(tmp_path):
    """commands.dispatch provides it: a user rule using it validates and fires on the real capture."""
    rule = tmp_path / "user.yaml"
    silent = "    silent: a rule about the host's own admission; no program prints a message for it\n"
    rule.write_text(RULE.format(word="met") + silent)
    assert run_cli("rules", "validate", str(rule)).returncode == 0
    done = run_cli("check", "--snapshot", str(CAPTURE), "--rules", str(rule), "--format", "json")
    findings = [(f["rule"], f["message"]) for f in json.loads(done.stdout)["findings"]]
    assert ("USR-REQ-001", "judged met") in findings
