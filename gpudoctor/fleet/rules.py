"""The fleet rules: what no single node can see, as a table of data.

Two kinds, both against the fleet's most common value (its "majority"):

- `drift`: one value per node (a node fact, or the distinct values of a per-item fact on that node).
  Every value other than the most common is a finding naming its nodes. When two values tie for most
  common there is no majority and every value is a finding.
- `outlier`: one value per GPU (`gpus[].<field>`), compared with the other GPUs of the same model in the
  fleet. A GPU whose value is on the `worse` side of the most common value is a finding, one per node
  naming its GPUs. When values tie for most common, the better one is the norm.

The rules are data in rules/fleet/fleet.yaml, loaded and checked here (`load_fleet_rules`).
`by` splits the comparison into groups: torch versions are compared with torch versions, the PCIe width
of H200s with that of H200s. `what` names the value in messages (`{key}` is the group); `fmt` shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..engine.model import SEVERITIES

KINDS = ("drift", "outlier")
WORSE = ("lower", "higher")


@dataclass(frozen=True)
class FleetRule:
    id: str
    title: str
    severity: str
    kind: str  # drift | outlier
    fact: str  # a fact name as in docs/facts.md: `driver.version`, `gpus[].pcie.width_current`
    what: str  # how messages name the value; `{key}` is the group's value of `by`
    why: str
    by: Optional[str] = None  # a fact of the same list item that groups the comparison
    worse: Optional[str] = None  # outlier only: lower | higher
    fmt: str = "{}"  # how a value is shown, e.g. "x{}" for a PCIe width


FIELDS = ("id", "title", "severity", "kind", "fact", "what", "why", "by", "worse", "fmt")
REQUIRED = ("id", "title", "severity", "kind", "fact", "what", "why")


class FleetRuleError(ValueError):
    """A fleet rule file with problems; `problems` lists every one."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def fleet_rules_file() -> Path:
    """The shipped fleet rules: rules/fleet/fleet.yaml (installed as gpudoctor/_rules/fleet/)."""
    from ..engine.loader import shipped_rules_dir

    return shipped_rules_dir() / "fleet" / "fleet.yaml"


def load_fleet_rules(path: Optional[Path] = None) -> tuple[FleetRule, ...]:
    """The fleet rules of a file (the shipped one by default), strictly checked: every problem at once,
    with the file, line and rule id. Raises FleetRuleError."""
    from ..engine.yamlsafe import YamlError, load

    path = path or fleet_rules_file()
    try:
        data, lines = load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise FleetRuleError([f"{path}: cannot read: {e}"]) from None
    except YamlError as e:
        raise FleetRuleError([f"{path}:{e.line}: {e}"]) from None
    items = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise FleetRuleError([f"{path}: expected a mapping with a list under `rules`"])
    rules, problems = [], []
    for n, item in enumerate(items):
        where = f"{path}:{lines.get(('rules', n), 0)}"
        if not isinstance(item, dict):
            problems.append(f"{where}: a rule is a mapping")
            continue
        rid = item.get("id", "<no id>")
        bad = sorted(set(item) - set(FIELDS))
        missing = [k for k in REQUIRED if k not in item]
        wrong = [k for k, v in item.items() if k in FIELDS and not isinstance(v, str)]
        for what, keys in (("unknown key(s)", bad), ("missing", missing), ("not a string", wrong)):
            if keys:
                problems.append(f"{where}: {rid}: {what}: {', '.join(map(str, keys))}")
        if bad or missing or wrong:
            continue
        rules.append(FleetRule(**{k: item[k] for k in FIELDS if k in item}))
    problems += [f"{path}: {p}" for p in table_problems(tuple(rules))]
    if problems:
        raise FleetRuleError(problems)
    return tuple(rules)


def table_problems(rules: tuple[FleetRule, ...]) -> list[str]:
    """Everything wrong with a rule table; empty when it is well formed."""
    problems = []
    seen: set[str] = set()
    for r in rules:
        where = r.id or "<no id>"
        if r.id in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(r.id)
        if not r.id.startswith("GD-FLEET-"):
            problems.append(f"{where}: id must start with GD-FLEET-")
        if r.severity not in SEVERITIES:
            problems.append(f"{where}: severity {r.severity!r} is not one of {', '.join(SEVERITIES)}")
        if r.kind not in KINDS:
            problems.append(f"{where}: kind {r.kind!r} is not one of {', '.join(KINDS)}")
        if r.kind == "outlier":
            if not r.fact.startswith("gpus[]."):
                problems.append(f"{where}: an outlier rule compares a per-GPU fact (gpus[].<field>)")
            if r.worse not in WORSE:
                problems.append(f"{where}: an outlier rule needs worse: {' or '.join(WORSE)}")
        elif r.worse is not None:
            problems.append(f"{where}: worse applies to outlier rules only")
        if r.by is not None:
            if "[]" not in r.fact or r.by.split("[]")[0] != r.fact.split("[]")[0]:
                problems.append(f"{where}: by must name a fact of the same list as {r.fact}")
        if "{key}" in r.what and r.by is None:
            problems.append(f"{where}: what uses {{key}} but the rule has no by")
    return problems


FLEET_RULES: tuple[FleetRule, ...] = load_fleet_rules()
