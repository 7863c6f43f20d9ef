"""NVIDIA_REQUIRE_* expressions, judged the way libnvidia-container judges them (src/cli/dsl.c).

Space-separated groups are ORed; comma-separated constraints inside a group are ANDed. A constraint is
NAME OP VALUE with OP one of = != < <= > >=; `cuda` compares with the CUDA version the driver supports,
`driver` with the driver version, `arch` with each GPU's compute capability, `brand` with each GPU's brand.
"""

from __future__ import annotations

import re
from typing import Optional

from ..facts import Facts

# The facts a requirement is judged against (besides each GPU's brand and compute capability).
FACTS = ("driver.max_cuda", "driver.version", "gpus.count")
_CONSTRAINT = re.compile(r"^(cuda|driver|arch|brand)(>=|<=|!=|=|<|>)([A-Za-z0-9._-]+)$")


class RequireSyntaxError(ValueError):
    pass


def parse(expr: str) -> list[list[tuple[str, str, str]]]:
    """'cuda>=12.4 brand=tesla,driver>=470,driver<471' -> [[("cuda", ">=", "12.4")], [...3 constraints]]."""
    groups = []
    for group in expr.split():
        constraints = []
        for piece in group.split(","):
            m = _CONSTRAINT.match(piece.strip())
            if not m:
                raise RequireSyntaxError(f"cannot read constraint {piece!r}")
            constraints.append((m.group(1), m.group(2), m.group(3)))
        groups.append(constraints)
    return groups


def _numbers(v: str) -> Optional[list[int]]:
    # ASCII digits, at most 9 a part: int() refuses "²" and, on Python 3.11+, numbers of 4,300+ digits.
    if not re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,9})*", v):
        return None
    return [int(p) for p in v.split(".")]


def _compare(actual: str, op: str, wanted: str, numeric: bool) -> Optional[bool]:
    if numeric:
        a, w = _numbers(actual), _numbers(wanted)
        if a is None or w is None:
            return None
        width = max(len(a), len(w))
        a, w = a + [0] * (width - len(a)), w + [0] * (width - len(w))
        left, right = tuple(a), tuple(w)
    else:
        left, right = actual.lower(), wanted.lower()
    return {
        "=": left == right,
        "!=": left != right,
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
    }[op]


def _holds(name: str, op: str, wanted: str, facts: Facts) -> Optional[bool]:
    if name in ("cuda", "driver"):
        actual = facts.value("driver.max_cuda" if name == "cuda" else "driver.version")
        return None if actual is None else _compare(str(actual), op, wanted, numeric=True)
    field = "compute_capability" if name == "arch" else "brand"
    count = facts.count("gpus")
    if count == 0:
        return None
    results = []
    for i in range(count):
        actual = facts.value(f"gpus[{i}].{field}")
        results.append(None if actual is None else _compare(str(actual), op, wanted, numeric=name == "arch"))
    if False in results:
        return False
    return None if None in results else True


def satisfied(expr: str, facts: Facts) -> Optional[bool]:
    """True when some group holds, False when none does, None when unknown facts leave it open."""
    try:
        groups = parse(expr)
    except RequireSyntaxError:
        return None
    if not groups:
        return True
    group_results = []
    for group in groups:
        results = [_holds(name, op, wanted, facts) for name, op, wanted in group]
        group_results.append(False if False in results else (None if None in results else True))
    if True in group_results:
        return True
    return None if None in group_results else False
