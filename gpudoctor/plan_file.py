"""Saved plans: the plan's JSON (docs/plans.md) with the basis it was made from and a digest.

`gpudoctor plan -o plan.json` (or `plan --format json`) writes one; `gpudoctor fix --plan plan.json` applies
exactly its steps, and only on the host and environment it was made for: like a saved Terraform plan, it
is refused when the facts it was made from have changed since. Those facts are its **basis**: the target
interpreter and its installer, the frameworks installed there (version, build, CUDA), the driver, each
GPU's model and compute capability, and which rules fired with a fix. The **digest** is the sha256 of the
basis and the steps, so a plan file edited by hand (or by anyone else) is refused as well.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Optional

from .plan import KIND_RISK, RISKS, FixPlan, PlanStep

MAX_BYTES = 1 << 20
SCHEMA = "gpudoctor.plan"
SCHEMA_VERSION = 1


class PlanFileError(Exception):
    pass


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def basis(findings: list, facts: Any) -> dict[str, Any]:
    """The facts a plan was made from (see the module's docstring)."""
    frameworks = [
        " ".join(
            str(facts.value(f"frameworks[{i}].{k}") or "?") for k in ("name", "version", "build", "cuda")
        )
        for i in range(facts.count("frameworks"))
    ]
    gpus = [
        f"{facts.value(f'gpus[{i}].name') or '?'} {facts.value(f'gpus[{i}].compute_capability') or '?'}"
        for i in range(facts.count("gpus"))
    ]
    return {
        "python": {
            k: _text(facts.value(f"python.{k}")) for k in ("executable", "version", "installer", "machine")
        },
        "frameworks": sorted(frameworks),
        "driver": {k: _text(facts.value(f"driver.{k}")) for k in ("version", "max_cuda")},
        "gpus": gpus,
        "findings": sorted(
            {f.rule.id + ("" if f.item is None else f"[{f.item}]") for f in findings if f.fix}
        ),
    }


def _step_core(step: dict[str, Any]) -> dict[str, Any]:
    return {k: step[k] for k in ("kind", "risk", "argv", "text", "rules")}


def digest(data: dict[str, Any]) -> str:
    """The sha256 of a plan's basis, target and steps, as canonical JSON."""
    core = {
        "basis": data["basis"],
        "python": data["python"],
        "steps": [_step_core(s) for s in data["steps"]],
    }
    return hashlib.sha256(json.dumps(core, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def seal(data: dict[str, Any], plan_basis: dict[str, Any]) -> dict[str, Any]:
    """The plan's JSON data with its basis and digest."""
    data = dict(data, basis=plan_basis)
    data["digest"] = digest(data)
    return data


@dataclass(frozen=True)
class SavedPlan:
    plan: FixPlan
    basis: dict[str, Any]
    digest: str


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanFileError(f"{where} must be a list of strings")
    return tuple(value)


def _step(n: int, raw: Any) -> PlanStep:
    where = f"steps[{n}]"
    if not isinstance(raw, dict):
        raise PlanFileError(f"{where} must be an object")
    for key in ("kind", "risk", "argv", "text", "rules"):
        if key not in raw:
            raise PlanFileError(f"{where} has no {key!r}")
    kind, risk = raw["kind"], raw["risk"]
    if kind not in KIND_RISK or risk not in RISKS:
        raise PlanFileError(f"{where}: kind {kind!r} with risk {risk!r} is not a step kind gpudoctor writes")
    if not isinstance(raw["text"], str):
        raise PlanFileError(f"{where}.text must be a string")
    return PlanStep(
        kind,
        _str_list(raw["argv"], f"{where}.argv"),
        raw["text"],
        risk,
        _str_list(raw["rules"], f"{where}.rules"),
        _str_list(raw.get("why", []), f"{where}.why"),
        raw.get("resolver") or "",
        bool(raw.get("minor_compat", False)),
        _str_list(raw.get("reasons", []), f"{where}.reasons"),
        _str_list(raw.get("notes", []), f"{where}.notes"),
    )


def load(path: str) -> SavedPlan:
    """Read and check a saved plan; PlanFileError says what is wrong with it."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise PlanFileError(f"cannot read {path}: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise PlanFileError(f"{path} is larger than {MAX_BYTES} bytes: not a plan gpudoctor wrote")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise PlanFileError(f"{path} is not JSON: {e}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise PlanFileError(f"{path} is not a gpudoctor plan (schema {SCHEMA!r})")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise PlanFileError(
            f"{path} has plan schema version {data.get('schema_version')!r}; this gpudoctor reads 1"
        )
    for key in ("basis", "digest", "python", "steps"):
        if key not in data:
            raise PlanFileError(f"{path} has no {key!r}: write it with `gpudoctor plan -o FILE`")
    if not isinstance(data["steps"], list) or not isinstance(data["python"], dict):
        raise PlanFileError(f"{path}: steps must be a list and python an object")
    try:
        expected = digest(data)
    except (KeyError, TypeError) as e:
        raise PlanFileError(f"{path}: a step lacks {e}") from None
    if data["digest"] != expected:
        raise PlanFileError(f"{path} was changed after gpudoctor wrote it (its digest does not match)")
    steps = tuple(_step(n, s) for n, s in enumerate(data["steps"]))
    python = data["python"].get("executable")
    installer = data["python"].get("installer")
    plan = FixPlan(steps, _str_list(data.get("notes", []), "notes"), python, installer)
    return SavedPlan(plan, data["basis"], data["digest"])


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else k))
        return out
    return {prefix: tree}


def changed(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between a saved plan's basis and the current one, one line each."""
    a, b = _flat(saved), _flat(now)
    return [
        f"{k}: was {a.get(k)!r}, now {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)
    ]
