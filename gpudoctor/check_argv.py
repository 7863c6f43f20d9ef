"""The usual `gpudoctor check ...` command lines, read without typer; everything else goes to typer.

Importing typer and click takes a fifth of a check's time (about 20 ms of 100), and a check is what runs
on every CI job and container start. `parse(argv)` returns the keyword arguments typer's `check` command
(cli.py) would hand to commands.dispatch, or None for any command line it is not sure of: another command,
--help, an option it does not know, a value typer would refuse, `--`, `--opt=` with nothing, a value that
starts with "-", an option given twice. typer then reads that command line as before, so help, usage
errors and their wording have one source. tests/core/test_check_argv.py holds both readings to the same answer
and fails when typer's `check` gains an option that OPTIONS lacks.
"""

from __future__ import annotations

from typing import Any, Optional

from .options import CHECK


def _table() -> dict[str, tuple[str, str, Optional[tuple[str, ...]]]]:
    """--option: (keyword, kind, the values it takes or None for any), from options.CHECK. Kinds: "value"
    (once), "many" (repeatable, a tuple), "flag" (sets True), "off" (sets False; the --no- half of a
    --x/--no-x pair). Choices read later (--fail-on's) are read by `parse` when the option is given."""
    table = {}
    for option in CHECK:
        first, _, off = option.flags[0].partition("/")
        table[first] = (option.keyword, option.kind, None if callable(option.choices) else option.choices)
        if off:
            table[off] = (option.keyword, "off", None)
    return table


OPTIONS = _table()
DEFAULTS: dict[str, Any] = {o.keyword: () if o.many else o.default for o in CHECK}
LATER_CHOICES = {o.keyword: o.values for o in CHECK if callable(o.choices)}
PARSERS = {o.keyword: o.parse for o in CHECK if o.parse}


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
            if keyword in LATER_CHOICES:
                choices = LATER_CHOICES[keyword]()
            if not value or value.startswith("-") or (choices is not None and value not in choices):
                return None
            if kind == "many":
                out[keyword] = (*out[keyword], value)
            elif keyword in given:
                return None
            elif keyword in PARSERS:
                try:
                    out[keyword] = PARSERS[keyword](value)
                except ValueError:
                    return None
            else:
                out[keyword] = value
        given.add(keyword)
    return out
