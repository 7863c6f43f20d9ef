"""The usual `gpudoctor check ...` command lines, read without typer; everything else goes to typer.

Importing typer and click takes a fifth of a check's time (about 20 ms of 100), and a check is what runs
on every CI job and container start. `parse(argv)` returns the keyword arguments typer's `check` command
(cli.py) would hand to commands.dispatch, or None for any command line it is not sure of: another command,
--help, an option it does not know, a value typer would refuse, `--`, `--opt=` with nothing, a value that
starts with "-", an option given twice. typer then reads that command line as before, so help, usage
errors and their wording have one source. tests/test_check_argv.py holds both readings to the same answer
and fails when typer's `check` gains an option that OPTIONS lacks.
"""

from __future__ import annotations

import math
from typing import Any, Optional

MAX_TIMEOUT = 86400.0  # one day: a larger deadline (inf, 1e10, 20 digits) is taken as this

# --option: (keyword, kind, the values it takes or None for any). Kinds: "value" (once), "many" (repeatable,
# a tuple), "flag" (sets True), "off" (sets False; the --no- half of a --x/--no-x pair).
OPTIONS: dict[str, tuple[str, str, Optional[tuple[str, ...]]]] = {
    "--snapshot": ("snapshot", "value", None),
    "--python": ("python", "many", None),
    "--rules": ("rules", "many", None),
    "--format": ("fmt", "value", ("text", "json", "junit", "markdown", "prometheus")),
    "--fail-on": ("fail_on", "value", ("error", "warning", "info", "never")),
    "--profile": ("profile", "value", ("workstation", "ci", "preflight")),
    "--policy": ("policy", "value", None),
    "--timeout": ("timeout", "value", None),
    "--data-dir": ("data_dir", "value", None),
    "--since": ("since", "value", None),
    "--plan": ("plan", "flag", None),
    "--deep": ("deep", "flag", None),
    "--no-python": ("no_python", "flag", None),
    "--fail-on-unknown": ("fail_on_unknown", "flag", None),
    "--no-fail-on-unknown": ("fail_on_unknown", "off", None),
    "--no-redact": ("no_redact", "flag", None),
}
DEFAULTS: dict[str, Any] = {
    "snapshot": None,
    "python": (),
    "rules": (),
    "fmt": "text",
    "fail_on": None,
    "profile": "workstation",
    "policy": None,
    "timeout": None,
    "data_dir": None,
    "plan": False,
    "deep": False,
    "no_python": False,
    "fail_on_unknown": None,
    "since": None,
    "no_redact": False,
}


def timeout_seconds(value: object) -> float:
    """--timeout's seconds: > 0, capped at MAX_TIMEOUT (inf too). ValueError with the reason otherwise
    (not a number, nan, 0, negative)."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{value!r} is not a number of seconds") from None
    if math.isnan(seconds) or seconds <= 0:
        raise ValueError(f"{value!r}: the deadline must be a positive number of seconds")
    return min(seconds, MAX_TIMEOUT)


def parse(argv: list[str]) -> Optional[dict[str, Any]]:
    """check's keyword arguments for argv (sys.argv[1:]) when it is `check` with options of OPTIONS only,
    each value valid; None for typer to read."""
    if not argv or argv[0] != "check":
        return None
    out = dict(DEFAULTS)
    given: set[str] = set()
    rest = list(argv[1:])
    while rest:
        word = rest.pop(0)
        name, has_value, value = word.partition("=")
        if name not in OPTIONS:
            return None
        keyword, kind, choices = OPTIONS[name]
        if kind in ("flag", "off"):
            if has_value or keyword in given:
                return None
            out[keyword] = kind == "flag"
        else:
            if not has_value:
                if not rest:
                    return None
                value = rest.pop(0)
            if not value or value.startswith("-") or (choices is not None and value not in choices):
                return None
            if kind == "many":
                out[keyword] = (*out[keyword], value)
            elif keyword in given:
                return None
            elif keyword == "timeout":
                try:
                    out[keyword] = timeout_seconds(value)
                except ValueError:
                    return None
            else:
                out[keyword] = value
        given.add(keyword)
    return out
