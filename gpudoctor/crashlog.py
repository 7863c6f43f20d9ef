"""Crash logs: an unexpected error becomes a paste-ready file with the traceback and versions.

A crash log is meant to be attached to a bug report, so it is redacted like a snapshot (gpudoctor/redact.py):
passwords and tokens in URLs on the command line or in the error (`--rules https://user:pass@host/...`,
`?token=...`), the hostname, the home directory and the user name. `--no-redact` anywhere on the command
line keeps them.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import traceback

from . import __version__


def crash_report(error: BaseException, argv: list[str], redact: bool = True) -> str:
    lines = [
        f"gpudoctor {__version__} crashed at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"command: {' '.join(argv)}",
        f"python: {sys.version.split()[0]} ({sys.executable})",
        f"platform: {platform.platform()}",
        "",
        "".join(traceback.format_exception(type(error), error, error.__traceback__)),
    ]
    text = "\n".join(lines)
    if redact:
        from .redact import Redactor, redact_url_secrets, this_machine

        try:
            text = Redactor(this_machine()).text(text)
        except Exception:  # noqa: BLE001 - a crash log must be written whatever else is broken
            text = redact_url_secrets(text)
    return text


def write_crash_log(error: BaseException) -> str:
    text = crash_report(error, sys.argv, redact="--no-redact" not in sys.argv)
    fd, path = tempfile.mkstemp(prefix="gpudoctor-crash-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write(text)
    return path
