"""remedy.interrupts: real signals sent to this process (and to a child started under `nohup`) while a fix
would run its steps, and while it would roll back."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from gpudoctor.host import children
from gpudoctor.remedy.interrupts import ENDING, interruptible, uninterruptible

from conftest import ROOT


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_ending_signal_while_steps_run_is_a_keyboard_interrupt(signum):
    if children.ignored_at_start(signum):  # the tests themselves run under nohup: the nohup test below
        pytest.skip(f"signal {signum} was ignored when the tests started")
    before = signal.getsignal(signum)
    with pytest.raises(KeyboardInterrupt):
        with interruptible():
            os.kill(os.getpid(), signum)
            signal.sigtimedwait([], 0)  # let the handler run (CPython runs it between bytecodes)
            pytest.fail("the signal did not interrupt")
    assert signal.getsignal(signum) is before  # handlers put back


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_while_rolling_back_an_ending_signal_changes_nothing(signum):
    before = signal.getsignal(signum)
    with uninterruptible():
        os.kill(os.getpid(), signum)
        done = True
    assert done
    assert signal.getsignal(signum) is before


def test_the_signals_that_end_a_run():
    assert ENDING == (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


CHILD = """
import os, signal
from gpudoctor.host import children
from gpudoctor.remedy.interrupts import interruptible
with interruptible():
    os.kill(os.getpid(), signal.SIGHUP)
    print("hangup ignored", flush=True)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)
    except KeyboardInterrupt:
        print("terminate interrupts", flush=True)
print("hangup still ignored:", signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)
"""


def test_under_nohup_a_hangup_changes_nothing_and_a_terminate_still_interrupts():
    nohup = shutil.which("nohup")
    assert nohup, "coreutils' nohup is on every Linux this runs on"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [nohup, sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "hangup ignored",
        "terminate interrupts",
        "hangup still ignored: True",
    ]
