"""The run directories and journals fix keeps in the user's state directory."""

from __future__ import annotations

import json
import stat

import pytest

from gpudoctor.remedy import journal


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def test_runs_live_under_xdg_state_home(state):
    assert journal.runs_dir() == state / "gpudoctor" / "runs"


def test_without_xdg_state_home_it_is_under_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert journal.runs_dir() == tmp_path / ".local" / "state" / "gpudoctor" / "runs"


def test_a_run_writes_one_json_object_a_line(state):
    log = journal.new_run("fix", python="/v/bin/python")
    log.write("restore_point", distributions=3)
    log.write("step", number=1, argv=["/v/bin/python", "-m", "pip", "install", "x==1"], exit=0)
    log.write("end", outcome="fixed", exit=0)
    log.close()
    lines = [json.loads(x) for x in (log.run_dir / "journal.jsonl").read_text().splitlines()]
    assert [x["event"] for x in lines] == ["start", "restore_point", "step", "end"]
    assert lines[0]["run"] == log.run_id and lines[0]["kind"] == "fix" and lines[0]["format"] == 1
    assert all(x["time"].endswith("Z") for x in lines)
    assert stat.S_IMODE(log.run_dir.stat().st_mode) == 0o700  # restore points hold the user's files
    s = journal.summary(log.run_dir)
    assert (s.kind, s.python, s.outcome, s.has_restore_point, len(s.steps)) == (
        "fix",
        "/v/bin/python",
        "fixed",
        True,
        1,
    )


def test_runs_started_in_one_second_never_collide_and_list_in_the_order_they_started(state):
    ids = [journal.new_run("fix").run_id for _ in range(20)]  # well within a second: the suffixes are random
    assert len(set(ids)) == 20
    assert [r.run_id for r in journal.runs()] == ids


def test_a_journal_without_time_ns_still_sorts_by_the_second_its_id_names(state):
    root = journal.runs_dir()
    for run_id in ("20261201T000002Z-0000", "20261201T000001Z-ffff"):
        (root / run_id).mkdir(parents=True)
        (root / run_id / "journal.jsonl").write_text(json.dumps({"event": "start", "kind": "fix"}) + "\n")
    assert [r.run_id for r in journal.runs()] == ["20261201T000001Z-ffff", "20261201T000002Z-0000"]


def test_an_unfinished_run_reads_as_unfinished(state):
    log = journal.new_run("fix")
    with open(log.run_dir / "journal.jsonl", "a") as f:
        f.write('{"event": "step", "numb')  # killed half-way through a line
    s = journal.summary(log.run_dir)
    assert s.outcome == "unfinished" and s.problems == ["line 2 is not JSON"]


def test_find_by_id_prefix_or_the_last_with_a_restore_point(state):
    first = journal.new_run("fix")
    first.write("restore_point")
    second = journal.new_run("fix")  # never got as far as a restore point
    assert journal.find(None).run_id == first.run_id
    assert journal.find(second.run_id).run_id == second.run_id
    assert journal.find(first.run_id[:-2]) is None or journal.find(first.run_id[:-2]).run_id == first.run_id
    assert journal.find("nope") is None


def test_no_runs_yet(state):
    assert journal.runs() == [] and journal.find(None) is None
