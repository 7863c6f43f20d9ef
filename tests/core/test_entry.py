"""The process's edges (gpudoctor/entry.py, issue 9): an ASCII-only output encoding, a reader that goes
away. Each test failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.entry import _quick

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


# --- The `gpudoctor` process at its boundary (gpudoctor/entry.py, issue 24): closed or broken standard
# streams, an ASCII-only locale, secrets in option values. Each test runs the installed console script as a
# shell runs it (a real process; `sh -c 'exec "$@" >&-'` closes a stream as `gpudoctor check >&-` does).

SCRIPT = Path(sys.executable).parent / "gpudoctor"
GPUDOCTOR = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gpudoctor"]
ENV = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT))

COMMAND_LINES = {
    "--version": ["--version"],
    "--help": ["--help"],
    "check": ["check", "--snapshot", str(H200)],
    "check --format json": ["check", "--snapshot", str(H200), "--format", "json"],
    "preflight": ["check", "--snapshot", str(H200), "--profile", "preflight"],
    "facts": ["facts", "--snapshot", str(H200)],
    "rules list": ["rules", "list"],
    "run (exit 7)": ["run", "--", "sh", "-c", "echo out; echo err >&2; exit 7"],
    "usage error": ["check", "--format", "xml"],
}


def gpudoctor(argv: list[str], closing: str = "", **kw) -> subprocess.CompletedProcess:
    """The console script with `argv`, through sh when `closing` names a redirection (`>&-`, `2>&-`)."""
    command = GPUDOCTOR + argv
    if closing:
        command = ["sh", "-c", f'exec "$@" {closing}', "sh", *command]
    kw.setdefault("capture_output", True)
    return subprocess.run(command, env=kw.pop("env", ENV), timeout=60, **kw)


@pytest.fixture(scope="module")
def codes() -> dict[str, int]:
    """Each command line's exit code with every stream open."""
    return {name: gpudoctor(argv).returncode for name, argv in COMMAND_LINES.items()}


def test_the_command_lines_exit_as_documented(codes):
    assert codes == {
        "--version": 0,
        "--help": 0,
        "check": 0,
        "check --format json": 0,
        "preflight": 0,
        "facts": 0,
        "rules list": 0,
        "run (exit 7)": 7,
        "usage error": 2,
    }


@pytest.mark.parametrize("name", COMMAND_LINES)
def test_a_closed_stdout_changes_nothing_but_where_the_output_goes(name, codes):
    proc = gpudoctor(COMMAND_LINES[name], ">&-")
    assert (proc.returncode, b"Traceback" in proc.stderr, b"internal error" in proc.stderr) == (
        codes[name],
        False,
        False,
    ), proc.stderr


@pytest.mark.parametrize("name", COMMAND_LINES)
def test_a_closed_stderr_changes_nothing_but_where_the_output_goes(name, codes):
    proc = gpudoctor(COMMAND_LINES[name], "2>&-")
    assert (proc.returncode, b"Traceback" in proc.stdout) == (codes[name], False)


def test_a_closed_stdin_reads_as_empty():
    """`explain --log -` reads stdin: closed (`<&-`), it is an empty log, as </dev/null is."""
    argv = ["explain", "--log", "-"]
    empty = gpudoctor(argv, stdin=subprocess.DEVNULL)
    closed = gpudoctor(argv, "<&-")
    assert (closed.returncode, closed.stdout, closed.stderr) == (empty.returncode, empty.stdout, empty.stderr)
    assert b"internal error" not in closed.stderr


def test_stderr_is_buffered_as_pythons_own():
    """The best-effort stderr keeps Python's buffering (line buffered; unbuffered under -u), so that a
    progress line without a newline still shows when Python's own would."""
    probe = (
        "import sys; from gpudoctor import entry; entry._standard_streams(); "
        "print(sys.stderr.line_buffering, sys.stderr.write_through, sys.stderr.encoding)"
    )
    plain = "import sys; print(sys.stderr.line_buffering, sys.stderr.write_through, sys.stderr.encoding)"
    for flags in ([], ["-u"]):
        env = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}
        ours, theirs = (
            subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, env=env, timeout=60)
            for code in (probe, plain)
        )
        assert ours.stdout == theirs.stdout != b""


def test_preflight_with_stderr_closed_starts_the_job():
    """A container entrypoint: `gpudoctor check --profile preflight && exec "$@"` under `2>&-`."""
    proc = subprocess.run(
        ["sh", "-c", 'exec 2>&-; "$@" && echo job started', "sh", *GPUDOCTOR, *COMMAND_LINES["preflight"]],
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (0, b"job started\n")


def _with_gone_reader(argv: list[str], fd: int) -> subprocess.CompletedProcess:
    """argv with its stdout (fd 1) or stderr (fd 2) a pipe whose reader has gone (`| head -0` done)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        streams = {"stdout": write_end} if fd == 1 else {"stderr": write_end}
        other = "stderr" if fd == 1 else "stdout"
        return subprocess.run(GPUDOCTOR + argv, env=ENV, timeout=60, **streams, **{other: subprocess.PIPE})
    finally:
        os.close(write_end)


@pytest.mark.parametrize("name", ["--version", "--help", "rules list"])
def test_a_reader_gone_from_stdout_is_exit_1_without_a_traceback(name):
    """As for check and facts (tests/core/test_entry.py), and as click does: exit 1, nothing on stderr."""
    proc = _with_gone_reader(COMMAND_LINES[name], 1)
    assert (proc.returncode, proc.stderr) == (1, b"")


@pytest.mark.parametrize("name", ["check", "preflight", "usage error"])
def test_a_reader_gone_from_stderr_keeps_the_exit_code(name, codes):
    """What goes to stderr is said best effort: a preflight whose log reader died still starts the job."""
    proc = _with_gone_reader(COMMAND_LINES[name], 2)
    assert (proc.returncode, b"Traceback" in proc.stdout) == (codes[name], False)


def test_run_keeps_the_commands_exit_code_when_both_readers_are_gone():
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            GPUDOCTOR + ["run", "--no-explain", "--", "sh", "-c", "exit 7"],
            stdout=write_end,
            stderr=write_end,
            env=ENV,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 7


ASCII_ONLY = dict(ENV, LC_ALL="C", PYTHONUTF8="0")
ASCII_ONLY.pop("PYTHONIOENCODING", None)


@pytest.mark.parametrize(
    "name", ["check", "preflight", "facts", "rules list", "--help", "check --format json"]
)
def test_an_ascii_only_locale_replaces_what_it_cannot_print(name, codes):
    proc = gpudoctor(COMMAND_LINES[name], env=ASCII_ONLY)
    assert (proc.returncode, b"internal error" in proc.stderr, b"Traceback" in proc.stderr) == (
        codes[name],
        False,
        False,
    ), proc.stderr
    (proc.stdout + proc.stderr).decode("ascii")  # only ASCII came out


def test_an_ascii_only_locale_prints_the_report_with_replacements():
    """The report's separator `·` (U+00B7) becomes `?`; the rest is the report as a UTF-8 locale prints it."""
    utf8 = gpudoctor(COMMAND_LINES["preflight"]).stderr.decode("utf-8")
    ascii_only = gpudoctor(COMMAND_LINES["preflight"], env=ASCII_ONLY).stderr.decode("ascii")
    assert "·" in utf8
    assert ascii_only == utf8.replace("·", "?").replace("×", "?")


def test_an_index_mirror_password_is_never_echoed():
    secret = "s3cret-pa55"
    value = f"https://download.pytorch.org/whl/=https://alice:{secret}@mirror.example/pytorch/whl/"
    for argv in (["plan", "--snapshot", str(H200)], ["fix", "--dry-run"]):
        proc = gpudoctor([*argv, "--index-mirror", value])
        assert proc.returncode == 2
        assert secret.encode() not in proc.stdout + proc.stderr, proc.stderr
        assert b"--index-mirror 'https://download.pytorch.org/whl/=https://<redacted>@mirror" in proc.stderr


# --- `run -- CMD` and `explain MESSAGE` are read without typer (entry._quick); any other form goes to typer,
# which reads it as before.


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["run", "--", "nvidia-smi", "-L"],
            ("run", {"argv": ("nvidia-smi", "-L"), "timeout": 10.0, "explain": True}),
        ),
        (["run", "make", "-j8"], ("run", {"argv": ("make", "-j8"), "timeout": 10.0, "explain": True})),
        (
            ["run", "--no-explain", "--", "make"],
            ("run", {"argv": ("make",), "timeout": 10.0, "explain": False}),
        ),
        (
            ["explain", "Error 802: system not yet initialized"],
            ("explain", {"message": "Error 802: system not yet initialized"}),
        ),
        (["envs"], ("envs", {"fmt": "text"})),
        (["envs", "--format", "json"], ("envs", {"fmt": "json"})),
    ],
)
def test_the_usual_forms_are_read_here(argv, expected):
    assert _quick(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["run"],
        ["run", "--"],
        ["run", "--help"],
        ["run", "--timeout", "5", "--", "make"],
        ["run", "--no-explain"],
        ["explain"],
        ["explain", "--log", "job.log"],
        ["explain", "--help"],
        ["explain", "x", "--snapshot", "s.tar.gz"],
        ["check"],
        ["rules", "list"],
        ["envs", "--help"],
        ["envs", "--format", "yaml"],
        ["envs", "--format=json"],
    ],
)
def test_any_other_form_is_left_to_typer(argv):
    assert _quick(argv) == (None, {})
