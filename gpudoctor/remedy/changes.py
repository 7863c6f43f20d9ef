"""What a package step would replace, asked of the installer itself before the step runs.

A restore point must hold a copy of every distribution a step removes or replaces, including the
dependencies the installer decides to upgrade, which the plan does not name. The installer's own dry run
says: pip's `install --dry-run --report -` (pip 22.2 and later) prints the JSON installation report of what
it would install, and whatever of that is installed now is replaced; uv's `pip install --dry-run` lists
what it would uninstall as ` - name==version` lines. An uninstall replaces what it names. A dry run that
fails means the step itself would fail: the caller reports that instead of running it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable
from typing import Optional

from ..plan import package_name
from .inventory import run_child

UV_REMOVES = re.compile(r"^ [-~] ([A-Za-z0-9][A-Za-z0-9._-]*)==")


class DryRunFailed(Exception):
    def __init__(self, message: str, tail: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.tail = tail


def dry_run_argv(argv: tuple[str, ...]) -> Optional[tuple[str, ...]]:
    """The installer's dry run of an install step (argv as patterns.py accepts it); None for an uninstall."""
    if argv[:2] == ("uv", "pip") and argv[2] == "install":
        return (*argv[:3], "--dry-run", *argv[3:])
    if argv[1:4] == ("-m", "pip", "install"):
        return (*argv[:4], "--dry-run", "--report", "-", "--quiet", "--no-input", *argv[4:])
    return None


def _requirements(argv: tuple[str, ...]) -> list[str]:
    """The package names an uninstall step names."""
    args = argv[4:] if argv[0] != "uv" else argv[5:]
    return [package_name(a) for a in args if not a.startswith("-")]


def parse_pip_report(text: str) -> list[str]:
    """The names in pip's installation report (`install[].metadata.name`)."""
    try:
        report = json.loads(text)
        return [package_name(item["metadata"]["name"]) for item in report["install"]]
    except (ValueError, KeyError, TypeError) as e:
        raise DryRunFailed(f"pip's dry-run report is not what pip 22.2+ writes ({e})") from None


def parse_uv_dry_run(text: str) -> list[str]:
    return [package_name(m.group(1)) for line in text.splitlines() for m in [UV_REMOVES.match(line)] if m]


def replaced(argv: tuple[str, ...], installed: Iterable[str], timeout: float) -> list[str]:
    """The installed distributions (normalised names) the step `argv` would remove or replace."""
    names = set(installed)
    dry = dry_run_argv(argv)
    if dry is None:
        return sorted(n for n in _requirements(argv) if n in names)
    try:
        proc = run_child(list(dry), timeout)
    except subprocess.TimeoutExpired:
        raise DryRunFailed(f"the installer's dry run did not finish in {timeout:.0f} s") from None
    except OSError as e:
        raise DryRunFailed(f"cannot start {dry[0]}: {e.strerror or e}") from None
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = tuple((err or out).strip().splitlines()[-15:])
        raise DryRunFailed(f"the installer's dry run exited {proc.returncode}", tail)
    found = parse_uv_dry_run(err + out) if dry[0] == "uv" else parse_pip_report(out)
    return sorted(n for n in found if n in names)
