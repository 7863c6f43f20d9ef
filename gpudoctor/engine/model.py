"""What rules and their results are: plain, immutable data.

NamedTuples, not dataclasses: a check defines these at every start, and no dataclass on its path spares it
importing dataclasses and inspect (benchmarks/README.md). `rule._replace(field=value)` makes a changed copy.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"info": 1, "warning": 2, "error": 3}
# The values of --fail-on (and a policy's fail_on): a severity, or never. pipeline/verdict.py applies them.
FAIL_ON = (*SEVERITIES, "never")
# Report areas, in the order a report shows them; `fleet` rules (rules/fleet/) judge a fleet's records.
CATEGORIES = ("driver", "gpu", "cuda", "cudnn", "frameworks", "container", "system", "fleet")
FIX_KINDS = ("pip", "uv", "conda", "apt", "env", "driver", "reboot", "command", "manual")


class FixStep(NamedTuple):
    kind: str
    argv: tuple[str, ...] = ()  # templates until rendered
    text: str = ""  # for manual steps, and a short note for the others
    # A step may name a resolver (engine/resolver_names.py) instead of giving argv: the planner computes the
    # command from the facts and the knowledge tables. `args` are the step's literal resolver arguments.
    resolver: str = ""
    args: tuple[tuple[str, str], ...] = ()


class ErrorText(NamedTuple):
    """An error message users meet (or its distinctive part), and where that wording was seen: an issue
    thread, release notes, or the library's own source (repository@commit:path:line)."""

    text: str
    source: str = ""


class Rule(NamedTuple):
    id: str
    title: str
    severity: str
    category: str
    when: Any  # the condition tree, validated
    message: str
    why: str
    for_each: Optional[str] = None
    # Where the rule is about (`applies:`, a condition of the same grammar as `when`, judged once per host
    # before it): false makes the result `not_applicable`, unknown makes it `unknown`; None: everywhere.
    applies: Any = None
    references: tuple[str, ...] = ()
    errors: tuple[ErrorText, ...] = ()  # error messages users meet when this bites
    # Why no program prints an error when this bites (a slow link, a throttled clock): a rule lists errors
    # or says this, never neither.
    silent: str = ""
    # The rules whose error texts this rule shares as a more specific cause: when both match a message,
    # this one ranks first (explain/rank.py).
    refines: tuple[str, ...] = ()
    # A catch-all: its texts are a symptom many causes share; it ranks after every other cause they match.
    catch_all: bool = False
    fix: tuple[FixStep, ...] = ()
    overrides: bool = False
    file: str = ""
    line: int = 0
    # Set on a rule that replaced a shipped one (`overrides: true`): that rule's file name and line in the
    # shipped set, e.g. "gpu.yaml:3". Reports list such rules: no shipped rule changes silently.
    replaces: str = ""


class Finding(NamedTuple):
    rule: Rule
    message: str
    why: str
    fix: tuple[FixStep, ...]
    item: Optional[int] = None  # the list index (GPU, framework, ...) for for_each rules
    evidence: tuple[tuple[str, Any], ...] = ()  # (fact name, value) the condition read

    @property
    def severity(self) -> str:
        return self.rule.severity


NOT_APPLICABLE = "not_applicable"


class RuleResult(NamedTuple):
    """One rule's outcome: `fired` (with findings), `passed`, `unknown` (facts it needs are unknown), or
    `not_applicable` (its `applies:` condition is false here; it iterates a list that is empty here: no
    GPU, no framework; or it reads a parameter the run is not given: a requirement the policy does not
    set)."""

    rule: Rule
    status: str
    findings: tuple[Finding, ...] = ()
    unknown_facts: tuple[tuple[str, str], ...] = ()  # (fact, reason)
    # Why `not_applicable` because of `applies:`: the condition and the facts that made it false here.
    # Empty for a rule whose list is empty (its `for_each` says what is missing).
    reason: str = ""
