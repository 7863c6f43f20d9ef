"""remedy.runner: a step's command run for real (sh, python), its output streamed line by line, its tail
kept, its timeout and a Ctrl-C killing it with every process it started."""

from __future__ import annotations

import os
import sys
import time

import pytest

from gpudoctor.host import children
from gpudoctor.remedy import runner


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone_soon(pid: int) -> bool:
    end = time.monotonic() + 5
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_output_is_streamed_merged_and_its_tail_kept():
    seen = []
    script = "for i in $(seq 1 50); do echo out $i; done; echo err >&2; exit 3"
    ran = runner.run(["sh", "-c", script], timeout=30, on_line=seen.append)
    assert ran.exit == 3 and not ran.timed_out and ran.error == ""
    assert seen == [f"out {i}" for i in range(1, 51)] + ["err"]
    assert ran.tail == tuple(seen[-runner.TAIL_LINES :])
    assert len(ran.tail) == runner.TAIL_LINES == 40


def test_a_line_longer_than_the_limit_is_passed_on_in_pieces():
    code = f"import sys; sys.stdout.write('x' * ({runner.MAX_LINE} * 2 + 5) + '\\nend\\n')"
    seen = []
    ran = runner.run([sys.executable, "-c", code], timeout=30, on_line=seen.append)
    assert ran.exit == 0
    assert [len(s) for s in seen] == [runner.MAX_LINE, runner.MAX_LINE, 5, 3]


def test_undecodable_bytes_and_crlf_do_not_break_a_line():
    ran = runner.run(["printf", "caf\\351\\r\\nok\\n"], timeout=30)
    assert ran.tail == ("caf\ufffd", "ok")


def test_a_command_that_cannot_start():
    ran = runner.run(["/nonexistent/pip", "install", "x"], timeout=30)
    assert (ran.exit, ran.tail) == (None, ())
    assert ran.error == "cannot start /nonexistent/pip: No such file or directory"


def test_a_timeout_kills_the_command_and_what_it_started(tmp_path):
    pidfile = tmp_path / "grandchild"
    script = f"sleep 60 & echo $! > {pidfile}; echo started; wait"
    start = time.monotonic()
    ran = runner.run(["sh", "-c", script], timeout=1.5)
    assert ran.timed_out and ran.exit is None
    assert ran.tail == ("started",)
    assert time.monotonic() - start < 10
    assert _gone_soon(int(pidfile.read_text()))
    assert children.running() == []


def test_a_ctrl_c_kills_the_command_and_is_raised_again(tmp_path):
    pidfile = tmp_path / "grandchild"
    script = f"sleep 60 & echo $! > {pidfile}; echo started; wait"

    def interrupt(line):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run(["sh", "-c", script], timeout=30, on_line=interrupt)
    assert _gone_soon(int(pidfile.read_text()))
    assert children.running() == []


def test_a_system_step_stays_in_gpudoctors_session():
    code = "import os; print(os.getsid(0))"
    own = runner.run([sys.executable, "-c", code], timeout=30)
    shared = runner.run([sys.executable, "-c", code], timeout=30, own_session=False)
    assert int(shared.tail[0]) == os.getsid(0)
    assert int(own.tail[0]) != os.getsid(0)
