"""No shipped rule changes silently: a rule pack that replaces one (`overrides: true`) is listed in every
report, with where it came from; and `rules validate` refuses the id clashes that `check --rules` refuses."""

from __future__ import annotations

import json
from pathlib import Path

from gpudoctor.datafiles import shipped_rules_dir

from conftest import H200, run_cli

# Where the shipped GD-FW-004 starts: reports name it by file and line.
FW004_LINE = next(
    n
    for n, line in enumerate((shipped_rules_dir() / "frameworks.yaml").read_text().splitlines(), 1)
    if line.strip() == "- id: GD-FW-004"
)
FW004 = f"frameworks.yaml:{FW004_LINE}"

# Replaces the shipped GD-FW-004, which fires on the H200 fixture, with a rule that never fires.
SILENCER = """\
rules:
  - id: GD-FW-004
    title: Never mind
    severity: info
    category: frameworks
    when: {fact: gpus.count, lt: 0}
    message: never
    why: silenced
    silent: The replacement never fires, so no program meets it.
    overrides: true
"""


def test_reports_list_every_overridden_shipped_rule(tmp_path):
    pack = tmp_path / "silencer.yaml"
    pack.write_text(SILENCER)
    text = run_cli("check", "--snapshot", str(H200), "--rules", str(pack))
    assert text.returncode == 0, text.stderr
    assert "GD-FW-004" not in text.stdout.split("Findings")[-1]
    lines = [line for line in text.stdout.splitlines() if line.startswith("Overridden")]
    assert lines == [f"Overridden  GD-FW-004 (shipped, {FW004}) replaced by {pack}:2"]
    data = json.loads(
        run_cli("check", "--snapshot", str(H200), "--rules", str(pack), "--format", "json").stdout
    )
    assert data["overrides"] == [{"id": "GD-FW-004", "shipped": FW004, "by": f"{pack}:2"}]
    md = run_cli("check", "--snapshot", str(H200), "--rules", str(pack), "--format", "markdown").stdout
    assert f"| Overridden | GD-FW-004 (shipped, {FW004}) replaced by {pack}:2 |" in md.splitlines()


def test_reports_without_overrides_say_nothing_of_them():
    data = json.loads(run_cli("check", "--snapshot", str(H200), "--format", "json").stdout)
    assert "overrides" not in data
    assert "Overridden" not in run_cli("check", "--snapshot", str(H200)).stdout
    assert "Overridden" not in run_cli("check", "--snapshot", str(H200), "--format", "markdown").stdout


def test_validate_refuses_a_clash_with_a_shipped_id_as_check_does(tmp_path):
    clash = tmp_path / "clash.yaml"
    clash.write_text(SILENCER.replace("    overrides: true\n", ""))
    validate = run_cli("rules", "validate", str(clash))
    check = run_cli("check", "--snapshot", str(H200), "--rules", str(clash))
    assert validate.returncode == check.returncode == 2
    for r in (validate, check):
        assert f"{clash}:2: GD-FW-004: at id: duplicate id (first defined at " in r.stderr
        assert f"{FW004}); add 'overrides: true' to replace it" in r.stderr
    ok = tmp_path / "ok.yaml"
    ok.write_text(SILENCER)
    assert (
        run_cli("rules", "validate", str(ok)).returncode,
        run_cli("rules", "validate", str(ok)).stdout,
    ) == (
        0,
        "1 rule(s) valid\n",
    )


def test_validating_the_shipped_rules_themselves_is_no_clash():
    r = run_cli("rules", "validate", "rules")
    assert r.returncode == 0 and r.stdout.endswith(" rule(s) valid\n"), r.stderr


def test_a_copy_of_the_shipped_rules_is_no_clash_but_an_edited_copy_is(tmp_path):
    # What a non-editable install sees when it validates the source tree's rules/: copies, not the same files.
    copy = tmp_path / "rules"
    copy.mkdir()
    shipped = Path(__file__).resolve().parents[2] / "rules" / "frameworks.yaml"
    (copy / "frameworks.yaml").write_bytes(shipped.read_bytes())
    r = run_cli("rules", "validate", str(copy))
    assert r.returncode == 0 and r.stdout.endswith(" rule(s) valid\n"), r.stderr
    # Changed by one byte it is another file: its ids clash with the shipped ones, as `check --rules` says.
    (copy / "frameworks.yaml").write_bytes(shipped.read_bytes() + b"\n")
    r = run_cli("rules", "validate", str(copy))
    assert r.returncode == 2 and "GD-FW-004: at id: duplicate id" in r.stderr
