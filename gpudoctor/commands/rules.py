"""`gpudoctor rules list | show | validate | test | docs`: the rules as data users can read and check.

One function per subcommand (`run_<name>`); a new subcommand (e.g. `rules test DIR`) is one more function
here, one more entry in COMMANDS and its options in cli.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from . import CommandError, problems
from ._shared import load_rules


def run_list(rules: tuple[str, ...] = ()) -> int:
    """Every rule, the bench's (rules/bench/) and the fleet's (rules/fleet/, area `fleet`) among them."""
    from ..report.rules_text import rule_table

    rows = load_rules(list(rules)) + _bench_rules() + _fleet_rules()
    sys.stdout.write(rule_table(rows))
    return 0


def run_show(rule_id: str, rules: tuple[str, ...] = ()) -> int:
    from ..report.rules_text import rule_detail

    wanted = rule_id.upper()
    match = [r for r in load_rules(list(rules)) + _bench_rules() + _fleet_rules() if r.id == wanted]
    if not match:
        raise CommandError(f"no rule {rule_id!r}; `gpudoctor rules list` shows them all")
    sys.stdout.write(rule_detail(match[0]))
    return 0


def _bench_rules() -> list:
    from ..bench.rules import load_bench_rules
    from ..engine.loader import RuleLoadError

    try:
        return load_bench_rules()
    except RuleLoadError as e:
        raise problems("bench rule files have", e) from None


def _fleet_rules() -> list:
    from ..engine.loader import RuleLoadError
    from ..fleet.merge import shipped_fleet_rules

    try:
        return shipped_fleet_rules()
    except RuleLoadError as e:
        raise problems("fleet rule files have", e) from None


def run_validate(paths: tuple[str, ...]) -> int:
    """Every problem on stderr with file, line and rule id; exit 2 on any."""
    from ..engine.loader import RuleLoadError, validate_rules

    try:
        loaded = validate_rules(list(paths))
    except RuleLoadError as e:
        from ..report.safe import terminal_lines

        for p in e.problems:
            sys.stderr.write(terminal_lines(f"{p}\n"))
        sys.stderr.write(f"{len(e.problems)} problem(s) found\n")
        return 2
    sys.stdout.write(f"{len(loaded)} rule(s) valid\n")
    return 0


def run_test(paths: tuple[str, ...], cases: Optional[str] = None) -> int:
    """Rule cases (fires/passes) against the rules at `paths`: 0 all pass, 1 a case failed, 2 bad files."""
    from ..engine import rule_tests

    try:
        code, lines, notes = rule_tests.main(list(paths), cases)
    except rule_tests.CaseError as e:
        raise CommandError(str(e)) from None
    from ..report.safe import terminal_lines

    for line in lines:
        sys.stdout.write(terminal_lines(line + "\n"))
    for note in notes:
        sys.stderr.write(terminal_lines(note + "\n"))
    return code


def run_docs(out: str) -> int:
    """Write <out>/rules/<ID>.md, <out>/rules/index.md, <out>/facts.md and <out>/errors.md. `out` is
    required: a default of ./docs would overwrite the docs of whatever project the command runs in."""
    from ..engine.loader import ID_PATTERN, RuleLoadError
    from ..explain.entries import EntryError, load_entries
    from ..report.rule_docs import documented_rules, render_all

    try:
        entries = load_entries()
    except EntryError as e:
        raise problems("explain entries have", e) from None
    try:
        files = render_all(documented_rules(), entries)
    except RuleLoadError as e:
        raise problems("rule files have", e) from None
    root = Path(out)
    try:
        (root / "rules").mkdir(parents=True, exist_ok=True)
        # Pages of rules that no longer exist would be stale; other files there are left alone.
        for old in (root / "rules").glob("*.md"):
            if f"rules/{old.name}" not in files and ID_PATTERN.match(old.stem):
                old.unlink()
        for rel, text in files.items():
            (root / rel).write_text(text, encoding="utf-8")
    except OSError as e:
        raise CommandError(f"cannot write docs to {out}: {e}") from None
    sys.stdout.write(f"wrote {len(files)} files under {out}\n")
    return 0
