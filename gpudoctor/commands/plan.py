"""`gpudoctor plan`: the fix plan for what check finds, pinned and in order. Runs nothing."""

from __future__ import annotations

import sys
from typing import Optional

from . import CommandError, Outcome, problems
from ._shared import collect, parse_mirrors, print_plan, refuse_bad_python
from .check import warn_empty_rule_dirs


def run(
    snapshot: Optional[str] = None,
    python: tuple[str, ...] = (),
    rules: tuple[str, ...] = (),
    policy: Optional[str] = None,
    fmt: str = "text",
    timeout: Optional[float] = None,
    deep: bool = False,
    index_mirror: tuple[str, ...] = (),
    output: Optional[str] = None,
) -> Outcome:
    from ..engine.loader import RuleLoadError
    from ..pipeline.check import run_checks
    from ..policy import PolicyError, load

    python = list(python)
    if len(python) > 1 and fmt == "json":
        raise CommandError("plan --format json plans one environment: run it once for each --python")
    if len(python) > 1 and output:
        raise CommandError("plan -o saves the plan of one environment: run it once for each --python")
    mirrors = parse_mirrors(index_mirror)
    warn_empty_rule_dirs(rules)
    try:
        pol = load(policy)
        host, source, deadline = collect(snapshot, python, timeout, deep=deep)
        results = run_checks(host, source, deadline, list(rules), policy=pol, deep=deep)
    except RuleLoadError as e:
        raise problems("rule files have", e) from None
    except PolicyError as e:
        raise problems("policy has", e) from None
    refuse_bad_python(results)
    for n, result in enumerate(results):
        sys.stdout.write("\n" if n else "")
        print_plan(result, fmt, mirrors, output)
    return Outcome(0, results[0].unanswered())
