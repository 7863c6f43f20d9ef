"""report/oneline.py: the preflight line says which shipped rules a rule pack replaced, as every other
report does (tests/engine/test_loader.py), whether the check passes or fails."""

from __future__ import annotations

from gpudoctor.datafiles import shipped_rules_dir

from conftest import H200, run_cli

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
