"""remedy.undo on a real venv that real pip changed: a fix run's restore point (demo 1.0, backed up), then pip
upgrades demo to 2.0 and adds dep; undo puts the environment back file for file, as a run of its own that can
be undone in turn. The journal lives in a temporary XDG_STATE_HOME."""

from __future__ import annotations

import shutil
import sys

import pytest

from gpudoctor.remedy import journal
from gpudoctor.remedy.model import CannotRun
from gpudoctor.remedy.restore import RestorePoint
from gpudoctor.remedy.undo import UndoResult, undo

from pyenvs import build_wheel, make_venv, pip_install, tree_hash


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    where = tmp_path_factory.mktemp("undo-wheels")
    build_wheel(where, "demo", "1.0", {"demo/__init__.py": "V = 1\n"})
    build_wheel(where, "demo", "2.0", {"demo/__init__.py": "V = 2\n"}, requires=("dep",))
    build_wheel(where, "dep", "1.0", {"dep/__init__.py": "D = 1\n"})
    return where


@pytest.fixture(scope="module")
def template(wheels, tmp_path_factory):
    python = make_venv(sys.executable, tmp_path_factory.mktemp("undo-template") / "env")
    pip_install(python, wheels, "demo==1.0")
    return python.parent.parent


@pytest.fixture
def fixed(template, wheels, tmp_path, monkeypatch):
    """A fix run as apply.py leaves it: a restore point with demo backed up, then the change, then its end."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    shutil.copytree(template, tmp_path / "env", symlinks=True)
    python = tmp_path / "env" / "bin" / "python"
    before = tree_hash(python)
    log = journal.new_run("fix", python=str(python))
    point = RestorePoint.create(log.run_dir, str(python))
    point.back_up(["demo"])
    log.write("restore_point", path="restore", distributions=len(point.inventory.dists), python=str(python))
    pip_install(python, wheels, "demo==2.0")
    log.write("end", outcome="fixed", exit=0)
    log.close()
    return {
        "python": python,
        "run": journal.summary(log.run_dir),
        "before": before,
        "after": tree_hash(python),
    }


def _never(changes):
    raise AssertionError("asked to confirm")


def test_a_dry_run_says_what_would_change_and_changes_nothing(fixed):
    result = undo(fixed["run"], _never, dry_run=True)
    assert (result.outcome, result.exit_code, result.run_id) == ("dry run", 0, None)
    assert result.changes == {"demo": ("2.0", "1.0"), "dep": ("1.0", None)}
    assert (result.target, result.python) == (fixed["run"].run_id, str(fixed["python"]))
    assert tree_hash(fixed["python"]) == fixed["after"]
    assert [r.run_id for r in journal.runs()] == [fixed["run"].run_id]  # no run of its own


def test_answering_no_changes_nothing(fixed):
    asked = []
    result = undo(fixed["run"], lambda changes: asked.append(changes) or False)
    assert asked == [{"demo": ("2.0", "1.0"), "dep": ("1.0", None)}]
    assert (result.outcome, result.exit_code) == ("declined", 1)
    assert tree_hash(fixed["python"]) == fixed["after"]
    assert len(journal.runs()) == 1


def test_undo_puts_every_file_back_and_can_itself_be_undone(fixed):
    result = undo(fixed["run"], lambda changes: True)
    assert (result.outcome, result.exit_code) == ("undone", 0)
    assert result.rollback.ok and result.rollback.problems == []
    assert tree_hash(fixed["python"]) == fixed["before"]

    runs = journal.runs()
    assert [r.run_id for r in runs] == [fixed["run"].run_id, result.run_id]
    own = runs[1]
    assert (own.kind, own.undoes, own.outcome, own.has_restore_point) == (
        "undo",
        fixed["run"].run_id,
        "undone",
        True,
    )

    assert undo(fixed["run"], _never).outcome == "nothing to do"  # already as it was
    again = undo(own, lambda changes: True)  # the undo of the undo: demo 2.0 and dep come back
    assert (again.outcome, again.changes) == ("undone", {"demo": ("1.0", "2.0"), "dep": (None, "1.0")})
    assert tree_hash(fixed["python"]) == fixed["after"]


def test_a_run_without_a_restore_point_cannot_be_undone(fixed, tmp_path):
    log = journal.new_run("fix", python=str(fixed["python"]))
    log.close()
    with pytest.raises(CannotRun, match=rf"^run {log.run_id} has no readable restore point: "):
        undo(journal.summary(log.run_dir), _never)


def test_an_environment_that_is_gone_cannot_be_undone(fixed):
    shutil.rmtree(fixed["python"].parent.parent)
    with pytest.raises(CannotRun, match=rf"^cannot read the environment of {fixed['python']}: "):
        undo(fixed["run"], _never)


@pytest.mark.parametrize(
    ("outcome", "code"),
    [("nothing to do", 0), ("dry run", 0), ("undone", 0), ("declined", 1), ("undo incomplete", 1)],
)
def test_exit_codes(outcome, code):
    assert UndoResult("run", "/env/bin/python", outcome, {}).exit_code == code
