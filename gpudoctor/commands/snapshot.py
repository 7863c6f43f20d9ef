"""`gpudoctor snapshot`: record what the probes read on this host into a file anyone can replay."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Optional

from .. import __version__
from . import CommandError, Outcome


def run(
    output: str = "gpudoctor-snapshot.tar.gz",
    python: tuple[str, ...] = (),
    no_redact: bool = False,
    timeout: Optional[float] = None,
    deep: bool = False,
) -> Outcome:
    """`output` "-" writes the archive to stdout (the summary line then goes to stderr)."""
    from ..host.base import Deadline
    from ..host.live import LiveHost
    from ..host.snapshot import RecordingHost, redact, save
    from ..pipeline.check import run_checks
    from ..profiles import DEFAULT, PROFILES, resolve_timeout
    from ..redact import this_machine

    deadline = Deadline(resolve_timeout(PROFILES[DEFAULT], timeout, deep))
    recorder = RecordingHost(LiveHost(deadline=deadline, python=list(python)))
    run_checks(recorder, "live", deadline, [], deep=deep)
    rec = recorder.recording
    if not no_redact:
        rec = redact(rec, identity=this_machine())
    to_stdout = output == "-"
    if to_stdout and sys.stdout.isatty():
        raise CommandError("-o - writes a binary archive to stdout: redirect it to a file or a pipe")
    try:
        if to_stdout:
            _save_to_stdout(rec, save)
        else:
            save(rec, output, __version__)
    except OSError as e:
        raise CommandError(f"cannot write {'stdout' if to_stdout else output}: {e}") from None
    readings = len(rec.nvml_system) + sum(len(d) for d in rec.nvml_devices.values())
    line = (
        f"wrote {'the snapshot to stdout' if to_stdout else output}: {len(rec.files)} files, "
        f"{len(rec.commands)} commands, {readings} NVML readings"
        + (
            ""
            if no_redact
            else "; GPU UUIDs, serial numbers, hostname, home directory and user name redacted"
        )
        + "\n"
    )
    (sys.stderr if to_stdout else sys.stdout).write(line)
    return Outcome(0, list(recorder.timed_out))


def _save_to_stdout(rec: object, save: object) -> None:
    fd, tmp = tempfile.mkstemp(prefix="gpudoctor-snapshot-", suffix=".tar.gz")
    os.close(fd)
    try:
        save(rec, tmp, __version__)  # type: ignore[operator]
        sys.stdout.flush()
        with open(tmp, "rb") as f:
            while chunk := f.read(1 << 16):
                sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    finally:
        os.unlink(tmp)
