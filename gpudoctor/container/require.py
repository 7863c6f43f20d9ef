"""NVIDIA_REQUIRE_* expressions, judged the way nvidia-container-cli judges them (libnvidia-container's
src/cli/dsl.c, with the check_* rules and the per-GPU loop of src/cli/configure.c).

An expression is groups separated by single spaces, ORed; a group is constraints separated by commas,
ANDed; empty pieces are skipped. Groups are read left to right and reading stops at the first group whose
every constraint holds, and inside a group at the first constraint that fails: what follows is never read,
so a typo there goes unnoticed. A constraint is NAME OP VALUE, NAME one of cuda, driver, arch, brand in any
case, OP the longest run of the characters `<>=!` (`=`, `!=`, `<`, `<=`, `>`, `>=`, and `!` read as `!=`).
Versions compare number by number, leniently (`12..4` is 12.4, trailing `.0`s do not count); brands compare
without case (strcasecmp) and only with `=` and `!=`, against the runtime's name for the GPU's NVML brand
(one of sixteen since release 1.9.0, else Unknown). Anything else makes the whole expression invalid, and
the runtime refuses an image whose expression is invalid just as one whose expression is not met.

The expression is judged once per visible GPU, against that GPU's brand and compute capability and the
driver's version and CUDA version; with no visible GPU it is judged once, and `arch` and `brand` constraints
hold. What gpudoctor does not know (an unreadable fact) is followed both ways: the verdict is unknown only
when the answer depends on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Optional, Union

from ..facts import Facts
from ..probes.gpus import CONTAINER_BRANDS, UNKNOWN_BRAND

MET, UNMET, INVALID = "met", "unmet", "invalid"

# configure.c's rules table: the names a constraint may use.
NAMES = ("cuda", "driver", "arch", "brand")
# dsl.c's operator table, in its order: a run of operator characters is the first entry it starts.
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
_OPERATOR_CHARS = "<>=!"
_VERSION_CHARS = frozenset("0123456789.")
_UINTMAX = 2**64 - 1  # strtoumax's overflow answer, which dsl.c reads as an error
_EXPR_MAX = 128  # dsl.c formats a failed constraint into a buffer this size; one that does not fit is invalid
# The sixteen brands driver.c names (gpudoctor.probes.gpus.CONTAINER_BRANDS, with its source), by the
# lower-case spelling of the gpus[].brand fact; every other brand is "Unknown" to nvidia-container-cli.
_CONTAINER_BRANDS = {name.lower(): name for name in CONTAINER_BRANDS.values()}

# A constraint's possible results: True, False, or INVALID (more than one when a fact is unknown).
Result = Union[bool, str]


class Gpu(NamedTuple):
    """A visible GPU as nvidia-container-cli sees it: NVML's brand (as gpudoctor names it: tesla, nvidia,
    geforce, ...) and its compute capability ("9.0"); None where gpudoctor could not read it."""

    brand: Optional[str]
    arch: Optional[str]


class Driver(NamedTuple):
    """The host driver's version ("580.159.04") and the CUDA version it supports ("13.0"), or None."""

    version: Optional[str]
    cuda: Optional[str]


class Outcome(NamedTuple):
    """What one evaluation of an expression can end in (more than one when an unknown fact decides), the
    first space-separated piece NVIDIA's error message quotes, and the unknown inputs the answer reached."""

    possible: frozenset
    first_group: str
    unknown: tuple = ()


class Verdict(NamedTuple):
    """The runtime's answer for a set of requirements: MET, UNMET, INVALID, or None when it depends on
    something unknown. `requirement` and `gpu` name the evaluation that refuses (gpu None: the one
    evaluation with no visible GPU), `error` is nvidia-container-cli's message, `unknown` the inputs
    ("cuda", "driver", ("arch", 0), ...) an unknown verdict waits for."""

    status: Optional[str]
    requirement: Optional[str] = None
    gpu: Optional[int] = None
    error: Optional[str] = None
    unknown: tuple = ()


def container_brand(nvml_brand: str) -> str:
    """The brand nvidia-container-cli compares, as it spells it: one of the sixteen driver.c names, or
    Unknown."""
    return _CONTAINER_BRANDS.get(nvml_brand.lower(), UNKNOWN_BRAND)


# --- comparisons (dsl_compare_version, dsl_compare_string) --------------------------------------------


def _number(text: str, at: int) -> tuple[Optional[int], int]:
    """The decimal number at `at` and where it ends; None when there is none or it overflows strtoumax."""
    end = at
    while end < len(text) and text[end].isdigit():
        end += 1
    if end == at:
        return None, at
    return _decimal(text[at:end]), end


def _decimal(digits: str) -> Optional[int]:
    """The value of a run of digits, None when strtoumax overflows (int() would refuse 4,300+ digits)."""
    significant = digits.lstrip("0")
    if len(significant) > len(str(_UINTMAX)):
        return None
    value = int(significant or "0")
    return None if value >= _UINTMAX else value


def _skip(text: str, at: int, chars: str) -> int:
    while at < len(text) and text[at] in chars:
        at += 1
    return at


def compare_version(actual: str, op: str, wanted: str) -> Result:
    """`actual OP wanted` as dsl.c compares versions: True, False, or INVALID."""
    if not set(actual) <= _VERSION_CHARS or not set(wanted) <= _VERSION_CHARS:
        return INVALID
    i = j = 0
    while i < len(actual) and j < len(wanted):
        a, i = _number(actual, i)
        if a is None:
            return INVALID
        w, j = _number(wanted, j)
        if w is None:
            return INVALID
        if a != w:
            if op in ("=", "!="):
                return op == "!="
            return a < w if op in ("<", "<=") else a > w
        i, j = _skip(actual, i, "."), _skip(wanted, j, ".")
    # Whatever is left of the longer one counts only if it holds a digit other than 0.
    more_actual = _skip(actual, i, ".0") < len(actual)
    more_wanted = _skip(wanted, j, ".0") < len(wanted)
    if op == "!=":
        return more_actual or more_wanted
    if op in ("=", "<=", ">=") and not more_actual and not more_wanted:
        return True
    if op == "=":
        return False
    if op in ("<", "<="):
        return not more_actual and more_wanted
    return more_actual and not more_wanted


def _ascii_lower(text: str) -> bytes:
    """strcasecmp folds ASCII letters only."""
    return text.encode("utf-8", "surrogateescape").lower()


def compare_brand(actual: str, op: str, wanted: str) -> Result:
    """dsl_compare_string: equal or not, ignoring ASCII case; any other operator is invalid."""
    if op not in ("=", "!="):
        return INVALID
    same = _ascii_lower(actual) == _ascii_lower(wanted)
    return same if op == "=" else not same


def _unknown_version(op: str, wanted: str) -> frozenset:
    """What comparing an unknown version with `wanted` can give: a wanted value that no version compares
    with is invalid whatever the actual one is; one with a part too large for strtoumax may be reached."""
    if not set(wanted) <= _VERSION_CHARS or wanted.startswith("."):
        return frozenset((INVALID,))
    huge = any(p and _decimal(p) is None for p in wanted.split("."))
    return frozenset((True, False, INVALID) if huge else (True, False))


# --- one constraint (evaluate_rule and the check_* rules) -----------------------------------------------


def split_constraint(piece: str) -> Optional[tuple[str, str, str]]:
    """(name as written, operator, value) as evaluate_rule reads a constraint, or None when it cannot."""
    start = next((k for k, c in enumerate(piece) if c in _OPERATOR_CHARS), len(piece))
    if start == 0 or start == len(piece):
        return None
    end = _skip(piece, start, _OPERATOR_CHARS)
    run = piece[start:end]
    op = next((o for o in OPERATORS if o.startswith(run)), None)
    value = piece[end:]
    if op is None or not value:
        return None
    return piece[:start], op, value


def _constraint(piece: str, gpu: Optional[Gpu], gpu_index: Optional[int], driver: Driver) -> tuple:
    """(the possible results, the unknown input reached or None) of one constraint on one evaluation."""
    parts = split_constraint(piece)
    if parts is None:
        return frozenset((INVALID,)), None
    written, op, value = parts
    name = written.lower() if written.isascii() else written
    if name not in NAMES:
        return frozenset((INVALID,)), None
    missing = None
    if name in ("arch", "brand") and gpu is None:
        results = frozenset((True,))  # no visible GPU: configure.c assumes the arch and brand are fine
    elif name == "brand":
        if gpu.brand is not None:
            results = frozenset((compare_brand(container_brand(gpu.brand), op, value),))
        elif op in ("=", "!="):
            results, missing = frozenset((True, False)), ("brand", gpu_index)
        else:
            results = frozenset((INVALID,))
    else:
        if name == "arch":
            actual, input_name = gpu.arch, ("arch", gpu_index)
        else:
            actual, input_name = (driver.cuda if name == "cuda" else driver.version), name
        if actual is not None:
            results = frozenset((compare_version(actual, op, value),))
        else:
            results, missing = _unknown_version(op, value), input_name
    if False in results and len(f"{written} {op} {value}".encode("utf-8", "surrogateescape")) >= _EXPR_MAX:
        results = (results - {False}) | {INVALID}
    return results, (missing if len(results) > 1 else None)


# --- one expression (dsl_evaluate) ----------------------------------------------------------------------


def evaluate(expr: str, gpu: Optional[Gpu], driver: Driver, gpu_index: Optional[int] = None) -> Outcome:
    """How one evaluation of `expr` can end, for one visible GPU (or none: `gpu` None)."""
    running = {True}  # what the last constraint read may have left, while no group has decided
    ends: set = set()
    unknown: list = []
    for group in expr.split(" "):
        if not group:
            continue
        if not running:
            break
        pieces = [p for p in group.split(",") if p]
        if not pieces:
            # A group of empty pieces ends the reading as a group that holds does, but the result stays
            # what the last constraint read left: after a failed group, that is a failure.
            break
        may_hold, may_fail = True, False
        for piece in pieces:
            if not may_hold:
                break
            results, missing = _constraint(piece, gpu, gpu_index, driver)
            if missing is not None and missing not in unknown:
                unknown.append(missing)
            if INVALID in results:
                ends.add(INVALID)
            may_fail = may_fail or False in results
            may_hold = True in results
        if may_hold:
            ends.add(MET)
        running = {False} if may_fail else set()
    ends.update((MET if r else UNMET) for r in running)
    return Outcome(frozenset(ends), expr.split(" ")[0], tuple(unknown))


def error_message(outcome_status: str, first_group: str) -> str:
    """nvidia-container-cli's message for a refused requirement, after "requirement error: "."""
    if outcome_status == INVALID:
        return "invalid expression"
    if first_group.startswith("cuda>="):
        return (
            f"unsatisfied condition: {first_group}, please update your driver to a newer version, "
            "or use an earlier cuda container"
        )
    return f"unsatisfied condition: {first_group}"


# --- every requirement on every visible GPU (configure_command) -----------------------------------------


def judge(requirements: Sequence[str], gpus: Iterable[Gpu], driver: Driver) -> Verdict:
    """The runtime's verdict: each requirement on each visible GPU in turn (once, GPU-less, when none is
    visible), refused at the first evaluation that fails or is invalid."""
    devices: list = list(enumerate(gpus)) or [(None, None)]
    waiting: list = []
    for index, gpu in devices:
        for expr in requirements:
            outcome = evaluate(expr, gpu, driver, index)
            if MET not in outcome.possible:
                status = INVALID if INVALID in outcome.possible else UNMET
                return Verdict(status, expr, index, error_message(status, outcome.first_group))
            if outcome.possible != {MET}:
                waiting.extend(u for u in outcome.unknown if u not in waiting)
    if waiting:
        return Verdict(None, unknown=tuple(waiting))
    return Verdict(MET)


# --- from gpudoctor's facts -----------------------------------------------------------------------------


def _value(facts: Facts, name: str) -> Optional[str]:
    fact = facts.get(name)
    return str(fact.value) if fact.known and fact.value is not None else None


def _version(facts: Facts, name: str) -> Optional[str]:
    """A version fact as the runtime would read it from NVML, or None when unknown or not such a version
    (a hand-edited snapshot's "²" judges nothing: unknown, never an invalid expression)."""
    value = _value(facts, name)
    if value is None or not value.isascii() or not all(p.isdigit() for p in value.split(".")):
        return None
    return value if all(_decimal(p) is not None for p in value.split(".")) else None


def host_driver(facts: Facts) -> Driver:
    """The host driver as the runtime reads it: NVML's driver version and the CUDA version NVML reports
    for it (driver.max_cuda, what driver.c asks NVML for), never a CUDA library inside the image."""
    return Driver(_version(facts, "driver.version"), _version(facts, "driver.max_cuda"))


def host_gpus(facts: Facts, indices: Optional[Iterable[int]] = None) -> list[Gpu]:
    """The GPUs NVML lists (or those of `indices`), as Gpu."""
    chosen = range(facts.count("gpus")) if indices is None else indices
    return [
        Gpu(_value(facts, f"gpus[{i}].brand"), _version(facts, f"gpus[{i}].compute_capability"))
        for i in chosen
    ]


def input_reason(facts: Facts, name: str) -> str:
    """Why an input fact judges nothing: its unknown reason, or its value's."""
    fact = facts.get(name)
    return fact.unknown or f"{fact.value!r} is not a version"


def input_fact(name: Any) -> str:
    """The fact behind an unknown input judge() reports: "cuda", "driver", ("arch", 0), ("brand", 0)."""
    if isinstance(name, str):
        return {"cuda": "driver.max_cuda", "driver": "driver.version"}.get(name, name)
    kind, index = name
    return f"gpus[{index}].{'compute_capability' if kind == 'arch' else 'brand'}"


def judge_on_host(
    requirements: Sequence[str], facts: Facts, indices: Optional[Iterable[int]] = None
) -> Verdict:
    """judge() on the host's driver and its GPUs (all NVML lists, or those of `indices`). When the number
    of GPUs is unknown, the verdict must be the same with no GPU and with a GPU of unknown brand and arch."""
    driver = host_driver(facts)
    if indices is None and not facts.get("gpus.count").known:
        bare = judge(requirements, [], driver)
        some = judge(requirements, [Gpu(None, None)], driver)
        if bare.status is not None and bare.status == some.status:
            return bare if bare.status != MET else Verdict(MET)
        return Verdict(None, unknown=("gpus.count",))
    return judge(requirements, host_gpus(facts, indices), driver)


def satisfied(expr: str, facts: Facts) -> tuple[Optional[bool], dict[str, str]]:
    """Whether the runtime admits `expr` on this host's GPUs (the rule language's `nvidia_require`,
    container/operator.py): True, False when it refuses it (not met, or invalid), None when unknown facts
    decide; those facts and why each is unknown. Besides each GPU's brand and compute capability it reads
    operator.READS."""
    verdict = judge_on_host([expr], facts)
    if verdict.status is not None:
        return verdict.status == MET, {}
    names = [input_fact(u) for u in verdict.unknown]
    return None, {n: input_reason(facts, n) for n in names}
