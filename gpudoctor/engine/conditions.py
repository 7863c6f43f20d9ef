"""Rule conditions: their grammar (validated when rule files load) and their evaluation over Facts.

    condition  := {all: [condition, ...]} | {any: [condition, ...]} | {not: condition} | comparison
    comparison := {fact: NAME, OPERATOR: VALUE}      VALUE may be {fact: NAME} to compare two facts

Evaluation is three-valued: True, False, or None when a fact it needs is unknown. `all` is False if any
part is False, else None if any part is None; `any` is True if any part is True, else None if any is None;
`not None` is None. A rule fires only on True. `exists` and `unknown` look at knowledge itself and are
never None.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Optional

from packaging.version import Version

from ..facts import Facts, spec_for
from . import extensions, template


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _version(v: Any) -> Optional[Version]:
    try:
        return Version(str(v))
    except ValueError:  # InvalidVersion, or a number too long for int() (Python 3.11+)
        return None


def _vcmp(test: Callable[[Version, Version], bool]) -> Callable[[Any, Any], Optional[bool]]:
    def compare(a: Any, b: Any) -> Optional[bool]:
        va, vb = _version(a), _version(b)
        return None if va is None or vb is None else test(va, vb)

    return compare


def _ncmp(test: Callable[[float, float], bool]) -> Callable[[Any, Any], Optional[bool]]:
    def compare(a: Any, b: Any) -> Optional[bool]:
        return test(a, b) if _num(a) and _num(b) else None

    return compare


def _mask(v: Any) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return None
    return None


def _bits(test: Callable[[int, int], bool]) -> Callable[[Any, Any], Optional[bool]]:
    def compare(a: Any, b: Any) -> Optional[bool]:
        ma, mb = _mask(a), _mask(b)
        return None if ma is None or mb is None else test(ma, mb)

    return compare


class PatternError(ValueError):
    """A rule's regular expression that RE2 cannot compile; the message says why."""


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> Any:
    """A rule's regular expression, compiled by RE2 (google-re2): a search takes time linear in the value's
    length whatever the pattern, so no rule can stall a check past its deadline (Python's backtracking `re`
    took 17 s to search 29 characters with `^(a+)+$`). RE2 has no backreferences or lookaround; a pattern
    using them is refused when the rule loads. PatternError says why a pattern does not compile."""
    import re2  # only here: most checks read no pattern before a rule needs one

    options = re2.Options()
    options.log_errors = False  # the reason goes into our message, not to stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0] if e.args else e
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(
            f"RE2 cannot compile it ({reason}); rule patterns use RE2 syntax, which has no backreferences "
            "or lookaround (https://github.com/google/re2/wiki/Syntax)"
        ) from None
    except (TypeError, ValueError, OverflowError, RecursionError, MemoryError) as e:
        raise PatternError(f"RE2 cannot compile it ({type(e).__name__}: {e})") from None


def _matches(a: Any, pattern: Any) -> Optional[bool]:
    try:
        return compile_pattern(str(pattern)).search(str(a)) is not None
    except PatternError:  # a rule that skipped validation: unknown, with the reason _compare records
        return None


def _contains(a: Any, b: Any) -> Optional[bool]:
    if isinstance(a, str):
        return b in a if isinstance(b, str) else None  # `5 in "abc"` raises: mistyped is unknown
    return b in a if isinstance(a, (list, tuple)) else None


def _in(a: Any, b: Any) -> Optional[bool]:
    return a in b if isinstance(b, (list, tuple)) else None


_BOUNDS: dict[str, Callable[[Version, Version], bool]] = {
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


@lru_cache(maxsize=256)
def version_range(text: str) -> Optional[tuple[tuple[str, Version], ...]]:
    """'>=12.4,<14' -> ((">=", Version("12.4")), ("<", Version("14"))): bounds joined by commas, each one
    of _BOUNDS' operators and a version (no `==12.*`, no `~=`); None when the text is not such a range."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # only a range needs it (3 ms)

    try:
        bounds = [(s.operator, s.version) for s in sorted(SpecifierSet(text), key=str)]
        out = tuple((op, Version(v)) for op, v in bounds if op in _BOUNDS and not v.endswith(".*"))
    except (InvalidSpecifier, ValueError):  # ValueError: InvalidVersion, or a number too long to convert
        return None
    return out if out and len(out) == len(bounds) else None


def _in_range(a: Any, b: Any) -> Optional[bool]:
    """Whether a version meets every bound of a range (each compared as versions, as version_lt does)."""
    va, bounds = _version(a), version_range(b) if isinstance(b, str) else None
    return None if va is None or bounds is None else all(_BOUNDS[op](va, v) for op, v in bounds)


# operator -> (what VALUE must be, for validation; how to compare a fact's value with it)
OPERATORS: dict[str, tuple[str, Callable[[Any, Any], Optional[bool]]]] = {
    "eq": ("scalar", lambda a, b: a == b),
    "ne": ("scalar", lambda a, b: a != b),
    "lt": ("number", _ncmp(lambda a, b: a < b)),
    "le": ("number", _ncmp(lambda a, b: a <= b)),
    "gt": ("number", _ncmp(lambda a, b: a > b)),
    "ge": ("number", _ncmp(lambda a, b: a >= b)),
    "version_eq": ("version", _vcmp(lambda a, b: a == b)),
    "version_ne": ("version", _vcmp(lambda a, b: a != b)),
    "version_lt": ("version", _vcmp(lambda a, b: a < b)),
    "version_le": ("version", _vcmp(lambda a, b: a <= b)),
    "version_gt": ("version", _vcmp(lambda a, b: a > b)),
    "version_ge": ("version", _vcmp(lambda a, b: a >= b)),
    "version_in": ("range", _in_range),
    "in": ("list", _in),
    "not_in": ("list", lambda a, b: None if _in(a, b) is None else not _in(a, b)),
    "contains": ("scalar", _contains),
    "matches": ("regex", _matches),
    "bits_any": ("mask", _bits(lambda a, b: a & b != 0)),
    "bits_all": ("mask", _bits(lambda a, b: a & b == b)),
    "bits_none": ("mask", _bits(lambda a, b: a & b == 0)),
    "exists": ("bool", lambda a, b: a),  # handled before evaluation: see _compare
    "unknown": ("bool", lambda a, b: a),
}
LOGIC = ("all", "any", "not")


# --- types: which operators fit which declared fact types -------------------------------------------

SCALARS = ("str", "int", "float", "bool", "version")
NUMBERS = ("int", "float")
# operator -> the declared fact types (facts.py SCHEMA) it can judge; absent: any type
FITS: dict[str, tuple[str, ...]] = {
    **{op: SCALARS for op in ("eq", "ne", "in", "not_in")},
    **{op: NUMBERS for op in ("lt", "le", "gt", "ge")},
    **{f"version_{op}": ("version",) for op in ("eq", "ne", "lt", "le", "gt", "ge", "in")},
    "contains": ("str", "list[str]", "list[int]"),
    "matches": ("str", "version"),
    **{op: ("int",) for op in ("bits_any", "bits_all", "bits_none")},
}


def fits(type_: str, value: Any) -> bool:
    """Whether a value has the fact type the schema declares (a version is a string, or a number)."""
    if type_ == "str":
        return isinstance(value, str)
    if type_ == "bool":
        return isinstance(value, bool)
    if type_ == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "float":
        return _num(value)
    if type_ == "version":
        return isinstance(value, str) or _num(value)
    if type_.startswith("list[") and type_.endswith("]"):
        return isinstance(value, (list, tuple)) and all(fits(type_[5:-1], v) for v in value)
    return True


def _instead(op: str, type_: str) -> str:
    """What to write instead of `op` on a fact of this type."""
    if type_ == "version":
        return f"use version_{op}" if op in ("lt", "le", "gt", "ge") else "use version_eq/version_ne"
    if type_ in NUMBERS and op.startswith("version_") and op != "version_in":
        return f"use {op[len('version_') :]}"
    if type_.startswith("list["):
        return "use contains (or compare the list's count fact)"
    if type_ == "bool":
        return "use eq: true or eq: false"
    if type_ == "str":
        return "use eq, ne, in, not_in or matches"
    return f"use one of: {', '.join(o for o, types in FITS.items() if type_ in types)}"


def _type_of(name: str) -> Optional[str]:
    spec = spec_for(name.replace("[i]", "[0]"))
    return spec.type if spec is not None else None


def _check_types(op: str, name: str, value: Any, where: str, errors: list) -> None:
    """The operator must fit the fact's declared type, and a literal value the type it is compared with."""
    type_ = _type_of(name)
    extended = extensions.OPERATORS.get(op)
    fit = extended.fits if extended is not None else FITS.get(op)
    if type_ is None or fit is None:
        return
    if type_ not in fit:
        errors.append((where, f"'{op}' does not fit {name}, declared {type_}: {_instead(op, type_)}"))
        return
    if isinstance(value, dict):  # {fact: OTHER}: the other fact's type must fit as well
        other = _type_of(value["fact"]) if isinstance(value.get("fact"), str) else None
        if other is None:
            return
        want = {"in": f"list[{type_}]", "not_in": f"list[{type_}]", "matches": "str", "version_in": "str"}
        want = want.get(op, type_)
        if op == "contains":
            want = type_[5:-1] if type_.startswith("list[") else "str"
        same = other == want or (other in NUMBERS and want in NUMBERS)
        if not same:
            errors.append(
                (where, f"'{op}' compares {name} ({type_}) with {value['fact']} ({other}): types differ")
            )
        return
    if op in ("eq", "ne"):
        _check_literal(op, name, type_, value, where, errors)
    elif op in ("in", "not_in") and isinstance(value, list):
        for v in value:
            if _check_literal(op, name, type_, v, where, errors):
                break
    elif op == "contains":
        _check_literal(op, name, type_[5:-1] if type_.startswith("list[") else "str", value, where, errors)


def _check_literal(op: str, name: str, type_: str, value: Any, where: str, errors: list) -> bool:
    if type_ == "version":
        ok = isinstance(value, str)  # a number here is a float: 13.0 == "13.0" is never true
    elif type_ == "float":
        ok = _num(value)
    else:
        ok = fits(type_, value)
    if not ok:
        hint = " (quote it, or use version_eq/version_ne)" if type_ == "version" else ""
        errors.append((where, f"'{op}' compares {name}, declared {type_}, with {value!r}{hint}"))
    return not ok


# --- validation ----------------------------------------------------------------------------------------


def expand(cond: Any, for_each: Optional[str]) -> Any:
    """A condition tree with its relative fact names (`.pcie.gen_current`) written out for the list the
    rule iterates (`gpus[i].pcie.gen_current`); anything malformed is kept as it is, for validate()."""
    if not for_each:
        return cond
    if isinstance(cond, list):
        return [expand(c, for_each) for c in cond]
    if not isinstance(cond, dict):
        return cond
    out = {}
    for key, value in cond.items():
        if key == "fact" and isinstance(value, str):
            out[key] = template.relative(value, for_each)
        elif key in LOGIC or isinstance(value, dict):
            out[key] = expand(value, for_each)
        else:
            out[key] = value
    return out


def validate(cond: Any, where: str, for_each: Optional[str], errors: list[tuple[str, str]]) -> None:
    """Append (where, problem) for everything wrong with a condition tree; never raises."""
    if not isinstance(cond, dict) or not cond:
        errors.append(
            (where, f"a condition must be a mapping (all/any/not or fact + operator), got {cond!r}")
        )
        return
    logic = [k for k in cond if k in LOGIC]
    if logic:
        if len(cond) != 1:
            errors.append((where, f"'{logic[0]}' must stand alone in its mapping; found {_keys(cond)}"))
            return
        key = logic[0]
        body = cond[key]
        if key == "not":
            validate(body, f"{where}.not", for_each, errors)
        elif not isinstance(body, list) or not body:
            errors.append((f"{where}.{key}", "expected a non-empty list of conditions"))
        else:
            for i, part in enumerate(body):
                validate(part, f"{where}.{key}[{i}]", for_each, errors)
        return
    if "fact" not in cond:
        errors.append((where, f"expected 'all', 'any', 'not' or 'fact', got {_keys(cond)}"))
        return
    check_fact_name(cond["fact"], f"{where}.fact", for_each, errors)
    ops = [k for k in cond if k != "fact"]
    if len(ops) != 1:
        errors.append((where, f"a comparison needs exactly one operator, got {ops or 'none'}"))
        return
    op = ops[0]
    if op not in OPERATORS and op not in extensions.OPERATORS:
        known = ", ".join([*OPERATORS, *extensions.OPERATORS])
        errors.append((f"{where}.{op}", f"unknown operator '{op}'; expected one of: {known}"))
        return
    before = len(errors)
    _validate_value(op, cond[op], f"{where}.{op}", for_each, errors)
    if len(errors) == before and isinstance(cond["fact"], str):
        _check_types(op, cond["fact"], cond[op], f"{where}.{op}", errors)


SCALAR_TYPES = (str, int, float, bool)


def _validate_value(op: str, value: Any, where: str, for_each: Optional[str], errors: list) -> None:
    extended = extensions.OPERATORS.get(op)
    if extended is not None:  # one of its words, never {fact: NAME}
        if isinstance(value, (dict, list)) or value not in extended.words:
            words = " or ".join(repr(w) for w in extended.words)
            errors.append((where, f"'{op}' expects {words}, got {value!r}"))
        return
    kind = OPERATORS[op][0]
    if isinstance(value, dict):
        if set(value) == {"fact"} and kind != "bool":
            check_fact_name(value["fact"], f"{where}.fact", for_each, errors)
        else:
            errors.append((where, f"'{op}' takes a value or {{fact: NAME}}, got {value!r}"))
        return
    # each test a lambda: only the operator's own kind is checked (a range imports packaging.specifiers)
    bad = {
        "scalar": lambda v: not isinstance(v, SCALAR_TYPES),
        "number": lambda v: not _num(v),
        "version": lambda v: not isinstance(v, (str, int, float)) or _version(v) is None,
        "list": lambda v: not isinstance(v, list) or not all(isinstance(x, SCALAR_TYPES) for x in v),
        "mask": lambda v: _mask(v) is None,
        "bool": lambda v: not isinstance(v, bool),
        "regex": lambda v: not isinstance(v, str),
        "range": lambda v: not isinstance(v, str) or version_range(v) is None,
    }[kind](value)
    hint = {
        "number": "a number",
        "version": "a version such as '525.60.13' (quote it)",
        "list": "a list of plain values",
        "mask": "an integer or a string such as '0xE8'",
        "bool": "true or false",
        "regex": "a regular expression string",
        "scalar": "a plain value",
        "range": "a version range such as '>=12.4,<14' (>=, >, <=, <, ==, !=)",
    }[kind]
    if bad:
        errors.append((where, f"'{op}' expects {hint}, got {value!r}"))
        return
    if kind == "regex":
        try:
            compile_pattern(value)
        except PatternError as e:
            errors.append((where, f"not a valid regular expression: {e}"))


def _keys(cond: dict) -> list:
    """A mapping's keys for a message, sorted; YAML keys may mix strings and numbers."""
    return sorted(cond, key=lambda k: (type(k).__name__, str(k)))


def check_fact_name(name: Any, where: str, for_each: Optional[str], errors: list) -> None:
    if not isinstance(name, str):
        errors.append((where, f"a fact name must be a string, got {name!r}"))
        return
    if name.startswith("."):  # left relative: the loader expands it only in a rule with for_each
        errors.append((where, f"'{name}' names a fact of the item, but the rule has no for_each"))
        return
    if "[i]" in name:
        head = name.split("[i]")[0]
        if for_each is None:
            errors.append((where, f"'{name}' uses [i] but the rule has no for_each"))
            return
        if head != for_each:
            errors.append((where, f"'{name}' uses [i] of '{head}' but the rule iterates '{for_each}'"))
            return
    if spec_for(name.replace("[i]", "[0]")) is None:
        errors.append((where, f"unknown fact '{name}' (see docs/facts.md for the names facts have)"))


# --- evaluation ----------------------------------------------------------------------------------------


class Evaluation:
    """Evaluates one rule's condition for one item, remembering which facts it read."""

    def __init__(self, facts: Facts, item: Optional[int]) -> None:
        self.facts = facts
        self.item = item
        self.read: dict[str, Any] = {}  # fact name -> value or None
        self.unknown: dict[str, str] = {}  # fact name -> reason

    def name(self, pattern: str) -> str:
        return pattern.replace("[i]", f"[{self.item}]") if self.item is not None else pattern

    def fact(self, pattern: str) -> tuple[bool, Any]:
        name = self.name(pattern)
        fact = self.facts.get(name)
        if fact.known:
            type_ = _type_of(name)
            if type_ is not None and not fits(type_, fact.value):
                # A value of the wrong type judges nothing: unknown, never a comparison that "passed".
                self.unknown[name] = f"has {_short(fact.value)}, not the {type_} the schema declares"
                return False, None
            self.read[name] = fact.value
            return True, fact.value
        self.unknown[name] = fact.unknown or "unknown"
        return False, None

    def __call__(self, cond: dict) -> Optional[bool]:
        if "all" in cond or "any" in cond:
            before = dict(self.unknown)
            if "all" in cond:
                results = [self(c) for c in cond["all"]]
                result = False if False in results else (None if None in results else True)
            else:
                results = [self(c) for c in cond["any"]]
                result = True if True in results else (None if None in results else False)
            if result is not None:
                self.unknown = before  # unknown parts that did not decide the result are not reasons
            return result
        if "not" in cond:
            inner = self(cond["not"])
            return None if inner is None else not inner
        return self._compare(cond)

    def _compare(self, cond: dict) -> Optional[bool]:
        op = next(k for k in cond if k != "fact")
        expected = cond[op]
        name = self.name(cond["fact"])
        if op in ("exists", "unknown"):
            is_known = self.facts.get(name).known
            self.read[name] = self.facts.get(name).value
            return is_known == expected if op == "exists" else (not is_known) == expected
        ok, actual = self.fact(cond["fact"])
        if not ok:
            return None
        extended = extensions.OPERATORS.get(op)
        if extended is not None:
            result, missing = extended.judge(actual, expected, self.facts)
            if result is None:
                self.unknown.update(missing or {name: "cannot be judged"})
            return result
        if isinstance(expected, dict):
            ok, expected = self.fact(expected["fact"])
            if not ok:
                return None
        result = OPERATORS[op][1](actual, expected)
        if result is None:  # a value the operator cannot judge (not a version, not a number, ...)
            self.unknown[name] = f"{_short(actual)} cannot be compared by '{op}' with {_short(expected)}"
        return result


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
