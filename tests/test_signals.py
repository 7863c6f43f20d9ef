"""Ctrl-C and SIGTERM during a check leave no child process group behind.

The live Host starts every child (commands, the inspection of an interpreter, `--deep`'s runtime children)
in a session of its own, so that a timeout can kill it with whatever it started. The same isolation means
a signal to gpudoctor does not reach them: gpudoctor must kill them itself before it exits (130 for
SIGINT, 143 for SIGTERM). Here the interpreter to inspect (`--python`) is a script that hangs with a child
of its own; the check is signalled while it waits, and the script's whole process group must be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudoctor.host import children

from conftest import ROOT

HANGING_PYTHON = """#!/bin/sh
echo $$ > {pidfile}
sleep 60 &
sleep 60
"""


def live_members(pgid: int) -> list[int]:
    """The processes of group `pgid` that are not zombies (a zombie is dead, waiting to be reaped)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            members.append(int(entry))
    return members


def wait_for(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_a_check_kills_the_child_process_groups(tmp_path, signum, code):
    pidfile = tmp_path / "child.pid"
    python = tmp_path / "python"
    python.write_text(HANGING_PYTHON.format(pidfile=pidfile))
    python.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudoctor", "check", "--python", str(python), "--timeout", "30"],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pgid = None
    try:
        assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 20), "never started"
        pgid = int(pidfile.read_text())
        assert wait_for(lambda: len(live_members(pgid)) >= 2, 5)  # the script and its sleep
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=20)
        assert proc.returncode == code, err
        assert "Traceback" not in err and "gpudoctor: interrupted" in err
        assert wait_for(lambda: live_members(pgid) == [], 5), f"left behind: {live_members(pgid)}"
    finally:
        proc.kill()
        proc.wait()
        if pgid is not None:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass


def test_a_child_started_after_the_signal_is_killed_at_once(tmp_path):
    """A probe thread still running when the signal came cannot start a child that outlives gpudoctor."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    saved = children._closing
    try:
        children._closing = True
        children.track(child.pid)
        assert child.wait(timeout=5) == -signal.SIGKILL
        assert child.pid not in children.running()
    finally:
        children._closing = saved
        child.kill()
        child.wait()
