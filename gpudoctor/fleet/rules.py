"""The fleet rules: what no single node can see, as a table of data.

Three kinds. Two against the fleet's most common value (its "majority"):

- `drift`: one value per node (a node fact, or the distinct values of a per-item fact on that node).
  Every value other than the most common is a finding naming its nodes. When two values tie for most
  common there is no majority and every value is a finding.
- `outlier`: one value per GPU (`gpus[].<field>`), compared with the other GPUs of the same model in the
  fleet. A GPU whose value is on the `worse` side of the most common value is a finding, one per node
  naming its GPUs. When values tie for most common, the better one is the norm.

And one against the group's median, for measurements, where no two values are the same:

- `slower`: one number per list member (`bench[].value`, higher is better), compared with the median of
  its group (`by`) across the fleet, every node and member. A value under `tolerance` x the median is a
  finding, one per node naming its GPUs. A group of fewer than MIN_VALUES known values is not compared;
  a member whose `status` is there and not "ok" is left out, as an unknown value is.

The rules are data in rules/fleet/fleet.yaml, loaded and checked here (`load_fleet_rules`).
`by` splits the comparison into groups: torch versions are compared with torch versions, the PCIe width
of H200s with that of H200s. `what` names the value in messages (`{key}` is the group); `fmt` shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..engine.model import SEVERITIES
from ..facts import SPECS

KINDS = ("drift", "outlier", "slower")
WORSE = ("lower", "higher")
MIN_VALUES = 3  # slower: a median of fewer values says nothing about which one is off
# slower: what else it reads of a member (where the facts schema has them): whether the value was measured
# (`status`), the GPU (`index`, else `gpu`), the value's unit, and for p2p and all-reduce the peer and the
# number of GPUs, so that messages say which pair or how many.
SLOWER_MEMBERS = ("status", "index", "gpu", "unit", "peer", "gpus")


@dataclass(frozen=True)
class FleetRule:
    id: str
    title: str
    severity: str
    kind: str  # drift | outlier | slower
    fact: str  # a fact name as in docs/facts.md: `driver.version`, `gpus[].pcie.width_current`
    what: str  # how messages name the value; `{key}` is the group's value of `by`
    why: str
    by: Optional[str] = None  # a fact of the same list item that groups the comparison
    worse: Optional[str] = None  # outlier only: lower | higher
    fmt: str = "{}"  # how a value is shown, e.g. "x{}" for a PCIe width
    tolerance: Optional[float] = None  # slower only: a value under tolerance x the median is slower

    @property
    def kind_words(self) -> str:
        """The kind as `rules show` and docs/fleet.md name it: "outlier (lower is worse)"."""
        if self.worse:
            return f"{self.kind} ({self.worse} is worse)"
        if self.tolerance is not None:
            return f"{self.kind} (under {percent(self.tolerance)} of the median)"
        return self.kind

    def reads(self) -> tuple[str, ...]:
        """Every fact the rule reads of a node (fleet/load.py keeps only these): its fact, its group, and
        the members beside them that the facts schema has (a GPU's index, a measurement's status)."""
        head = self.fact.split("[]")[0]
        beside = {"outlier": ("index",), "slower": SLOWER_MEMBERS}.get(self.kind, ())
        return (self.fact, *([self.by] if self.by else [])) + tuple(
            f"{head}[].{m}" for m in beside if f"{head}[].{m}" in SPECS
        )


FIELDS = ("id", "title", "severity", "kind", "fact", "what", "why", "by", "worse", "fmt", "tolerance")
REQUIRED = ("id", "title", "severity", "kind", "fact", "what", "why")
NUMBERS = ("tolerance",)  # the fields that are numbers; every other one is a string


def percent(fraction: float) -> str:
    """0.9 -> "90%", 0.925 -> "92.5%"."""
    return f"{fraction * 100:g}%"


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
        wrong = [k for k, v in item.items() if k in FIELDS and k not in NUMBERS and not isinstance(v, str)]
        nan = [k for k, v in item.items() if k in NUMBERS and not _number(v)]
        for what, keys in (
            ("unknown key(s)", bad),
            ("missing", missing),
            ("not a string", wrong),
            ("not a number", nan),
        ):
            if keys:
                problems.append(f"{where}: {rid}: {what}: {', '.join(map(str, keys))}")
        if bad or missing or wrong or nan:
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
        if r.kind == "slower":
            if "[]." not in r.fact:
                problems.append(f"{where}: a slower rule compares a fact of list members (<list>[].<field>)")
            if r.tolerance is None:
                problems.append(f"{where}: a slower rule needs tolerance: a number between 0 and 1")
            elif not _number(r.tolerance) or not 0 < r.tolerance < 1:
                problems.append(f"{where}: tolerance {r.tolerance!r} is not between 0 and 1")
        elif r.tolerance is not None:
            problems.append(f"{where}: tolerance applies to slower rules only")
        if r.by is not None:
            if "[]" not in r.fact or r.by.split("[]")[0] != r.fact.split("[]")[0]:
                problems.append(f"{where}: by must name a fact of the same list as {r.fact}")
        if "{key}" in r.what and r.by is None:
            problems.append(f"{where}: what uses {{key}} but the rule has no by")
    return problems


FLEET_RULES: tuple[FleetRule, ...] = load_fleet_rules()
