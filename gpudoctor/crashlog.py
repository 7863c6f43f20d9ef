"""Crash logs: an unexpected error becomes a paste-ready file with the traceback and versions."""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import traceback

from . import __version__


def write_crash_log(error: BaseException) -> str:
    lines = [
        f"gpudoctor {__version__} crashed at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
        f"command: {' '.join(sys.argv)}",
        f"python: {sys.version.split()[0]} ({sys.executable})",
        f"platform: {platform.platform()}",
        "",
        "".join(traceback.format_exception(type(error), error, error.__traceback__)),
    ]
    fd, path = tempfile.mkstemp(prefix="gpudoctor-crash-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return path
