"""Which runs fix keeps (issue 24: restore points were never pruned, 4.2 GB after 28 runs)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gpudoctor.remedy import journal, retention

from conftest import run_cli

DAY = 86400.0
NOW = 1796428800.0  # 2026-12-05T00:00:00Z


def run_at(root: Path, when: float, size: int, outcome: str = "fixed", suffix: str = "0000") -> str:
    """A run directory as fix leaves one: journal, restore point, one backup of `size` bytes."""
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when)) + "-" + suffix
    path = root / run_id
    (path / "restore" / "dists").mkdir(parents=True)
    (path / "restore" / "dists" / "torch-2.5.1+cpu-0123456789ab.tar").write_bytes(b"\0" * size)
    events = [
        {"event": "start", "run": run_id, "kind": "fix", "time": "t", "python": "/v/bin/python"},
        {"event": "restore_point", "path": "restore"},
        {"event": "end", "outcome": outcome, "exit": 0},
    ]
    (path / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run_id


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "state" / "gpudoctor" / "runs"
    root.mkdir(parents=True)
    return root


def test_the_run_id_says_when_it_started():
    assert retention.started("20261205T000000Z-7f3a") == NOW
    assert retention.started("not-a-run") is None


def test_the_newest_five_and_those_of_the_last_fourteen_days_stay(state):
    old = [run_at(state, NOW - (40 - n) * DAY, 10, suffix=f"{n:04x}") for n in range(8)]  # 33-40 days old
    recent = [run_at(state, NOW - n * DAY, 10, suffix=f"a{n:03x}") for n in (13, 2)]
    runs = journal.runs()
    assert [r.run_id for r in retention.to_prune(runs, NOW)] == old[:5]  # the newest 5: old[5:], recent
    assert retention.to_prune(runs, NOW, keep_runs=0, keep_days=14) == [r for r in runs if r.run_id in old]
    assert retention.to_prune(runs, NOW, keep_runs=20) == []
    assert {r.run_id for r in runs} == set(old + recent)


def test_prune_removes_whole_run_directories_and_says_how_much(state):
    ids = [run_at(state, NOW - (30 + n) * DAY, 1000 * (n + 1), suffix=f"{n:04x}") for n in range(7)]
    dry, problems = retention.prune(journal.runs(), NOW, dry_run=True)
    sizes = {i: (state / i / "journal.jsonl").stat().st_size + 1000 * (n + 1) for n, i in enumerate(ids)}
    assert problems == [] and [(p.run.run_id, p.size) for p in dry] == [(i, sizes[i]) for i in ids[:4:-1]]
    assert len(journal.runs()) == 7  # a dry run removes nothing
    done, _ = retention.prune(journal.runs(), NOW)
    assert [p.run.run_id for p in done] == [ids[6], ids[5]]
    assert sorted(p.name for p in state.iterdir()) == sorted(ids[:5])


def test_fix_prune_lists_with_sizes_then_removes(state):
    now = time.time()
    ids = [run_at(state, now - (30 + n) * DAY, 1_500_000, suffix=f"{n:04x}") for n in range(6)]
    env = {"XDG_STATE_HOME": str(state.parent.parent)}
    r = run_cli("fix", "--prune", "--dry-run", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Restore points: fix keeps the newest 5 runs and every run of the last 14 days."
    assert lines[1] == "Would remove 1 run(s), 1.5 MB:"
    assert lines[2].split() == [ids[5], "fix", "fixed", "1.5", "MB", "t"]
    assert lines[3] == "Kept 5 run(s), 7.5 MB." and len(lines) == 4
    assert (state / ids[5]).is_dir()
    r = run_cli("fix", "--prune", env=env)
    assert r.returncode == 0 and r.stdout.splitlines()[1] == "Removed 1 run(s), 1.5 MB:", r.stdout
    assert not (state / ids[5]).exists() and len(list(state.iterdir())) == 5
    r = run_cli("fix", "--prune", env=env)
    assert r.stdout.splitlines()[1:] == ["Nothing to remove.", "Kept 5 run(s), 7.5 MB."]
    r = run_cli("fix", "--prune", "--list", env=env)
    assert r.returncode == 2 and "--prune goes alone" in r.stderr
