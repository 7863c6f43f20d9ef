"""No child outlives an interrupted gpudoctor (gpudoctor/host/children.py), with real processes and signals.

Every child gpudoctor starts (the bench worker, `check --deep`'s framework import, the `--python`
inspection) runs in a session of its own, so that a timeout can kill it with whatever it started; the same
isolation means Ctrl-C at the terminal (SIGINT), SIGTERM, or the terminal closing (SIGHUP) does not reach
it: gpudoctor must kill those process groups itself before it exits. Each test keeps a child alive (a fake
framework that sleeps, an interpreter that hangs), signals the gpudoctor process, and looks in /proc for
the child afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_cuda import fakes

from gpudoctor.host import children
from tests.bench.torchfake import scenario

from conftest import ROOT, run_cli
from nvmlrig import SCENARIOS

SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]


def live_processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every process in /proc that is not a zombie."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if state != "Z":
            found.append((int(entry), int(ppid), int(pgrp)))
    return found


def children_of(pid: int) -> list[int]:
    """The live (not zombie) processes whose parent is `pid`."""
    return [p for p, ppid, _ in live_processes() if ppid == pid]


def workers(gpudoctor: int) -> list[int]:
    """The bench workers among gpudoctor's children: `python -I -B -c SOURCE PLAN`, where the inspection
    of the interpreter, started the same way, has its --isolated argument."""
    found = []
    for pid in children_of(gpudoctor):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:4] == [b"-I", b"-B", b"-c"] and b"--isolated" not in argv:
            found.append(pid)
    return found


def written_to(pidfile: Path):
    """started() for a child that writes its pid to `pidfile`."""

    def started(_gpudoctor: int) -> list[int]:
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        return [int(text)] if text else []

    return started


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(predicate, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def signal_and_check(argv: list[str], env: dict, cwd: Path, started, signum: int, code: int) -> None:
    """Run gpudoctor, wait until `started()` names the child pids that must die with it, signal it, and
    assert that it exits with `code` and that none of those children is left."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudoctor", *argv],
        cwd=str(cwd),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids: list[int] = []
    try:
        assert wait_for(lambda: bool(started(proc.pid)), 60), "the child never started"
        pids = started(proc.pid)
        time.sleep(0.3)  # well inside the child's life: it sleeps for an hour
        assert all(alive(p) for p in pids)
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=20)
        assert proc.returncode == code, err
        assert "Traceback" not in err and "gpudoctor: interrupted" in err
        assert wait_for(lambda: not any(alive(p) for p in pids), 5), f"left behind: {pids}"
    finally:
        proc.kill()
        proc.wait()
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture(scope="module")
def sleeping_torch(tmp_path_factory) -> tuple[str, Path]:
    """A venv whose torch import writes its pid to a file and sleeps: (its python, that file)."""
    root = tmp_path_factory.mktemp("sleeping-torch")
    python, site = fakes.make_venv(root / "venv")
    pidfile = root / "import.pid"
    body = f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(3600)\n"
    fakes.write_package(site, {"torch/__init__.py": body}, "torch", fakes.TORCH_VERSION)
    return str(python), pidfile


@pytest.mark.parametrize("signum, code", SIGNALS)
def test_a_signal_during_check_deep_kills_the_framework_import(tmp_path, sleeping_torch, signum, code):
    python, pidfile = sleeping_torch
    pidfile.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")

    argv = ["check", "--deep", "--python", python, "--timeout", "60"]
    signal_and_check(argv, env, tmp_path, written_to(pidfile), signum, code)


@pytest.mark.parametrize("signum, code", SIGNALS)
def test_a_signal_during_bench_kills_the_worker(fake_lib, fake_torch_python, tmp_path, signum, code):
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "LD_LIBRARY_PATH": str(fake_lib),
        "NO_COLOR": "1",
        "PYTHONPATH": str(ROOT),
        "FAKE_NVML_SCENARIO": str(SCENARIOS / "h200-bench.scn"),
        "GPUDOCTOR_FAKE_GPU": str(scenario(tmp_path, hang="matmul_fp32")),
    }
    argv = ["bench", "--seconds", "0.05", "--timeout", "120", "--python", fake_torch_python]
    signal_and_check(argv, env, tmp_path, workers, signum, code)


# An interpreter to inspect that hangs, with a child of its own in its process group.
HANGING_PYTHON = """#!/bin/sh
echo $$ > {pidfile}
sleep 3600 &
sleep 3600
"""


def group_members(pgid: int) -> list[int]:
    """The processes of group `pgid` that are not zombies."""
    return [p for p, _, pgrp in live_processes() if pgrp == pgid]


@pytest.mark.parametrize("signum, code", SIGNALS)
def test_a_signal_during_the_python_inspection_kills_its_whole_group(tmp_path, signum, code):
    pidfile = tmp_path / "inspection.pid"
    python = tmp_path / "python"
    python.write_text(HANGING_PYTHON.format(pidfile=pidfile))
    python.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")

    def started(gpudoctor: int) -> list[int]:
        script = written_to(pidfile)(gpudoctor)
        members = group_members(script[0]) if script else []
        return members if len(members) >= 2 else []  # the script and its sleep

    argv = ["check", "--python", str(python), "--timeout", "30"]
    signal_and_check(argv, env, tmp_path, started, signum, code)


def test_a_child_started_after_the_signal_is_killed_at_once():
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


def test_once_kill_all_began_no_child_starts(tmp_path):
    """A probe thread that reaches spawn after kill_all (gpudoctor is exiting: a bad policy, a signal)
    starts nothing: a child forked then could outlive the os._exit that follows before it is killed."""
    marker = tmp_path / "started"
    saved = children._closing
    try:
        children._closing = True
        with pytest.raises(OSError, match="no new child"):
            children.spawn(["sh", "-c", f"touch {marker}"])
        assert children._starting == 0
    finally:
        children._closing = saved
    time.sleep(0.2)
    assert not marker.exists()


def test_started_with_sighup_ignored_a_hangup_does_not_end_it(tmp_path):
    """`nohup gpudoctor ...` asks to outlive the terminal: SIGHUP stays ignored, SIGTERM still ends it."""
    pidfile = tmp_path / "inspection.pid"
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
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    try:
        assert wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 30), "never started"
        child = int(pidfile.read_text())
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert proc.poll() is None and alive(child)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
        assert proc.returncode == 143, err
        assert wait_for(lambda: not alive(child), 5)
    finally:
        proc.kill()
        proc.wait()


# --- output read into memory is bounded ---------------------------------------------------------------


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_communicate_stops_reading_a_child_past_its_limit(stream):
    """`yes` prints without end: communicate stops at the limit, kills the group and says which stream."""
    argv = ["yes"] if stream == "stdout" else ["sh", "-c", "yes >&2"]
    proc = children.spawn(argv)
    start = time.monotonic()
    with pytest.raises(children.TooMuchOutput) as e:
        children.communicate(proc, 30, limit=1 << 20)
    assert time.monotonic() - start < 5
    assert (e.value.stream, e.value.limit) == (stream, 1 << 20)
    assert str(e.value) == f"printed more than 1 MiB to {stream}"
    assert proc.returncode == -signal.SIGKILL
    assert not alive(proc.pid) and proc.pid not in children.running()


def test_communicate_returns_what_fits_its_limit():
    proc = children.spawn(["sh", "-c", "printf 'abc'; printf 'de' >&2"])
    assert children.communicate(proc, 30, limit=3) == (b"abc", b"de")
    assert proc.returncode == 0


def test_past_its_limit_communicate_can_drop_the_rest_and_let_the_child_end():
    """As commands were read before the bound (the first bytes kept): the child ends by itself."""
    proc = children.spawn(["sh", "-c", "head -c 3000000 /dev/zero; printf 'end' >&2"])
    out, err = children.communicate(proc, 30, limit=1 << 20, stop_past_limit=False)
    assert (out, err, proc.returncode) == (b"\0" * (1 << 20), b"end", 0)


def _alive_with(marker: str) -> list[int]:
    """Processes (not zombies) whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace")
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry))
    return found


def test_no_child_outlives_a_check_that_stops_on_an_error(tmp_path):
    """The inspection starts before the policy is read; a bad policy ends the check, and the child too."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nsleep 30 &\nwait\n")
    fake.chmod(0o755)
    policy = tmp_path / "gpudoctor.toml"
    policy.write_text("this is [ not toml\n")
    proc = run_cli("check", "--python", str(fake), "--policy", str(policy))
    assert proc.returncode == 2 and "policy" in proc.stderr
    assert _alive_with(str(fake)) == []
