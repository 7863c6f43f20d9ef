"""Every file a user names is read with a bound: a device or a pipe that never ends (/dev/zero, <(yes)) is
exit 2 with the limit named, never a process that grows until the kernel kills it (issue 24)."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from conftest import H200, ROOT, run_cli

ENDLESS = "/dev/zero"


def _capped(*args: str, stdin=None) -> subprocess.CompletedProcess:
    """The CLI under a 1.5 GiB address-space limit: an unbounded read dies of MemoryError (exit 3) there."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))

    return subprocess.run(
        [sys.executable, "-m", "gpudoctor", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"NO_COLOR": "1", "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "GPUDOCTOR_NO_CACHE": "1"},
        stdin=stdin,
        preexec_fn=limit,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--snapshot", str(H200), "--rules", ENDLESS),
        ("rules", "validate", ENDLESS),
        ("explain", "--rules", ENDLESS, "Error 802: system not yet initialized"),
        ("bench", "--baseline", ENDLESS),
    ],
)
def test_an_endless_input_file_is_exit_2_naming_the_limit(args):
    r = _capped(*args)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"{ENDLESS}" in r.stderr and "larger than" in r.stderr, r.stderr[-2000:]


def test_an_endless_pipe_of_rules_is_exit_2():
    # `check --rules <(yes)`, as the issue met it: a pipe, not a device.
    script = 'ulimit -v 1500000; exec "$0" -m gpudoctor check --snapshot "$1" --rules <(yes)'
    r = subprocess.run(
        ["bash", "-c", script, sys.executable, str(H200)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"NO_COLOR": "1", "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "GPUDOCTOR_NO_CACHE": "1"},
        timeout=60,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert "larger than 1 MiB" in r.stderr


def test_an_endless_log_is_exit_2_naming_the_limit():
    r = _capped("explain", "--log", ENDLESS)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr == f"gpudoctor: --log {ENDLESS}: larger than 256 MiB, more than gpudoctor reads\n"


def test_an_endless_log_on_stdin_is_exit_2():
    with open(ENDLESS, "rb") as zero:
        r = _capped("explain", "--log", "-", stdin=zero)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr == "gpudoctor: --log -: larger than 256 MiB, more than gpudoctor reads\n"


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--snapshot", ENDLESS),
        ("fix", "--plan", ENDLESS),
        ("fleet", ENDLESS),
    ],
)
def test_the_inputs_that_were_bounded_already_stay_so(args):
    r = _capped(*args)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "MemoryError" not in r.stderr


def test_a_policy_that_is_not_a_file_is_refused():
    r = run_cli("check", "--snapshot", str(H200), "--policy", ENDLESS)
    assert r.returncode == 2
    assert f"{ENDLESS}: no such policy file" in r.stderr
