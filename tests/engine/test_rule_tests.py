"""`gpudoctor rules test DIR`: users' rules against their own fires/passes cases, as `semgrep --test`
does: exit 0 when every case passes, 1 when one fails (one line each: rule, case, what differed), 2 for bad
files."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT, run_cli

RULES = """\
rules:
  - id: ACME-PCIE-001
    title: Training nodes need x16 links
    severity: error
    category: gpu
    for_each: gpus
    when: {fact: .pcie.width_current, lt: 16}
    message: "GPU {.index} runs at x{.pcie.width_current}"
    why: Our data loaders saturate x8 links.
"""

CASES = """\
fires:
  - name: x8-link
    facts: {gpus.count: 2, "gpus[0].index": 0, "gpus[0].pcie.width_current": 16,
            "gpus[1].index": 1, "gpus[1].pcie.width_current": 8}
    messages: ["GPU 1 runs at x8"]
passes:
  - name: x16-link
    facts: {gpus.count: 1, "gpus[0].index": 0, "gpus[0].pcie.width_current": 16}
  - name: width-unknown
    facts: {gpus.count: 1, "gpus[0].pcie.width_current": {unknown: not supported}}
    status: unknown
  - name: no-gpu
    facts: {gpus.count: 0}
    status: not_applicable
"""


def project(tmp_path: Path, rules: str = RULES, cases: str = CASES) -> Path:
    (tmp_path / "cases").mkdir(parents=True)
    (tmp_path / "acme.yaml").write_text(rules)
    (tmp_path / "cases" / "ACME-PCIE-001.yaml").write_text(cases)
    return tmp_path


def test_all_cases_pass(tmp_path):
    r = run_cli("rules", "test", str(project(tmp_path)))
    assert (r.returncode, r.stdout, r.stderr) == (0, "4 case(s) passed, 0 failed\n", "")


def test_a_failing_case_is_one_line_with_what_differed(tmp_path):
    cases = CASES.replace('["GPU 1 runs at x8"]', '["GPU 1 runs at x4"]').replace(
        "status: unknown", "status: passed"
    )
    r = run_cli("rules", "test", str(project(tmp_path, cases=cases)))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "FAIL ACME-PCIE-001 fires x8-link: expected messages ['GPU 1 runs at x4'], got ['GPU 1 runs at x8']",
        "FAIL ACME-PCIE-001 passes width-unknown: expected status passed, got unknown; "
        "unknown facts: {'gpus[0].pcie.width_current': 'not supported'}",
        "2 case(s) passed, 2 failed",
    ]


def test_a_rule_that_fires_where_it_should_pass(tmp_path):
    rules = RULES.replace("lt: 16", "le: 16")
    r = run_cli("rules", "test", str(project(tmp_path, rules=rules)))
    assert r.returncode == 1
    assert (
        "FAIL ACME-PCIE-001 passes x16-link: expected status passed, but the rule fired: "
        "['GPU 0 runs at x16']"
    ) in r.stdout.splitlines()


def test_xfail_cases(tmp_path):
    cases = CASES.replace("  - name: x16-link\n", "  - name: x16-link\n    xfail: known bug\n")
    r = run_cli("rules", "test", str(project(tmp_path, cases=cases)))
    assert r.returncode == 1
    assert "FAIL ACME-PCIE-001 passes x16-link: passes, but is marked xfail (known bug)" in r.stdout
    cases = CASES.replace('["GPU 1 runs at x8"]', '["wrong"]\n    xfail: known bug')
    r = run_cli("rules", "test", str(project(tmp_path / "b", cases=cases)))
    assert (r.returncode, r.stdout) == (0, "3 case(s) passed, 0 failed, 1 expected to fail\n")


def test_bad_files_exit_2(tmp_path):
    bad_case = run_cli(
        "rules", "test", str(project(tmp_path / "a", cases="fires: [{name: Bad Name, facts: {}}]"))
    )
    assert bad_case.returncode == 2 and "must be a lower-case slug" in bad_case.stderr
    bad_rule = run_cli(
        "rules", "test", str(project(tmp_path / "b", rules=RULES.replace("lt: 16", "lt: '16'")))
    )
    assert (
        bad_rule.returncode == 2
        and "acme.yaml:7: ACME-PCIE-001: at when.lt: 'lt' expects a number" in bad_rule.stderr
    )
    stray = project(tmp_path / "c")
    (stray / "cases" / "ACME-NOPE-001.yaml").write_text(CASES)
    r = run_cli("rules", "test", str(stray))
    assert r.returncode == 2 and "no rule 'ACME-NOPE-001' among the rules tested" in r.stderr
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "acme.yaml").write_text(RULES)
    r = run_cli("rules", "test", str(tmp_path / "d"))
    assert r.returncode == 2 and "no such directory of case files" in r.stderr


def test_a_rule_without_cases_is_noted(tmp_path):
    root = project(tmp_path, rules=RULES + RULES[len("rules:\n") :].replace("ACME-PCIE-001", "ACME-PCIE-002"))
    r = run_cli("rules", "test", str(root / "acme.yaml"))
    assert r.returncode == 0
    assert r.stderr == f"no cases for rule ACME-PCIE-002 (add {root / 'cases' / 'ACME-PCIE-002.yaml'})\n"


def test_the_shipped_rules_pass_their_own_cases():
    rules = (str(ROOT / "rules"), str(ROOT / "rules" / "bench"), str(ROOT / "rules" / "fleet"))
    r = run_cli("rules", "test", *rules, "--cases", str(ROOT / "tests" / "rules" / "cases"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.endswith(" failed\n") and ", 0 failed" in r.stdout
