"""One environment of several (host/target.py): `check --python A --python B` gives each environment's
probes a Host whose Python questions go to that interpreter, and `--no-python` one that runs none; every
other question goes to the machine's Host. Over the real H200 capture (tests/fixtures/h200-driver580-
snapshot)."""

from __future__ import annotations

import pytest

from gpudoctor.host.base import HostError
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.host.target import NOT_INSPECTED, NoPythonHost, TargetHost

from conftest import H200

RECORDED = "/opt/torch/.venv/bin/python3"  # the interpreter the capture inspected (its README)


class Asked(SnapshotHost):
    """The H200 snapshot, noting the interpreter each python() call names."""

    def __init__(self) -> None:
        super().__init__(load(str(H200)))
        self.asked: list = []

    def python(self, interpreter=None):
        self.asked.append(interpreter)
        return super().python(interpreter)


def test_a_target_host_answers_python_questions_for_its_interpreter():
    inner = Asked()
    host = TargetHost(inner, (RECORDED, "--python"))
    assert host.python_targets() == [(RECORDED, "--python")]
    assert host.target_python() == RECORDED
    assert host.python()["executable"] == inner.python(RECORDED)["executable"]
    assert inner.asked[0] == RECORDED  # python() without an argument asked for the target


def test_a_target_host_passes_every_other_question_to_the_machine():
    inner = Asked()
    host = TargetHost(inner, ("/usr/bin/python3", "--python"))
    version = "/proc/driver/nvidia/version"
    assert host.read(version) == inner.read(version)
    assert host.read(version).startswith(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04"
    )
    assert host.kind == "snapshot"
    assert host.python(RECORDED) == inner.python(RECORDED)  # an explicit interpreter is kept


def test_no_python_runs_no_interpreter_and_says_why():
    host = NoPythonHost(Asked())
    assert (host.python_targets(), host.target_python()) == ([], "")
    with pytest.raises(HostError) as e:
        host.python()
    assert (e.value.reason, e.value.detail) == (NOT_INSPECTED, "--no-python")
    assert host.inner.asked == []
    assert host.read("/proc/driver/nvidia/version").startswith("NVRM version:")
