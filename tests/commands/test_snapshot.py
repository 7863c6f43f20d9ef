"""`gpudoctor snapshot` (commands/snapshot.py) at its edges (issue 9): each test failed before its fix."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile

from conftest import H200, ROOT, run_cli


def test_snapshot_to_stdout_writes_the_archive_there(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "snapshot", "-o", "-", "--timeout", "20"],
        capture_output=True,
        cwd=tmp_path,
        env=dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "-").exists()
    with tarfile.open(fileobj=io.BytesIO(proc.stdout), mode="r:gz") as tar:
        assert "manifest.json" in tar.getnames()
    assert b"wrote the snapshot to stdout" in proc.stderr


def test_snapshot_with_python_is_refused():
    proc = run_cli("check", "--snapshot", str(H200), "--python", sys.executable)
    assert proc.returncode == 2
    assert "--snapshot" in proc.stderr and "--python" in proc.stderr and proc.stdout == ""
