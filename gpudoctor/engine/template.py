"""Message and fix templates: `{fact.name}` placeholders, with an optional `|filter`.

    "GPU {gpus[i].index} runs PCIe x{gpus[i].pcie.width_current}; /dev/shm is {system.shm_bytes|size}"

Filters: size (bytes as KiB/MiB/GiB), join (a list as "a, b"), hex, num (a measurement to three significant
figures: 733, 55.1, 4170, 0.52), percent (a ratio as a whole percentage, rounded down: 0.808 -> 80%), and for
plurals of a count (or a list's length) s ("" for 1, else "s": `node{.peers|s}`) and has ("has" for 1, else
"have"). Unknown facts render as "unknown".
A fact placed into a command (a fix step's argv) must match a strict pattern, so that no fact value, such
as a version string from a package's metadata, can smuggle options or paths into a command.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Optional

from ..facts import Facts

# A name starting with "." is relative to the item a for_each rule iterates: the loader writes
# `{.index}` in a rule with `for_each: gpus` as `{gpus[i].index}` (see relative()).
PLACEHOLDER = re.compile(r"\{(\.?[a-z_][a-z0-9_.\[\]]*)(?:\|([a-z]+))?\}")
SAFE_ARG = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9._+:=@/,-]*$")  # never an option (-x)


def size(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if value < 0:
        return "unlimited"
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            try:
                return f"{value / scale:.1f} {unit}".replace(".0 ", " ")
            except OverflowError:  # an integer too large for a float
                return f"{value} B"
    return f"{value} B"


def num(value: Any) -> str:
    """A measured number as people read it: three significant figures (whole numbers from 100 up), never in
    exponent form, without trailing zeros (733, 55.1, 1979, 0.0123, 7)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return str(int(round(value)))
    rounded = float(f"{value:.3g}")
    places = max(0, 2 - math.floor(math.log10(abs(rounded))))
    text = f"{rounded:.{places}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _one(value: Any) -> bool:
    return (len(value) if isinstance(value, (list, tuple)) else value) == 1


def percent(value: Any) -> str:
    """A ratio as a percentage, rounded down: under 90% never reads as 90%."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return str(value)
    return f"{math.floor(round(value * 100, 6))}%"


FILTERS: dict[str, Callable[[Any], str]] = {
    "size": size,
    "join": lambda v: ", ".join(str(x) for x in v) if isinstance(v, (list, tuple)) else str(v),
    "hex": lambda v: hex(v) if isinstance(v, int) else str(v),
    "num": num,
    "percent": percent,
    "s": lambda v: "" if _one(v) else "s",
    "has": lambda v: "has" if _one(v) else "have",
}


def relative(name: str, for_each: Optional[str]) -> str:
    """A relative fact name (`.pcie.gen_current`) as the absolute one (`gpus[i].pcie.gen_current`) in a
    rule that iterates `for_each`; other names, and any name in a rule without for_each, unchanged."""
    if for_each and name.startswith(".") and not name.startswith(".."):
        return f"{for_each}[i]{name}"
    return name


def expand(template: str, for_each: Optional[str]) -> str:
    """A template with its relative placeholders written out (see relative())."""
    if not for_each or "{." not in template:
        return template
    return PLACEHOLDER.sub(
        lambda m: "{" + relative(m.group(1), for_each) + (f"|{m.group(2)}" if m.group(2) else "") + "}",
        template,
    )


def placeholders(template: str) -> list[tuple[str, Optional[str]]]:
    return [(m.group(1), m.group(2)) for m in PLACEHOLDER.finditer(template)]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)


def render(template: str, facts: Facts, item: Optional[int]) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1).replace("[i]", f"[{item}]") if item is not None else m.group(1)
        fact = facts.get(name)
        if not fact.known:
            return "unknown"
        flt = m.group(2)
        return FILTERS[flt](fact.value) if flt else _text(fact.value)

    return PLACEHOLDER.sub(sub, template)


class UnsafeArgument(ValueError):
    pass


def render_arg(template: str, facts: Facts, item: Optional[int]) -> str:
    """One argv element. Placeholders must resolve to known facts whose text is a plain token."""

    def sub(m: re.Match) -> str:
        name = m.group(1).replace("[i]", f"[{item}]") if item is not None else m.group(1)
        fact = facts.get(name)
        if not fact.known:
            raise UnsafeArgument(f"{name} is unknown ({fact.unknown})")
        text = _text(fact.value)
        if not SAFE_ARG.match(text):
            raise UnsafeArgument(f"{name} = {text!r} is not a plain token")
        return text

    return PLACEHOLDER.sub(sub, template)
