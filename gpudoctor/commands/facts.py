"""`gpudoctor facts`: every fact the probes collected, with where it came from (for bug reports)."""

from __future__ import annotations

import sys
from typing import Optional

from . import Outcome
from ._shared import collect


def run(
    snapshot: Optional[str] = None,
    python: Optional[str] = None,
    fmt: str = "text",
    timeout: Optional[float] = None,
    deep: bool = False,
    no_redact: bool = False,
) -> Outcome:
    """Redacted (hostname, GPU UUIDs, home directory, user name) unless `no_redact`: it is for sharing."""
    import json

    from ..collect import collect as collect_facts
    from ..probes import registry

    host, _source, deadline = collect(snapshot, [python] if python else [], timeout, deep=deep)
    facts, _ = collect_facts(host, deadline, registry(deep=deep))
    if not no_redact:
        from ..redact import redact_facts, this_machine

        facts = redact_facts(facts, this_machine())
    if fmt == "json":
        sys.stdout.write(json.dumps(facts.tree(), indent=2, default=str) + "\n")
    else:
        from ..report.facts_text import render

        sys.stdout.write(render(facts))
    return Outcome(0, list(getattr(host, "timed_out", [])))
