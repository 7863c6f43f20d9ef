"""The live Host: real files, real processes, real deadlines."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from gpudoctor.host.base import NOT_FOUND, TIMED_OUT, Deadline, HostError
from gpudoctor.host.live import LiveHost


def test_read_and_listdir(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    host = LiveHost()
    assert host.read(str(tmp_path / "a.txt")) == "hello\n"
    assert host.listdir(str(tmp_path)) == ["a.txt"]
    with pytest.raises(HostError) as e:
        host.read(str(tmp_path / "missing"))
    assert e.value.reason == NOT_FOUND
    with pytest.raises(HostError) as e:
        host.listdir(str(tmp_path / "missing"))
    assert e.value.reason == NOT_FOUND


def test_proc_sys_files_read_whole():
    # One multi-MiB read() of a /proc/sys file fails with ENOMEM; reading in chunks does not.
    assert LiveHost().read("/proc/sys/kernel/osrelease").strip() == os.uname().release


def test_the_machine_is_the_kernels_uname_machine():
    """system.machine on this machine: the kernel.arch sysctl where the kernel has it, else `uname -m`."""
    from gpudoctor.probes import system

    fact = system.probe(LiveHost())["system.machine"]
    assert fact.value == os.uname().machine
    assert fact.source in ("/proc/sys/kernel/arch", "uname -m")


def test_run_returns_output_and_status():
    result = LiveHost().run(
        (sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    )
    assert (result.rc, result.stdout, result.stderr) == (3, "out\n", "err\n")


def test_run_missing_program():
    with pytest.raises(HostError) as e:
        LiveHost().run(("/no/such/program",))
    assert e.value.reason == NOT_FOUND


def test_run_never_uses_a_shell(tmp_path):
    marker = tmp_path / "x"
    result = LiveHost().run(("echo", f"; touch {marker}"))
    assert result.stdout.strip() == f"; touch {marker}"
    assert not marker.exists()


HANGS_AND_IGNORES_TERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(60)
"""

# A child that leaves a grandchild in a session of its own, holding the pipes, and then hangs.
ESCAPES_THE_GROUP = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"], start_new_session=True)
time.sleep(60)
"""


@pytest.mark.parametrize("program", [HANGS_AND_IGNORES_TERM, ESCAPES_THE_GROUP])
def test_run_ends_within_its_timeout(program):
    host = LiveHost()
    start = time.monotonic()
    with pytest.raises(HostError) as e:
        host.run((sys.executable, "-c", program), timeout=0.5)
    assert e.value.reason == TIMED_OUT
    assert time.monotonic() - start < 1.5
    assert host.timed_out == [f"{sys.executable} -c {program}"]


def test_run_is_clamped_to_the_deadline():
    host = LiveHost(deadline=Deadline(0.3))
    start = time.monotonic()
    with pytest.raises(HostError):
        host.run((sys.executable, "-c", "import time; time.sleep(5)"), timeout=5)
    assert time.monotonic() - start < 1.0
    with pytest.raises(HostError) as e:
        host.run(("true",))
    assert e.value.reason == TIMED_OUT


def test_same_command_runs_once_per_check(tmp_path):
    counter = tmp_path / "n"
    prog = f"import pathlib; p = pathlib.Path({str(counter)!r}); "
    prog += "p.write_text(p.read_text() + 'x' if p.exists() else 'x')"
    host = LiveHost()
    host.run((sys.executable, "-c", prog))
    host.run((sys.executable, "-c", prog))
    assert counter.read_text() == "x"


def test_python_inspects_another_interpreter_without_importing_frameworks(tmp_path):
    host = LiveHost(python=sys.executable)
    data = host.python()
    assert data["format"] == 1
    assert data["executable"] == sys.executable
    assert "pytest" in data["all"]


def test_python_failure_is_a_host_error(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(HostError) as e:
        LiveHost(python=str(fake)).python()
    assert e.value.reason == "python failed"
    assert "broken" in e.value.detail


def test_a_hung_interpreter_is_named_by_its_path_not_its_program(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    host = LiveHost(deadline=Deadline(0.5), python=str(fake))
    with pytest.raises(HostError) as e:
        host.python()
    assert e.value.reason == TIMED_OUT
    assert host.timed_out == [f"python inspection of {fake}"]


def test_the_inspection_starts_in_the_background_and_runs_once(tmp_path):
    """inspect_python_early returns at once; the probe's host.python() later gets that same run."""
    gate, count = tmp_path / "gate", tmp_path / "count"
    fake = tmp_path / "python"
    fake.write_text(
        f'#!/bin/sh\necho run >> "{count}"\n'
        f'while [ ! -e "{gate}" ]; do sleep 0.02; done\nexec "{sys.executable}" "$@"\n'
    )
    fake.chmod(0o755)
    host = LiveHost(deadline=Deadline(30), python=str(fake))
    host.inspect_python_early()  # the interpreter waits at the gate: this must not
    for _ in range(500):
        if count.exists():
            break
        time.sleep(0.01)
    assert count.read_text() == "run\n"  # started although nothing asked for it yet
    gate.touch()
    assert host.python()["format"] == 1
    assert host.python(str(fake))["format"] == 1
    assert count.read_text() == "run\n"  # once


def test_an_early_inspection_that_fails_fails_the_probes_call_the_same_way(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 1\n")
    fake.chmod(0o755)
    host = LiveHost(python=str(fake))
    host.inspect_python_early()
    with pytest.raises(HostError) as e:
        host.python()
    assert (e.value.reason, "broken" in e.value.detail) == ("python failed", True)


def test_an_interpreter_flooding_its_output_cannot_be_inspected(tmp_path):
    """A hostile `--python` printing without end: gpudoctor stops reading at MAX_OUTPUT, kills it, exits 2
    with the reason, and its own memory stays small. The address space is capped so that a gpudoctor that
    read it all fails here rather than exhausting the machine.

    The peak is VmHWM of gpudoctor's own address space, read as it exits (FLOOD_RUNNER): the child's
    ru_maxrss would not do, as Linux carries the forking process's peak across fork and exec (a pytest
    process of 1 GB reads as a gpudoctor of 1 GB)."""
    import subprocess

    flood = tmp_path / "python"
    flood.write_text('#!/bin/sh\nexec yes "$0"\n')  # its command line names it
    flood.chmod(0o755)
    peak = tmp_path / "peak"
    root = Path(__file__).parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), NO_COLOR="1")
    runner = [sys.executable, "-c", FLOOD_RUNNER, str(2 << 30), str(peak), "check", "--python", str(flood)]
    proc = subprocess.run(
        runner,
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"gpudoctor: --python: inspecting {flood} failed: printed more than 8 MiB to stdout; gpudoctor "
        "stopped reading and killed it\n"
    )
    assert 0 < int(peak.read_text()) < 400 * 1024  # KiB
    assert not [p for p in os.listdir("/proc") if p.isdigit() and str(flood).encode() in _cmdline(p)]


# gpudoctor's own console(), under an address-space cap, writing its peak resident set as it leaves by
# os._exit (argv: the cap in bytes, the file for the peak in KiB, then gpudoctor's arguments)
FLOOD_RUNNER = """
import os, resource, sys
cap, out = int(sys.argv[1]), sys.argv[2]
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
sys.argv = ["gpudoctor", *sys.argv[3:]]
leave = os._exit
def _exit(code):
    with open("/proc/self/status") as f:
        hwm = [line.split()[1] for line in f if line.startswith("VmHWM:")]
    with open(out, "w") as f:
        f.write(hwm[0])
    leave(code)
os._exit = _exit
from gpudoctor.entry import console
console()
"""


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_command_printing_past_the_bound_keeps_its_first_bytes_and_status():
    """A command (not an inspection) that prints more than MAX_OUTPUT: its first MAX_OUTPUT bytes are kept,
    as before the bound, and the rest is read and dropped, never held."""
    from gpudoctor.host.children import MAX_OUTPUT

    result = LiveHost().run(("sh", "-c", f"head -c {MAX_OUTPUT + 5000} /dev/zero | tr '\\0' x"), timeout=30)
    assert (result.rc, len(result.stdout), result.stdout.strip("x")) == (0, MAX_OUTPUT, "")


def test_runtime_children_get_only_the_variables_they_need(monkeypatch):
    monkeypatch.setenv("GPUDOCTOR_TEST_SECRET", "do not pass me on")
    monkeypatch.setenv("FAKE_CUDA_SCENARIO", "802")
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda-13.0")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    argv = (sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))")
    env = json.loads(LiveHost()._child(argv, 5.0, "environment")["stdout"])
    assert not {"GPUDOCTOR_TEST_SECRET", "PYTHONPATH", "FAKE_CUDA_SCENARIO"} & set(env)
    assert (env["CUDA_HOME"], env["XLA_PYTHON_CLIENT_PREALLOCATE"], env["LC_ALL"]) == (
        "/usr/local/cuda-13.0",
        "false",
        "C",
    )
