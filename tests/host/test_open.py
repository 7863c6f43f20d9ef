"""Which Host a command reads (host/open.py): the live machine, or a snapshot of one."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpudoctor.host.base import Deadline, SnapshotError
from gpudoctor.host.live import LiveHost
from gpudoctor.host.open import open_host
from gpudoctor.host.snapshot import SnapshotHost

from conftest import H200, ROOT


def test_a_snapshot_path_opens_that_snapshot():
    host, source = open_host(str(H200), None, Deadline(10))
    assert isinstance(host, SnapshotHost) and source == str(H200)
    assert host.read("/proc/driver/nvidia/version").startswith("NVRM version:")


def test_no_snapshot_opens_the_live_machine_with_its_python_and_deadline():
    deadline = Deadline(10)
    host, source = open_host(None, sys.executable, deadline)
    assert isinstance(host, LiveHost) and source == "live"
    assert host.target_python() == sys.executable


def test_a_snapshot_that_cannot_be_read_is_a_snapshot_error(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(SnapshotError):
        open_host(str(tmp_path), None, Deadline(10))
    with pytest.raises(SnapshotError):
        open_host(str(tmp_path / "absent.tar.gz"), None, Deadline(10))


def test_a_live_open_never_imports_the_snapshot_machinery():
    prog = (
        "import json, sys\n"
        "from gpudoctor.host.base import Deadline\n"
        "from gpudoctor.host.open import open_host\n"
        "open_host(None, None, Deadline(5))\n"
        "loaded = ['gpudoctor.host.snapshot' in sys.modules, 'gpudoctor.host.live' in sys.modules]\n"
        "print(json.dumps(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", prog], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True
    )
    assert json.loads(out.stdout) == [False, True]
