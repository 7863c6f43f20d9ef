"""report/oneline.py, the preflight one-line report: GPUs grouped, findings below --fail-on listed, what
timed out named; and the shipped rules a rule pack replaced, as every other report says them
(tests/engine/test_loader.py), whether the check passes or fails."""

from __future__ import annotations

from gpudoctor.datafiles import shipped_rules_dir
from gpudoctor.pipeline.verdict import decide
from gpudoctor.report import oneline

from .reportkit import result_of, rules_of
from conftest import H200, run_cli

# A rule that always fires (at severity {sev}), with a fix command.
RULE = (
    "rules:\n  - id: T-X-{n}\n    title: t\n    severity: {sev}\n    category: gpu\n"
    "    when: {{fact: gpus.count, ge: 0}}\n    message: '{msg}'\n    why: w\n"
    "    fix:\n      - kind: command\n        argv: [nvidia-smi, -q, 'a b']\n"
)

FW004_LINE = next(
    n
    for n, line in enumerate((shipped_rules_dir() / "frameworks.yaml").read_text().splitlines(), 1)
    if line.strip() == "- id: GD-FW-004"
)
# GD-FW-004 (a warning on the H200 fixture) replaced by one that never fires, or by an error that does.
PACK = """\
rules:
  - id: GD-FW-004
    title: Replaced
    severity: {severity}
    category: frameworks
    when: {{fact: gpus.count, {test}}}
    message: replaced
    why: replaced
    silent: A test's replacement; no program meets it.
    overrides: true
"""


def test_the_preflight_line_names_the_rules_a_pack_overrode(tmp_path):
    pack = tmp_path / "silencer.yaml"
    pack.write_text(PACK.format(severity="info", test="lt: 0"))
    r = run_cli("check", "--snapshot", str(H200), "--profile", "preflight", "--rules", str(pack))
    assert r.returncode == 0, r.stderr
    assert r.stderr == (
        "gpudoctor: ok · 1 × NVIDIA H200 · driver 580.159.04 · CUDA 13.0 · 7 rule(s) could not be evaluated"
        f" · overridden: GD-FW-004 (shipped, frameworks.yaml:{FW004_LINE}) replaced by {pack}:2\n"
    )


def test_a_failing_preflight_names_them_too(tmp_path):
    pack = tmp_path / "strict.yaml"
    pack.write_text(PACK.format(severity="error", test="gt: 0"))
    r = run_cli("check", "--snapshot", str(H200), "--profile", "preflight", "--rules", str(pack))
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        "gpudoctor: ERROR GD-FW-004: replaced",
        f"gpudoctor: overridden: GD-FW-004 (shipped, frameworks.yaml:{FW004_LINE}) replaced by {pack}:2",
    ]


def test_no_override_no_mention():
    r = run_cli("check", "--snapshot", str(H200), "--profile", "preflight")
    assert "overridden" not in r.stderr


def test_oneline_groups_gpus_and_lists_findings_below_fail_on():
    result = result_of(
        {
            "gpus.count": 3,
            "gpus[0].name": "NVIDIA A100",
            "gpus[1].name": "NVIDIA A100",
            "gpus[2].name": "Tesla T4",
            "driver.version": "550.54.15",
            "driver.max_cuda": "12.4",
        },
        rules_of(RULE.format(n="001", sev="warning", msg="w")),
    )
    assert oneline.render(result, decide(result, "error")) == (
        "gpudoctor: ok · 2 × NVIDIA A100, 1 × Tesla T4 · driver 550.54.15 · CUDA 12.4"
        " · 1 warning(s): T-X-001\n"
    )
    assert (
        oneline.render(result, decide(result, "warning"))
        == "gpudoctor: WARNING T-X-001: w · fix: nvidia-smi -q 'a b'\n"
    )


def test_oneline_incomplete_names_what_timed_out():
    result = result_of(
        {
            "gpus.count": {"unknown": "timed out"},
            "driver.loaded": True,
            "driver.version": {"unknown": "timed out"},
        },
        rules_of(RULE.format(n="001", sev="error", msg="m")),
        timed_out=("NVML nvmlInit",),
    )
    assert oneline.render(result, decide(result, "error")) == (
        "gpudoctor: incomplete · GPUs unknown (timed out) · driver unknown (timed out)"
        " · timed out: NVML nvmlInit · 1 rule(s) could not be evaluated\n"
    )
