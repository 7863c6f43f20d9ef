"""`gpudoctor rules` and `--rules` (commands/rules.py) at their edges (issue 9): each test failed before its
fix."""

from __future__ import annotations

from conftest import H200, run_cli


def test_rules_docs_needs_a_directory_and_never_writes_the_working_directory(tmp_path):
    proc = run_cli("rules", "docs", cwd=tmp_path)
    assert proc.returncode == 2
    assert list(tmp_path.iterdir()) == []
    assert run_cli("rules", "docs", str(tmp_path / "out")).returncode == 0
    assert (tmp_path / "out" / "rules" / "index.md").exists()


def test_rules_on_an_empty_directory_says_so(tmp_path):
    proc = run_cli("check", "--snapshot", str(H200), "--rules", str(tmp_path))
    assert proc.returncode == 0
    assert f"--rules {tmp_path}: no *.yaml rule files" in proc.stderr
