"""Hypothesis strategies shared by the fuzz tests: hostile text, JSON values, mutated real snapshots,
Facts, and condition trees that the rule grammar accepts."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from gpudoctor.engine.conditions import FITS, OPERATORS
from gpudoctor.engine.template import placeholders
from gpudoctor.facts import LISTS, SCHEMA, SPECS, Fact, Facts, spec_for, spec_name
from gpudoctor.host import snapshot

FIXTURES = Path(__file__).parents[1] / "fixtures"
SNAPSHOTS = (FIXTURES / "h200-driver580-snapshot", FIXTURES / "nogpu-ci-snapshot")

# Text that has broken parsers before: digit runs longer than int() converts (4,300 digits on 3.11+),
# digits that str.isdigit() accepts but int() does not, separators, NULs, BOMs, lone surrogates' cousins.
NASTY = (
    "1" * 5000,
    "9" * 4301 + ".0",
    "0x" + "f" * 300,
    "²",
    "١٢٣",
    "\x00",
    "\ufeff",
    "\u2028",
    "..",
    "=",
    ":",
    "\t",
    "\\040",
    "-",
    "+",
    "#",
    "'",
    '"',
    "[",
    "{",
    "nan",
    "inf",
    "-1",
    "1e999",
    "2001-13-45",
    "99999999999999999999",
)
nasty = st.sampled_from(NASTY)
short_text = st.text(max_size=40)
versionish = st.from_regex(r"\A[0-9]{1,6}(\.[0-9]{1,6}){0,4}([a-z+._-][0-9a-z]{0,6})?\Z")
token = st.one_of(short_text, nasty, versionish)
text = st.lists(token, max_size=12).map("".join)


def lines_like(seed_lines: list[str]) -> st.SearchStrategy[str]:
    """Multi-line text made of real lines (from fixtures), mutated ones and junk, in any order."""

    def mutate(pair: tuple[str, list[str]]) -> str:
        line, inserts = pair
        for i, piece in enumerate(inserts):
            at = (len(line) * (i + 1)) // (len(inserts) + 1)
            line = line[:at] + piece + line[at:]
        return line

    real = st.sampled_from(seed_lines) if seed_lines else short_text
    mutated = st.tuples(real, st.lists(token, max_size=3)).map(mutate)
    return st.lists(st.one_of(real, mutated, text), max_size=25).map("\n".join)


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(text, st.sampled_from(["error", "msg"])), inner, max_size=4),
    ),
    max_leaves=12,
)


# --- real snapshots, mutated -----------------------------------------------------------------------------


@cache
def snapshot_members(index: int) -> dict[str, bytes]:
    return snapshot._read_dir(SNAPSHOTS[index])


@cache
def _paths(index: int, part: str) -> tuple[tuple, ...]:
    """Every path (tuple of keys/indexes) inside a JSON part, so a mutation can pick a few."""
    out: list[tuple] = []

    def walk(value: Any, path: tuple) -> None:
        out.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk(json.loads(snapshot_members(index)[part]), ())
    return tuple(out)


def _set(root: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    node = root
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return root


def _replacement(old: Any) -> st.SearchStrategy:
    if isinstance(old, str):
        return st.one_of(
            json_values,
            st.tuples(st.just(old), st.lists(token, min_size=1, max_size=3)).map(
                lambda p: p[0][: len(p[0]) // 2] + "".join(p[1]) + p[0][len(p[0]) // 2 :]
            ),
        )
    return json_values


@st.composite
def mutated_members(draw: Any) -> dict[str, bytes]:
    """The members of one of the fixture snapshots, with a few JSON values and file texts replaced."""
    index = draw(st.sampled_from(range(len(SNAPSHOTS))))
    members = dict(snapshot_members(index))
    parts = sorted(n for n in members if n.endswith(".json") and n != "manifest.json")
    for _ in range(draw(st.integers(0, 6))):
        part = draw(st.sampled_from(parts))
        data = json.loads(members[part])
        path = draw(st.sampled_from(_paths(index, part)))
        try:
            old: Any = data
            for key in path:
                if not isinstance(old, (dict, list)):  # a string indexes too, but cannot be assigned into
                    raise TypeError(key)
                old = old[key]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation replaced what this path went through
        data = _set(data, path, draw(_replacement(old)))
        members[part] = json.dumps(data).encode()
    files = sorted(n for n in members if n.startswith("files/"))
    for name in draw(st.lists(st.sampled_from(files), max_size=4, unique=True)):
        seed = members[name].decode("utf-8", errors="replace").splitlines()
        members[name] = draw(st.one_of(lines_like(seed), text)).encode("utf-8", errors="surrogatepass")
    if draw(st.booleans()):
        members[draw(st.sampled_from(parts))] = draw(st.binary(max_size=64))
    return members


# --- facts and conditions --------------------------------------------------------------------------------

_VALUES_BY_TYPE = {
    "str": st.one_of(text, st.sampled_from(["NVIDIA H200", "tesla", "cuda", "none", "Hopper"])),
    "int": st.integers(min_value=-(2**66), max_value=2**66),
    "float": st.floats(allow_nan=True, allow_infinity=True),
    "bool": st.booleans(),
    "version": st.one_of(versionish, nasty, text),
    "list[str]": st.lists(text, max_size=4),
    "list[int]": st.lists(st.integers(), max_size=4),
}
any_value = st.one_of(*_VALUES_BY_TYPE.values(), json_values)
reasons = st.sampled_from(["not supported", "timed out", "no permission", "not installed", ""])


def _fact_for(type_: str) -> st.SearchStrategy[Fact]:
    well_typed = _VALUES_BY_TYPE[type_].map(lambda v: Fact(v, "fuzz"))
    mistyped = any_value.map(lambda v: Fact(v, "fuzz"))
    missing = reasons.map(lambda r: Fact(None, "fuzz", unknown=r))
    return st.one_of(well_typed, well_typed, mistyped, missing)


_FACT_BY_TYPE = {type_: _fact_for(type_) for type_ in _VALUES_BY_TYPE}


SPEC_NAMES = [s.name for s in SCHEMA if not (s.name.endswith(".count") and s.name[: -len(".count")] in LISTS)]


@st.composite
def facts_trees(draw: Any, names: Any = None, max_items: int = 3) -> Facts:
    """Facts for the given schema names (`gpus[].name` style; default: a random few), lists of
    0..max_items members, with wrong types, unknowns and missing members mixed in."""
    if names is None:
        names = draw(st.lists(st.sampled_from(SPEC_NAMES), max_size=25, unique=True))
    items: dict[str, Fact] = {}
    counts = {}
    for name in LISTS:
        counts[name] = draw(st.integers(0, max_items))
        if draw(st.integers(0, 5)):
            items[f"{name}.count"] = Fact(counts[name], "fuzz")
        else:
            # Unknown, or mistyped; never a huge number: counts are len() of real lists (gpus.count is
            # NVML's, refused above gpus.MAX_GPUS), and a for_each rule iterates that many items.
            bad = st.one_of(text, st.booleans(), st.floats(), st.integers(-5, -1), st.none(), st.lists(text))
            items[f"{name}.count"] = draw(
                st.one_of(reasons.map(lambda r: Fact(None, "", r)), bad.map(lambda v: Fact(v, "fuzz")))
            )
    for name in names:
        spec = SPECS.get(name)
        if spec is None or name in items:  # a list's .count is drawn above, never a huge number
            continue
        if "[]" in name:
            head = name.split("[]")[0]
            for i in range(counts[head] + draw(st.integers(0, 1))):
                if draw(st.integers(0, 4)):
                    items[name.replace("[]", f"[{i}]")] = draw(_FACT_BY_TYPE[spec.type])
        elif draw(st.integers(0, 4)):
            items[name] = draw(_FACT_BY_TYPE[spec.type])
    missing = draw(
        st.dictionaries(st.sampled_from(["gpus", "driver", "cuda", "python"]), reasons, max_size=2)
    )
    return Facts(items, missing)


def referenced(tree: Any) -> set[str]:
    """The schema names (`gpus[].name` style) a condition tree or rule mentions, in facts or templates."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "fact" and isinstance(v, str):
                    found.add(spec_name(v.replace("[i]", "[0]")))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str):
            for name, _flt in placeholders(node):
                found.add(spec_name(name.replace("[i]", "[0]")))

    walk(tree)
    return found


def fact_names(for_each: Any, types: Any = None) -> st.SearchStrategy[str]:
    """Fact names a rule iterating `for_each` may use; of the declared `types` only, when given."""
    specs = [s for s in SCHEMA if types is None or s.type in types]
    plain = [s.name for s in specs if "[]" not in s.name]
    indexed = [s.name.replace("[]", "[0]") for s in specs if "[]" in s.name]
    names = plain + indexed
    if for_each is not None:
        names += [s.name.replace("[]", "[i]") for s in specs if s.name.startswith(f"{for_each}[]")]
    return st.sampled_from(names)


def _declared(name: str) -> str:
    spec = spec_for(name.replace("[i]", "[0]"))
    return spec.type if spec is not None else ""


def _other_types(op: str, type_: str) -> tuple[str, ...]:
    """The declared types of a fact that `{fact: NAME, op: {fact: OTHER}}` may compare NAME's with."""
    if op in ("in", "not_in"):
        return (f"list[{type_}]",)
    if op == "contains":
        return (type_[5:-1],) if type_.startswith("list[") else ("str",)
    return ("int", "float") if type_ in ("int", "float") else (type_,)


_BY_TYPE = {
    "str": text,
    "int": st.integers(),
    "float": st.one_of(st.integers(), st.floats(allow_nan=False)),
    "bool": st.booleans(),
    "version": st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,4}){0,3}\Z"),
}


def _operand(op: str, kind: str, type_: str) -> st.SearchStrategy[Any]:
    """A literal value for `op` on a fact of the declared type, as the loader's type check accepts."""
    if op in ("eq", "ne") and type_ in _BY_TYPE:
        return _BY_TYPE[type_]
    if op in ("in", "not_in") and type_ in _BY_TYPE:
        return st.lists(_BY_TYPE[type_], max_size=4)
    if op == "contains":
        return _BY_TYPE.get(type_[5:-1] if type_.startswith("list[") else "str", text)
    return _OPERAND_BY_KIND[kind]


_OPERAND_BY_KIND = {
    "scalar": st.one_of(text, st.integers(), st.floats(allow_nan=False), st.booleans()),
    "number": st.one_of(st.integers(min_value=-(2**64), max_value=2**64), st.floats(allow_nan=True)),
    "version": st.one_of(
        st.from_regex(
            r"\A[0-9]{1,4}(\.[0-9]{1,4}){0,3}((a|b|rc|\.post|\.dev)[0-9]{1,2})?(\+[a-z0-9]{1,5})?\Z"
        ),
        st.integers(0, 10**6),
    ),
    "list": st.lists(st.one_of(text, st.integers(), st.booleans()), max_size=4),
    "mask": st.one_of(st.integers(0, 2**64), st.integers(0, 2**16).map(hex)),
    "bool": st.booleans(),
    "require": st.sampled_from(["met", "unmet"]),
    "regex": st.sampled_from(["H100|H200", "^NVIDIA", "[0-9]+", "", ".*", "(a|b)?c"]),
    # version ranges as docs/policy.md writes them
    "range": st.sampled_from([">=12.4,<14", ">=9.15", "<13", ">=535,<580", "==12.8", "!=12.9,>=12"]),
}


def conditions(for_each: Any, max_leaves: int = 8) -> st.SearchStrategy[dict]:
    """Condition trees the loader accepts: all/any/not over comparisons of facts with values or facts."""

    @st.composite
    def comparison(draw: Any) -> dict:
        op = draw(st.sampled_from(sorted(OPERATORS)))
        kind = OPERATORS[op][0]
        # Typed rules: only facts whose declared type the operator fits, compared with values of that type.
        fact = draw(fact_names(for_each, FITS.get(op)))
        type_ = _declared(fact)
        others = _other_types(op, type_)
        if kind not in ("bool", "regex", "range", "require") and any(s.type in others for s in SCHEMA):
            if draw(st.integers(0, 3)) == 0:
                return {"fact": fact, op: {"fact": draw(fact_names(for_each, others))}}
        return {"fact": fact, op: draw(_operand(op, kind, type_))}

    return st.recursive(
        comparison(),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"all": xs}),
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"any": xs}),
            inner.map(lambda x: {"not": x}),
        ),
        max_leaves=max_leaves,
    )
