"""JUnit XML: well-formed, one suite per area, one case per rule evaluated, failures and skips as CI
viewers read them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from gpudoctor.engine.evaluate import parameters_given
from gpudoctor.engine.loader import load_rules
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.verdict import decide
from gpudoctor.report import junit

from .reportkit import result_of, rules_of
from conftest import FIXTURES, H200

GOLDEN = FIXTURES / "golden"


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name").split()[0]: c for c in root.iter("testcase")}


def test_h200_golden_has_the_expected_suites_and_cases():
    root = ET.fromstring((GOLDEN / "h200-check.junit.xml").read_text())
    assert root.tag == "testsuites"
    suites = [s.get("name") for s in root.findall("testsuite")]
    assert suites == [
        "gpudoctor.driver",
        "gpudoctor.gpu",
        "gpudoctor.cuda",
        "gpudoctor.cudnn",
        "gpudoctor.frameworks",
        "gpudoctor.container",
        "gpudoctor.system",
    ]
    result = run_check(SnapshotHost(load(str(H200)), "h"), "h", Deadline(10), [])
    per_area = Counter(r.rule.category for r in result.results)
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        assert len(cases) == int(suite.get("tests")) == per_area[suite.get("name").split(".")[1]]
        assert {c.get("classname") for c in cases} == {suite.get("name")}
    # One case per shipped rule; skipped: the rules the capture has no facts for (listed one by one in
    # tests/e2e/test_h200.py) and those not applicable (GD-PROC-001: no GPU process).
    skipped = sum(1 for r in result.results if r.status in ("unknown", "not_applicable"))
    # Every shipped rule but the --deep ones, and but the policy's: no policy here sets what they read.
    shipped = [r for r in load_rules([]) if parameters_given(r, result.facts)]
    assert skipped >= 17 and len(result.results) == len(shipped) - len(result.skipped_rules) > 80
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == (
        str(len(result.results)), "1", str(skipped),
    )  # fmt: skip
    cases = _cases(root)
    assert len(cases) == len(result.results)
    failure = cases["GD-FW-004"].find("failure")
    assert failure.get("type") == "warning"
    assert failure.get("message").startswith("onnxruntime 1.30.0 is the CPU-only package")
    assert (
        "fix: Replace it with an onnxruntime-gpu release that exists and that the driver runs" in failure.text
    )
    # An info finding below --fail-on passes, with the finding in its output.
    assert cases["GD-CUDNN-002"].find("failure") is None
    assert (
        cases["GD-CUDNN-002"].find("system-out").text.startswith("info (below --fail-on warning):\n2 cuDNN")
    )
    assert list(cases["GD-PCIE-001"]) == []  # passed: an empty test case


def test_fail_on_decides_what_is_a_failure():
    result = run_check(SnapshotHost(load(str(H200)), "h"), "h", Deadline(10), [])
    assert ET.fromstring(junit.render(result, decide(result, "error"))).get("failures") == "0"
    assert ET.fromstring(junit.render(result, decide(result, "info"))).get("failures") == "2"
    assert ET.fromstring(junit.render(result, decide(result, "never"))).get("failures") == "0"


def test_unknown_rules_are_skipped_with_the_unknown_facts_as_reason():
    result = result_of({"gpus.count": {"unknown": "timed out"}})
    root = ET.fromstring(junit.render(result, decide(result, "error")))
    skipped = _cases(root)["GD-PCIE-001"].find("skipped")
    assert skipped.get("message") == "could not be evaluated: gpus.count: timed out"
    assert int(root.get("skipped")) == sum(1 for r in result.results if r.status == "unknown") > 0


def test_ignored_rules_are_skipped_with_the_policy_reason():
    rules = rules_of(
        "rules:\n  - id: T-X-001\n    title: t\n    severity: error\n    category: gpu\n"
        "    when: {fact: gpus.count, eq: 0}\n    message: no GPU\n    why: w\n"
    )
    result = result_of({"gpus.count": 0}, rules, ignore={"T-X-001": "CPU runner"})
    root = ET.fromstring(junit.render(result, decide(result, "error")))
    case = _cases(root)["T-X-001"]
    assert case.find("failure") is None
    assert case.find("skipped").get("message") == "ignored by policy: CPU runner"
    assert case.find("system-out").text.startswith("no GPU")
    assert (root.get("failures"), root.get("skipped")) == ("0", "1")


def test_text_that_xml_cannot_carry_still_gives_well_formed_xml():
    rules = rules_of(
        "rules:\n  - id: T-X-002\n    title: 'a <b> & \"c\"'\n    severity: error\n    category: system\n"
        "    when: {fact: system.os, exists: true}\n    message: 'os is {system.os}'\n    why: w\n"
    )
    result = result_of({"system.os": 'Evil <os> & "quotes" \x01\x1b]]>'}, rules)
    root = ET.fromstring(junit.render(result, decide(result, "error")))
    case = _cases(root)["T-X-002"]
    assert case.get("name") == 'T-X-002 a <b> & "c"'
    assert case.find("failure").get("message") == 'os is Evil <os> & "quotes" \ufffd\ufffd]]>'
    assert case.find("failure").get("type") == "error"
