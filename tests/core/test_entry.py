"""The process's edges (gpudoctor/entry.py, issue 9): an ASCII-only output encoding, a reader that goes
away. Each test failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import H200, ROOT, run_cli


def test_text_output_under_an_ascii_encoding_prints():
    proc = run_cli("check", "--snapshot", str(H200), env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert "Driver      580.159.04" in proc.stdout and "crash" not in proc.stderr


@pytest.mark.parametrize("args", [("check", "--format", "json"), ("facts",)])
def test_a_reader_that_goes_away_is_exit_1_without_a_crash(args):
    """`gpudoctor check | head -1` on both paths (check without typer, facts through it), as click does."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "gpudoctor", *args, "--snapshot", str(H200)],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60,
    )
    os.close(write_end)
    assert (proc.returncode, proc.stderr) == (1, "")
