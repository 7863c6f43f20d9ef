"""pipeline/check.py: one Result per Python environment judged, each naming its own Target; the machine's
facts read once and shared."""

from __future__ import annotations

import sys

from gpudoctor.host.base import Deadline
from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_checks
from gpudoctor.pipeline.result import Target

from conftest import H200


def test_each_environment_carries_its_own_target(tmp_path):
    missing = str(tmp_path / "no-such-python")
    host = LiveHost(deadline=Deadline(20), python=[missing, sys.executable])
    results = run_checks(host, "live", Deadline(20), [])
    assert [r.target for r in results] == [Target(missing, "--python"), Target(sys.executable, "--python")]
    # The environment that could not be inspected says so in its own facts, not in its neighbour's.
    assert results[0].facts.get("python.executable").unknown.startswith(f"inspecting {missing} failed")
    assert results[1].facts.value("python.executable")
    # The machine is read once: both see the same GPUs and driver.
    assert results[0].facts.get("gpus.count") == results[1].facts.get("gpus.count")


def test_a_snapshot_names_the_target_it_recorded():
    result = run_checks(SnapshotHost(load(str(H200)), "h"), "h", Deadline(10), [])[0]
    assert result.target.python == result.facts.value("python.executable") == "/opt/torch/.venv/bin/python3"


def test_no_python_judges_no_target():
    result = run_checks(SnapshotHost(load(str(H200)), "h"), "h", Deadline(10), [], no_python=True)[0]
    assert result.target == Target()
