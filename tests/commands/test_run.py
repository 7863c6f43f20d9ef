"""`gpudoctor run -- CMD ARGS...` (issue 13): the command runs as it would straight from the shell, byte for
byte, with its exit code, its signals and its arguments; a failure is explained after its output.

Every test but the last few runs gpudoctor as users do, a real process (`python -m gpudoctor run -- ...`
with the tree first on PYTHONPATH), and compares with running the command directly.
"""

from __future__ import annotations

import hashlib
import os
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from gpudoctor.commands import run as run_module

from conftest import ROOT

PY = sys.executable


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.update(extra)
    return env


def gpudoctor(*argv: str, options: tuple[str, ...] = (), **kw) -> subprocess.CompletedProcess:
    kw.setdefault("env", environment())
    return subprocess.run(
        [PY, "-m", "gpudoctor", "run", *options, "--", *argv], capture_output=True, timeout=30, **kw
    )


def directly(*argv: str, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("env", environment())
    return subprocess.run(list(argv), capture_output=True, timeout=30, **kw)


def start(*argv: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [PY, "-m", "gpudoctor", "run", "--", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
        **kw,
    )


def wait_for_line(stream, expected: bytes, seconds: float = 15.0) -> None:
    """Read `stream` (a pipe) until the line `expected` has come."""
    end = time.monotonic() + seconds
    got = b""
    while expected + b"\n" not in got:
        assert time.monotonic() < end, f"no {expected!r} from the command; got {got!r}"
        ready, _, _ = select.select([stream], [], [], max(0.0, end - time.monotonic()))
        if ready:
            chunk = os.read(stream.fileno(), 4096)
            assert chunk, f"the command's stdout closed before {expected!r}; got {got!r}"
            got += chunk


MIXED = r"""
import os, sys
os.write(1, b"out \xff\xfe\x00 one\n")
os.write(2, b"err \x80\x81 one\n")
os.write(1, b"out two, no newline")
os.write(2, b"err two, no newline \xc3")
sys.exit(int(sys.argv[1]))
"""


def test_a_command_that_succeeds_passes_through_byte_for_byte():
    ran = gpudoctor(PY, "-c", MIXED, "0")
    direct = directly(PY, "-c", MIXED, "0")
    assert direct.stdout.endswith(b"no newline") and b"\xff" in direct.stdout
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, direct.stdout, direct.stderr)


def test_a_command_that_fails_keeps_its_exit_code_and_its_output():
    ran = gpudoctor(PY, "-c", MIXED, "3")
    direct = directly(PY, "-c", MIXED, "3")
    assert ran.returncode == direct.returncode == 3
    assert ran.stdout == direct.stdout
    assert ran.stderr.startswith(direct.stderr)
    assert ran.stderr == direct.stderr  # nothing in its error output is a known cause: nothing follows
    quiet = gpudoctor(PY, "-c", MIXED, "3", options=("--no-explain", "--timeout", "2"))
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (3, direct.stdout, direct.stderr)


def test_a_failure_with_a_known_error_is_explained_after_its_own_output():
    script = (
        "import sys; sys.stderr.write('RuntimeError: Torch not compiled with CUDA enabled\\n'); sys.exit(5)"
    )
    ran = gpudoctor(PY, "-c", script)
    direct = directly(PY, "-c", script)
    assert ran.returncode == direct.returncode == 5
    assert ran.stdout == direct.stdout
    own, _, block = ran.stderr.partition(b"\ngpudoctor: the command failed;")
    assert own == direct.stderr  # the command's own output first, unchanged
    assert b"  GD-FW-001 \xc2\xb7 CPU-only PyTorch on a GPU host: " in block


BINARY = r"""
import os, sys
out, err = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
for i in range(256):  # interleaved: 4 KiB of stdout, 1 KiB of stderr
    for fd, data in ((1, out[i * 4096 : (i + 1) * 4096]), (2, err[i * 1024 : (i + 1) * 1024])):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
"""


def test_binary_output_passes_through_identical(tmp_path):
    out, err = os.urandom(1024 * 1024), os.urandom(256 * 1024)
    (tmp_path / "out").write_bytes(out)
    (tmp_path / "err").write_bytes(err)
    ran = gpudoctor(PY, "-c", BINARY, str(tmp_path / "out"), str(tmp_path / "err"))
    assert ran.returncode == 0
    assert hashlib.sha256(ran.stdout).hexdigest() == hashlib.sha256(out).hexdigest()
    assert hashlib.sha256(ran.stderr).hexdigest() == hashlib.sha256(err).hexdigest()


def test_stdin_passes_through():
    data = os.urandom(200 * 1024) + b"\x00\xff no newline"
    echo = "import shutil, sys; shutil.copyfileobj(sys.stdin.buffer, sys.stdout.buffer)"
    ran = gpudoctor(PY, "-c", echo, input=data)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, data, b"")


def test_a_terminal_stays_a_terminal():
    controller, terminal = os.openpty()
    try:
        proc = subprocess.Popen(
            [PY, "-m", "gpudoctor", "run", "--", PY, "-c", "import os; print(os.isatty(0), os.isatty(1))"],
            stdin=terminal,
            stdout=terminal,
            stderr=subprocess.PIPE,
            env=environment(),
        )
        os.close(terminal)
        terminal = -1
        assert proc.wait(timeout=30) == 0
        assert os.read(controller, 1024).strip() == b"True True"
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)


@pytest.mark.parametrize("signum, code", [(signal.SIGKILL, 137), (signal.SIGTERM, 143)])
def test_a_command_killed_by_a_signal_exits_128_plus_it(signum, code):
    ran = gpudoctor(PY, "-c", f"import os; os.write(2, b'dying'); os.kill(os.getpid(), {int(signum)})")
    assert ran.returncode == code
    assert ran.stderr == b"dying"


TRAP = r"""
import os, signal, sys, time
def on(signum, frame):
    os.write(1, ("got " + signal.Signals(signum).name[3:] + "\n").encode())
    if signum != signal.SIGINT:
        os._exit(7)
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGINT):
    signal.signal(s, on)
os.write(1, b"ready\n")
end = time.monotonic() + 20
while time.monotonic() < end:
    time.sleep(0.02)
os._exit(1)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP])
def test_a_signal_to_gpudoctor_is_forwarded_to_the_command(signum):
    proc = start(PY, "-c", TRAP)
    try:
        wait_for_line(proc.stdout, b"ready")
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    name = signal.Signals(signum).name[3:]
    assert (proc.returncode, out, err) == (7, f"got {name}\n".encode(), b"")


def test_sigint_to_gpudoctor_alone_is_not_forwarded_and_does_not_end_it():
    """A terminal's Ctrl-C reaches the command itself (same process group): gpudoctor does not send it
    again, and does not end before the command does."""
    proc = start(PY, "-c", TRAP)
    try:
        wait_for_line(proc.stdout, b"ready")
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.2)
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert (proc.returncode, out, err) == (7, b"got TERM\n", b"")


def test_sigint_to_the_process_group_reaches_the_command_and_gpudoctor_waits_for_it():
    """As a terminal sends Ctrl-C: to the foreground process group, gpudoctor's, which the command is in.
    (That it comes once is the test above: a Python child would not tell two close SIGINTs from one.)"""
    proc = start(PY, "-c", TRAP, start_new_session=True)
    try:
        wait_for_line(proc.stdout, b"ready")
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.2)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert (proc.returncode, out, err) == (7, b"got INT\ngot TERM\n", b"")


ARGV = "import os, sys; os.write(1, repr([os.fsencode(a) for a in sys.argv[1:]]).encode())"
LOOKALIKES = ("--help", "--timeout", "5", "-x", "--no-explain", "--", "", "a b", "\udcff\udcfe")


def test_arguments_that_look_like_gpudoctor_options_reach_the_command_unchanged():
    direct = directly(PY, "-c", ARGV, *LOOKALIKES)
    assert direct.stdout.startswith(b"[b'--help', b'--timeout'")
    assert gpudoctor(PY, "-c", ARGV, *LOOKALIKES).stdout == direct.stdout
    # Without `--`, the command's first word ends gpudoctor's options.
    env = environment()
    ran = subprocess.run(
        [PY, "-m", "gpudoctor", "run", "--timeout", "3", PY, "-c", ARGV, *LOOKALIKES],
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, direct.stdout, b"")


def test_the_environment_and_signal_state_reach_the_command_unchanged(tmp_path):
    """Under the C locale, Python (PEP 538) adds LC_CTYPE to its own environment: not to the command's. A
    signal ignored when gpudoctor started (nohup) stays ignored; nothing else is ignored or blocked."""
    env = {k: v for k, v in environment().items() if not k.startswith("LC_") and k != "LANG"}
    assert sorted(gpudoctor("env", env=env).stdout.splitlines()) == sorted(
        directly("env", env=env).stdout.splitlines()
    )
    status = ("grep", "^Sig[BIC]", "/proc/self/status")
    assert gpudoctor(*status).stdout == directly(*status).stdout
    # Started as nohup (and a script's `cmd &`) start it; Python's own SIGPIPE/SIGXFSZ are put back.
    nohup = (
        "import os, signal, sys\n"
        "for s in (signal.SIGPIPE, signal.SIGXFSZ): signal.signal(s, signal.SIG_DFL)\n"
        "for s in (signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)\n"
        "os.execvp(sys.argv[1], sys.argv[1:])\n"
    )
    ignored = directly(PY, "-c", nohup, *status).stdout
    assert b"SigIgn:\t0000000000000003" in ignored  # SIGHUP (1), SIGINT (2)
    via = directly(PY, "-c", nohup, PY, "-m", "gpudoctor", "run", "--", *status).stdout
    assert via == ignored


def test_a_command_that_leaves_a_process_holding_its_stderr_ends_when_it_does():
    begun = time.monotonic()
    ran = gpudoctor("sh", "-c", "sleep 3 >/dev/null & echo bye >&2; exit 4")
    assert (ran.returncode, ran.stderr) == (4, b"bye\n")
    assert time.monotonic() - begun < 2.5


def test_when_gpudoctors_stderr_goes_away_the_command_meets_epipe():
    child = (
        "import os, sys, time\n"
        "for _ in range(500):\n"
        "    try:\n"
        "        os.write(2, b'x' * 100)\n"
        "    except BrokenPipeError:\n"
        "        os.write(1, b'EPIPE'); os._exit(9)\n"
        "    time.sleep(0.005)\n"
    )
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        ran = subprocess.run(
            [PY, "-m", "gpudoctor", "run", "--", PY, "-c", child],
            stdout=subprocess.PIPE,
            stderr=write_end,
            env=environment(),
            timeout=30,
        )
    finally:
        os.close(write_end)
    assert (ran.returncode, ran.stdout) == (9, b"EPIPE")


def test_a_command_not_found_is_127_and_one_line():
    ran = gpudoctor("gpudoctor-no-such-command", "--help")
    assert (ran.returncode, ran.stdout) == (127, b"")
    assert ran.stderr == b"gpudoctor: run: cannot start gpudoctor-no-such-command: command not found\n"
    missing = gpudoctor("/nonexistent/tool")
    assert missing.returncode == 127
    assert missing.stderr == b"gpudoctor: run: cannot start /nonexistent/tool: No such file or directory\n"


def test_a_command_not_executable_is_126_and_one_line(tmp_path):
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    ran = gpudoctor(str(script))
    assert (ran.returncode, ran.stdout) == (126, b"")
    assert ran.stderr == f"gpudoctor: run: cannot start {script}: Permission denied\n".encode()


def test_run_without_a_command_is_usage_exit_2():
    for argv in ([], ["--"], ["--no-explain"]):
        ran = subprocess.run(
            [PY, "-m", "gpudoctor", "run", *argv], capture_output=True, env=environment(), timeout=30
        )
        assert ran.returncode == 2, argv
        assert b"Usage:" in ran.stderr and ran.stdout == b""


# In-process: the explanation after a failure (the matcher is replaced here).

FAIL = (PY, "-c", "import os, sys; os.write(2, b'RuntimeError: boom\\n'); sys.exit(4)")


@pytest.fixture
def explain(monkeypatch):
    import gpudoctor.explain.failure as failure

    def replace(function):
        monkeypatch.setattr(failure, "explain_failure", function)

    return replace


def test_the_explanation_follows_the_commands_output(explain, capfd):
    seen = []
    explain(lambda tail, timeout=10.0, target=None: seen.append((tail, timeout, target)) or "GD-X-001: y")
    assert run_module.run(FAIL, timeout=2.5) == 4
    assert capfd.readouterr().err == "RuntimeError: boom\n\nGD-X-001: y\n"
    # the interpreter the command runs is what is judged (host/command_python.py)
    assert seen == [("RuntimeError: boom\n", 2.5, (PY, "argv[0] of the command"))]


def test_no_explanation_on_success_without_stderr_or_with_no_explain(explain, capfd):
    explain(lambda tail, timeout=10.0, target=None: "should not be printed")
    assert run_module.run((PY, "-c", "import os; os.write(2, b'warning only')")) == 0
    assert run_module.run((PY, "-c", "import sys; sys.exit(5)")) == 5
    assert run_module.run(FAIL, explain=False) == 4
    assert capfd.readouterr().err == "warning only" + "RuntimeError: boom\n"


def test_the_commands_interpreter_is_the_checks_target(monkeypatch):
    """explain_failure judges the interpreter run found, and the facts say the command chose it."""
    import gpudoctor.pipeline.check as check
    from gpudoctor.explain.failure import explain_failure
    from gpudoctor.host.command_python import Judged

    seen = []

    def stop(host, *_args, **_kw):
        seen.append(host.python_targets())
        raise RuntimeError("stop here")

    monkeypatch.setattr(check, "run_checks", stop)
    with pytest.raises(RuntimeError, match="stop here"):
        explain_failure("RuntimeError: Torch not compiled with CUDA enabled\n", 5.0, Judged(PY, "argv[0]"))
    assert seen == [[(PY, "command")]]


def test_explaining_that_fails_does_not_change_the_exit_code(explain, capfd):
    def broken(tail, timeout=10.0, target=None):
        raise RuntimeError("matcher broke")

    explain(broken)
    assert run_module.run(FAIL) == 4
    said = "gpudoctor: could not explain the failure: RuntimeError: matcher broke\n"
    assert capfd.readouterr().err == "RuntimeError: boom\n" + said


def test_explaining_that_does_not_answer_is_given_up(explain, capfd, monkeypatch):
    release = threading.Event()
    explain(lambda tail, timeout=10.0, target=None: release.wait(10) and "")
    monkeypatch.setattr(run_module, "EXPLAIN_GRACE_S", 0.05)
    try:
        assert run_module.run(FAIL, timeout=0.1) == 4
    finally:
        release.set()
    said = "gpudoctor: could not explain the failure: no answer within 0.1 s\n"
    assert capfd.readouterr().err == "RuntimeError: boom\n" + said


def test_the_kept_tail_is_the_last_64_kib():
    command = (PY, "-c", "import os, sys; os.write(2, b'a' * 200000 + b'END'); sys.exit(1)")
    with open(os.devnull, "wb") as devnull:
        saved = os.dup(2)
        os.dup2(devnull.fileno(), 2)
        try:
            code, tail = run_module._run_command(command)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    assert code == 1 and len(tail) == run_module.TAIL_BYTES and tail.endswith(b"aEND")
