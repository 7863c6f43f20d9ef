"""Rule cases: facts a rule must fire on (with the exact messages) and facts it must not; what
`gpudoctor rules test` runs for users' rules, as `semgrep --test` does, and the shipped rules' own tests
(tests/rules/cases/) are written in.

A case file is named after the rule it tests, `<RULE-ID>.yaml`, and holds `fires:` and `passes:` lists:

    fires:
      - name: x8-link                       # a lower-case slug, unique in the file
        facts: {gpus.count: 1, "gpus[0].pcie.width_current": 8, "gpus[0].index": 0}
        messages: ["GPU 0 runs at x8"]      # the rendered messages, one per finding, in item order
    passes:
      - name: no-driver
        facts: {gpus.count: {unknown: "NVML not loaded"}}   # {unknown: reason}: the fact is unknown
        status: unknown                     # passed (the default), unknown or not_applicable (applies:
                                            # false, or the for_each list empty)

A case that shows a bug not yet fixed carries `xfail: "what goes wrong"`: it is expected to fail, and a
run in which it passes fails (remove the mark).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..datafiles import read_capped_text
from ..facts import Fact, Facts, known, unknown
from . import yamlsafe
from .evaluate import evaluate_rule
from .model import Rule

NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
KINDS = ("fires", "passes")
CASE_KEYS = {"fires": {"name", "facts", "messages", "xfail"}, "passes": {"name", "facts", "status", "xfail"}}
STATUSES = ("passed", "unknown", "not_applicable")


class CaseError(Exception):
    """A case file that is not well formed; the message names the file (and line) and what is wrong."""


@dataclass(frozen=True)
class Failure:
    """One case whose outcome differed from what it says."""

    rule_id: str
    kind: str
    name: str
    what: str

    def __str__(self) -> str:
        return f"FAIL {self.rule_id} {self.kind} {self.name}: {self.what}"


@dataclass
class Outcome:
    passed: int = 0
    xfailed: int = 0
    failures: list[Failure] = field(default_factory=list)
    untested: list[str] = field(default_factory=list)  # rule ids without a case file


def load_cases(path: Path) -> dict[str, list[dict[str, Any]]]:
    """A case file's `fires` and `passes` lists, checked; CaseError says what is wrong."""
    try:
        data, lines = yamlsafe.load(read_capped_text(path, yamlsafe.MAX_BYTES))
    except (OSError, UnicodeDecodeError) as e:
        raise CaseError(f"{path}: cannot read: {e}") from None
    except yamlsafe.YamlError as e:
        raise CaseError(f"{path}:{e.line}: {e.message}") from None
    data = data or {}
    if not isinstance(data, dict) or set(data) - set(KINDS):
        raise CaseError(f"{path}: expected a mapping with only 'fires' and 'passes', got {data!r:.200}")
    seen: set[str] = set()
    for kind, cases in data.items():
        where = f"{path}:{lines.get((kind,), 1)}"
        if not isinstance(cases, list):
            raise CaseError(f"{where}: '{kind}' must be a list of cases")
        for i, case in enumerate(cases):
            where = f"{path}:{lines.get((kind, i), 1)}"
            if not isinstance(case, dict) or "name" not in case or not isinstance(case.get("facts"), dict):
                raise CaseError(f"{where}: every {kind} case needs a 'name' and a 'facts' mapping")
            extra = set(case) - CASE_KEYS[kind]
            if extra:
                raise CaseError(
                    f"{where}: {kind} case {case['name']!r} has unknown keys {sorted(map(str, extra))}"
                )
            if not NAME.match(str(case["name"])):
                raise CaseError(
                    f"{where}: case name {case['name']!r} must be a lower-case slug (a-z, 0-9, -)"
                )
            if f"{kind}-{case['name']}" in seen:
                raise CaseError(f"{where}: a second {kind} case named {case['name']!r}")
            seen.add(f"{kind}-{case['name']}")
            if kind == "fires" and not isinstance(case.get("messages"), list):
                raise CaseError(f"{where}: fires case {case['name']!r} needs a 'messages' list")
            if kind == "passes" and case.get("status", "passed") not in STATUSES:
                raise CaseError(f"{where}: passes case {case['name']!r}: status is {', '.join(STATUSES)}")
            for name, value in case["facts"].items():
                if isinstance(value, dict) and set(value) != {"unknown"}:
                    raise CaseError(
                        f"{where}: fact {name}: a mapping value must be {{unknown: reason}}, "
                        f"got {value!r:.100}"
                    )
    return data


def build_facts(raw: dict[str, Any]) -> Facts:
    """A case's facts: name -> value, where {unknown: reason} makes the fact unknown."""
    items: dict[str, Fact] = {}
    for name, value in raw.items():
        if isinstance(value, dict):
            items[str(name)] = unknown(str(value["unknown"]), "case")
        else:
            items[str(name)] = known(value, "case")
    return Facts(items)


def check_case(rule: Rule, kind: str, case: dict[str, Any]) -> Optional[str]:
    """What differed from what the case says, or None when the rule behaved as it says."""
    result = evaluate_rule(rule, build_facts(case["facts"]))
    messages = [f.message for f in result.findings]
    unknowns = f"; unknown facts: {dict(result.unknown_facts)}" if result.unknown_facts else ""
    if kind == "passes":
        want = case.get("status", "passed")
        if result.status == "fired":
            return f"expected status {want}, but the rule fired: {messages}"
        if result.status != want:
            return f"expected status {want}, got {result.status}{unknowns}"
        return None
    if result.status != "fired":
        return f"expected it to fire, got status {result.status}{unknowns}"
    if messages != case["messages"]:
        return f"expected messages {case['messages']}, got {messages}"
    return None


def run(rules: list[Rule], cases_dir: Path) -> Outcome:
    """Every case file in `cases_dir` against the rule it names. CaseError for a file that is not well
    formed, names no rule given, or when there is no case file at all."""
    if not cases_dir.is_dir():
        raise CaseError(f"{cases_dir}: no such directory of case files (<RULE-ID>.yaml)")
    files = sorted(p for p in cases_dir.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    if not files:
        raise CaseError(f"{cases_dir}: no case files (<RULE-ID>.yaml)")
    by_id = {r.id: r for r in rules}
    loaded = [(p, load_cases(p)) for p in files]  # every file checked before any case runs
    for path, _data in loaded:
        if path.stem not in by_id:
            raise CaseError(f"{path}: no rule {path.stem!r} among the rules tested")
    outcome = Outcome(untested=sorted(set(by_id) - {p.stem for p, _ in loaded}))
    for path, data in loaded:
        for kind in KINDS:
            for case in data.get(kind, []):
                what = check_case(by_id[path.stem], kind, case)
                name = str(case["name"])
                if "xfail" in case:
                    if what is None:
                        outcome.failures.append(
                            Failure(path.stem, kind, name, f"passes, but is marked xfail ({case['xfail']})")
                        )
                    else:
                        outcome.xfailed += 1
                elif what is None:
                    outcome.passed += 1
                else:
                    outcome.failures.append(Failure(path.stem, kind, name, what))
    return outcome


def main(paths: list[str], cases: Optional[str] = None) -> tuple[int, list[str], list[str]]:
    """`gpudoctor rules test PATH... [--cases DIR]`: (exit code, lines for stdout, notes for stderr). The
    rules of the paths load together on their own, validated as any rule file; the cases default to
    `cases/` in the first path (a directory) or beside it (a file). Exit 0 when every case passed, 1 when
    one failed; CaseError (exit 2) for rule or case files that are not well formed."""
    from .loader import RuleLoadError, load_rules

    for path in paths:
        if not Path(path).exists():
            raise CaseError(f"{path}: no such file or directory")
    root = Path(paths[0])
    try:
        rules = load_rules(list(paths), include_shipped=False)
    except RuleLoadError as e:
        raise CaseError("rule files have problems:\n" + "\n".join(f"  {p}" for p in e.problems)) from None
    cases_dir = Path(cases) if cases else (root if root.is_dir() else root.parent) / "cases"
    outcome = run(rules, cases_dir)
    lines = [str(f) for f in outcome.failures]
    summary = f"{outcome.passed} case(s) passed, {len(outcome.failures)} failed"
    lines.append(summary + (f", {outcome.xfailed} expected to fail" if outcome.xfailed else ""))
    notes = [f"no cases for rule {rid} (add {cases_dir / (rid + '.yaml')})" for rid in outcome.untested]
    return (1 if outcome.failures else 0), lines, notes
