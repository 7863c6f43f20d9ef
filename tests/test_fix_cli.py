"""`gpudoctor fix` usage that is refused before anything is checked or changed (exit 2), and an empty
history. The end-to-end runs are tests/e2e/test_fix.py."""

from __future__ import annotations

import pytest

from conftest import run_cli


@pytest.fixture
def state(tmp_path):
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def test_no_runs_yet(state):
    r = run_cli("fix", "--list", env=state)
    assert (r.returncode, r.stdout, r.stderr) == (0, "No fix runs yet.\n", "")


def test_undo_without_a_run(state, tmp_path):
    r = run_cli("fix", "--undo", env=state)
    assert r.returncode == 2
    runs = tmp_path / "state" / "gpudoctor" / "runs"
    assert (
        r.stderr
        == f"gpudoctor: --undo: no run with a restore point in {runs} (gpudoctor fix --list shows them)\n"
    )


def test_a_run_id_goes_with_undo(state):
    r = run_cli("fix", "20261201T000000Z-abcd", env=state)
    assert r.returncode == 2
    assert "a run id goes with --undo (gpudoctor fix --undo RUN)" in r.stderr


def test_a_missing_plan_file(state, tmp_path):
    r = run_cli("fix", "--plan", str(tmp_path / "nope.json"), env=state)
    assert r.returncode == 2 and f"--plan: cannot read {tmp_path / 'nope.json'}" in r.stderr


def test_a_saved_plan_keeps_its_index_urls(state, tmp_path):
    r = run_cli("fix", "--plan", "x.json", "--index-mirror", "https://a.org/=https://b.org/", env=state)
    assert r.returncode == 2 and "a saved plan (--plan) keeps the ones it has" in r.stderr


def test_a_bad_step_timeout(state):
    r = run_cli("fix", "--step-timeout", "0", env=state)
    assert r.returncode == 2 and "must be a positive number of seconds" in r.stderr
