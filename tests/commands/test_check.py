"""`gpudoctor check` (commands/check.py) as users run it: a real process, its output and its exit code."""

from __future__ import annotations

from conftest import run_cli


def test_data_dir_on_a_missing_path_is_refused_live(tmp_path):
    missing = tmp_path / "no-such-data"
    proc = run_cli("check", "--no-python", "--data-dir", str(missing))
    assert proc.returncode == 2
    assert f"--data-dir {missing}: no such file or directory" in proc.stderr
