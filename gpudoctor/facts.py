"""The Facts tree: every fact a probe may produce, with its type, unit and meaning.

SCHEMA is the public contract that rules (shipped and user-written) are written against. Names are
dotted; list members are written `gpus[0].name` and documented as `gpus[].name`, and every list has a
`<list>.count` fact. A fact that could not be read is *unknown*, with a reason, never a guessed value.

Each fact is declared beside the code that produces it: the FACT_SPECS of its probe module (or of the
derive or bench module that adds it). tools/gen_facts.py gathers those declarations into fact_table.py,
which this module reads, so that knowing the schema never imports a probe.
"""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple, Optional

from .fact_table import FACTS as FACT_ROWS

# The ML frameworks gpudoctor knows, in report order (the values of frameworks[].name).
FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")


class Fact(NamedTuple):  # NamedTuples, not dataclasses: see engine/model.py
    """One fact: its value, where it came from, and, when it could not be read, why not."""

    value: Any = None
    source: str = ""
    unknown: Optional[str] = None

    @property
    def known(self) -> bool:
        return self.unknown is None


def known(value: Any, source: str) -> Fact:
    return Fact(value=value, source=source)


def unknown(reason: str, source: str = "") -> Fact:
    return Fact(value=None, source=source, unknown=reason)


class FactSpec(NamedTuple):
    """One fact's declaration: a module that produces the fact lists it in its FACT_SPECS."""

    name: str  # with [] for list members
    type: str  # str | int | float | bool | version | list[str] | list[int]
    unit: str  # "" when the value has none
    doc: str


SCHEMA: tuple[FactSpec, ...] = tuple(FactSpec(*row) for row in FACT_ROWS)

SPECS: dict[str, FactSpec] = {s.name: s for s in SCHEMA}
LISTS: tuple[str, ...] = tuple(sorted({s.name.split("[]")[0] for s in SCHEMA if "[]" in s.name}))

_INDEX = re.compile(r"\[\d+\]")
_MEMBER = re.compile(r"([a-z_0-9]+)\[(\d+)\]")  # a list member's piece of a name: gpus[3]


def head(name: str) -> str:
    """A fact name's first part, the section a probe owns: `gpus[3].pcie.gen_current` -> `gpus`."""
    return name.split(".", 1)[0].split("[", 1)[0]  # what precedes the first "." or "[", without a regex


def spec_name(path: str) -> str:
    """`gpus[3].pcie.gen_current` -> `gpus[].pcie.gen_current`."""
    return _INDEX.sub("[]", path)


def spec_for(path: str) -> Optional[FactSpec]:
    return SPECS.get(spec_name(path))


class Facts:
    """All facts of one check: a flat mapping from dotted name to Fact, read-only once built."""

    def __init__(
        self, items: Optional[dict[str, Fact]] = None, missing: Optional[dict[str, str]] = None
    ) -> None:
        self._items: dict[str, Fact] = dict(items or {})
        # Why facts under a prefix are absent: {"gpus": "timed out"} when the GPU probe did not finish.
        self.missing: dict[str, str] = dict(missing or {})

    def __contains__(self, path: str) -> bool:
        return path in self._items

    def __len__(self) -> int:
        return len(self._items)

    def get(self, path: str) -> Fact:
        """The fact, or an unknown one when no probe produced it."""
        fact = self._items.get(path)
        if fact is None:
            return unknown(self.missing.get(head(path), "not collected"))
        return fact

    def value(self, path: str, default: Any = None) -> Any:
        fact = self._items.get(path)
        return fact.value if fact is not None and fact.known else default

    def count(self, list_name: str) -> int:
        n = self.value(f"{list_name}.count", 0)
        return n if isinstance(n, int) else 0

    def items(self) -> list[tuple[str, Fact]]:
        return sorted(self._items.items(), key=lambda kv: _sort_key(kv[0]))

    def tree(self) -> dict:
        """Nested plain data for JSON: values, or {"unknown": reason} where a fact could not be read.

        Lists become JSON arrays; their `.count` facts are implied by the array's length. A list whose
        count is unknown is {"unknown": reason}, never an empty array (which would read as "none"); so is
        the whole section of a probe that crashed or ran out of time."""
        root: dict = {section: {"unknown": reason} for section, reason in self.missing.items()}
        for path, fact in self.items():
            parts = _split(path)
            is_count = parts[-1] == "count" and ".".join(map(str, parts[:-1])) in LISTS
            if is_count:
                parts, leaf = parts[:-1], ([] if fact.known else {"unknown": fact.unknown})
            else:
                leaf = fact.value if fact.known else {"unknown": fact.unknown}
            node: Any = root
            for part, nxt in zip(parts, parts[1:]):
                if isinstance(part, int):
                    while len(node) <= part:
                        node.append({})
                    node = node[part]
                else:
                    node = node.setdefault(part, [] if isinstance(nxt, int) else {})
            if not (is_count and parts[-1] in node):
                node[parts[-1]] = leaf
        return root


def _split(path: str) -> list:
    parts: list = []
    for piece in path.split("."):
        m = _MEMBER.fullmatch(piece) if "[" in piece else None
        if m:
            parts += [m.group(1), int(m.group(2))]
        else:
            parts.append(piece)
    return parts


def _sort_key(path: str) -> list:
    return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in _split(path)]


def list_facts(name: str, members: list[dict[str, Fact]], source: str) -> dict[str, Fact]:
    """Flatten list members ({field: Fact}) into `name[i].field` facts plus `name.count`."""
    out: dict[str, Fact] = {f"{name}.count": known(len(members), source)}
    for i, member in enumerate(members):
        for field, fact in member.items():
            out[f"{name}[{i}].{field}"] = fact
    return out


# --- derived facts -------------------------------------------------------------------------------------


class Inputs:
    """Reads the input facts of a derived fact, remembering where they came from and the first reason one
    was unknown; result() is the derived fact, with the source `derived:<its inputs>`."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.names: list[str] = []
        self.why: Optional[str] = None

    def __call__(self, name: str) -> Any:
        fact = self.facts.get(name)
        self.names.append(name)
        if not fact.known and self.why is None:
            self.why = fact.unknown or "unknown"
        return fact.value

    def result(self, compute: Callable[[], Any]) -> Fact:
        source = "derived:" + ", ".join(dict.fromkeys(self.names))
        if self.why is not None:
            return unknown(self.why, source)
        try:
            value, why = compute()
        except (TypeError, ValueError, ZeroDivisionError) as e:
            return unknown(f"cannot be computed: {e}"[:120], source)
        return known(value, source) if why is None else unknown(why, source)


def collected(facts: Facts, *names: str) -> bool:
    """Whether each of these facts was collected, or its probe ran and failed: a derived fact is left out
    altogether when an input was never collected (a probe the profile does not run)."""
    return all(n in facts or head(n) in facts.missing for n in names)
