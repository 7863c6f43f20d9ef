"""The derived container.require_* facts: what the NVIDIA container runtime's legacy check answers for this
environment's NVIDIA_REQUIRE_* requirements on this host, and where that check runs.

    container.require_verdict      not required | disabled | not a GPU container | met | unmet | invalid
    and, when it is unmet or invalid:
    container.require_failed       the variable that refuses, as NAME=value
    container.require_gpu          the GPU it is refused on, with the brand and arch the runtime compares
    container.require_error        the runtime's message
    container.require_enforcement  which toolkit mode refuses it, as far as this host shows

toolkit.py says which requirements the toolkit passes, require.py how nvidia-container-cli judges them.
"""

from __future__ import annotations

from typing import Any, Optional

from ..facts import Fact, Facts, known, unknown
from ..probes.container import NOT_SET, TOOLKIT_CONFIG
from . import require as dsl
from . import toolkit

INPUTS = (
    "container.nvidia_requires",
    "container.cuda_version",
    "container.nvidia_disable_require",
    "container.nvidia_visible_devices",
)
_UNCHECKED = "not checked at start; the CUDA runtime inside fails at its first call instead"
_MODES = {
    "legacy": "legacy mode ({where}): `docker run --gpus` and `--runtime=nvidia` both refuse it",
    "auto": (
        "auto mode ({where}): `docker run --gpus` refuses it (the hook resolves auto to legacy); "
        "`--runtime=nvidia` resolves auto to jit-cdi from toolkit 1.18, which does not check, and to legacy "
        "before"
    ),
    "cdi": "cdi mode ({where}): " + _UNCHECKED,
    "jit-cdi": "jit-cdi mode ({where}): " + _UNCHECKED,
    "csv": (
        "csv mode ({where}, Jetson): the toolkit's own evaluator judges it, with rules of its own (cuda and "
        "the first GPU's arch only)"
    ),
}
_IN_CONTAINER = (
    "this container is running, so what started it did not refuse it: a runtime in cdi or jit-cdi mode "
    "(nvidia-container-runtime's default from toolkit 1.18), the check disabled, or devices passed by "
    "hand; `docker run --gpus` and legacy mode refuse it, and the CUDA runtime inside fails at its first "
    "call"
)
_NO_CONFIG = (
    "no toolkit configuration here ({why}); legacy mode refuses it: `docker run --gpus`, and "
    "`--runtime=nvidia` before toolkit 1.18"
)


def enforcement(in_container: Optional[bool], mode: Fact) -> str:
    """Which toolkit mode refuses a container whose requirements are not met, as this host shows it."""
    if in_container:
        return _IN_CONTAINER
    if not mode.known:
        return _NO_CONFIG.format(why=f"{TOOLKIT_CONFIG}: {mode.unknown}")
    text = _MODES.get(str(mode.value), "{mode} mode ({where}): a mode gpudoctor does not know")
    return text.format(where=TOOLKIT_CONFIG, mode=mode.value)


def _env(facts: Facts) -> tuple[Optional[dict[str, str]], Optional[tuple[str, str]]]:
    """The image environment the toolkit reads, or (None, (the fact, why)) when part of it is unknown."""
    env: dict[str, str] = {}
    requires = facts.get("container.nvidia_requires")
    if not requires.known:
        return None, ("container.nvidia_requires", requires.unknown or "unknown")
    for item in requires.value:
        name, _, value = str(item).partition("=")
        env[name] = value
    for fact_name, var in (
        ("container.cuda_version", toolkit.CUDA_VERSION),
        ("container.nvidia_visible_devices", toolkit.VISIBLE_DEVICES),
    ):
        fact = facts.get(fact_name)
        if fact.known:
            env[var] = str(fact.value)
        elif fact.unknown != NOT_SET:
            return None, (fact_name, fact.unknown or "unknown")
    return env, None


def _disabled(facts: Facts) -> tuple[Optional[bool], Optional[tuple[str, str]]]:
    image = facts.get("container.nvidia_disable_require")
    if image.known and image.value is True:
        return True, None
    config = facts.get("container.toolkit_disable_require")
    if config.known and config.value is True:
        return True, None
    if not image.known and image.unknown != NOT_SET:
        return None, ("container.nvidia_disable_require", image.unknown or "unknown")
    return False, None


def _visible(facts: Facts, devices: list[str]) -> tuple[Optional[list[int]], Optional[str]]:
    """The indices of the GPUs the requirements are judged on (None: every GPU NVML lists), or why they
    cannot be told. Inside a container NVML lists the GPUs it was given; on the host, NVIDIA_VISIBLE_DEVICES
    picks them by index or UUID."""
    if devices == ["all"] or facts.get("container.detected").value is not False:
        return None, None
    count = facts.get("gpus.count")
    if not count.known:
        return None, None
    uuids = [str(facts.get(f"gpus[{i}].uuid").value) for i in range(count.value)]
    chosen: list[int] = []
    for d in devices:
        if d.isdigit() and int(d) < count.value:
            chosen.append(int(d))
        elif d in uuids:
            chosen.append(uuids.index(d))
        else:
            return None, f"NVIDIA_VISIBLE_DEVICES names {d!r}, which is no GPU gpudoctor sees here"
    return chosen, None


def _where(verdict: dsl.Verdict, facts: Facts, indices: Optional[list[int]]) -> str:
    if verdict.gpu is None:
        return "no visible GPU (arch and brand constraints hold)"
    index = verdict.gpu if indices is None else indices[verdict.gpu]
    gpu = dsl.host_gpus(facts, [index])[0]
    brand = dsl.container_brand(gpu.brand) if gpu.brand is not None else "unknown"
    return f"GPU {index} (brand {brand}, arch {gpu.arch or 'unknown'})"


def derive(facts: Facts) -> dict[str, Fact]:
    """The container.require_* facts (all unknown, with the first reason, when an input is)."""
    source = "derived:" + ", ".join(INPUTS + ("driver.version", "driver.max_cuda", "gpus[]"))
    out: dict[str, Any] = {}

    def verdict(value: Optional[str], why: str = "") -> dict[str, Fact]:
        out["container.require_verdict"] = known(value, source) if value else unknown(why, source)
        if value in (dsl.UNMET, dsl.INVALID):
            detected = facts.get("container.detected")
            where = enforcement(
                detected.value if detected.known else None, facts.get("container.toolkit_mode")
            )
            out["container.require_enforcement"] = known(where, source)
        return out

    env, missing = _env(facts)
    if env is None:
        return verdict(None, f"{missing[0]}: {missing[1]}")
    disabled, missing = _disabled(facts)
    if disabled is None:
        return verdict(None, f"{missing[0]}: {missing[1]}")
    requirements, error = toolkit.requirements(env, disabled=False)
    if not requirements and not toolkit.is_legacy(env):
        return verdict("not required")
    if disabled:
        return verdict("disabled")
    devices = toolkit.requested_devices(env)
    if devices is None:
        return verdict("not a GPU container")
    if error is not None:
        out["container.require_failed"] = known(f"CUDA_VERSION={env[toolkit.CUDA_VERSION]}", source)
        out["container.require_gpu"] = known(
            "no GPU (the hook stops before nvidia-container-cli runs)", source
        )
        out["container.require_error"] = known(error, source)
        return verdict(dsl.INVALID)
    indices, why = _visible(facts, devices) if devices else ([], None)
    if why is not None:
        return verdict(None, why)
    exprs = [expr for _, expr in requirements]
    result = dsl.judge_on_host(exprs, facts, indices)
    if result.status is None:
        name = dsl.input_fact(result.unknown[0])
        return verdict(None, f"{name}: {dsl.input_reason(facts, name)}")
    if result.status != dsl.MET:
        variable = next(n for n, e in requirements if e == result.requirement)
        if variable == toolkit.CUDA_VERSION:  # the legacy requirement the toolkit makes of CUDA_VERSION
            failed = f"{result.requirement} (from CUDA_VERSION={env[toolkit.CUDA_VERSION]})"
        else:
            failed = f"{variable}={result.requirement}"
        out["container.require_failed"] = known(failed, source)
        out["container.require_gpu"] = known(_where(result, facts, indices), source)
        out["container.require_error"] = known(f"requirement error: {result.error}", source)
        cuda = required_cuda(result.requirement)
        out["container.require_cuda"] = (
            known(cuda, source) if cuda else unknown("the refused requirement asks no CUDA version", source)
        )
    return verdict(result.status)


def required_cuda(requirement: str) -> Optional[str]:
    """The highest CUDA version a requirement's `cuda>=` or `cuda>` constraints name ("cuda>=12.4
    brand=tesla,driver>=470" -> "12.4"); None when it names none."""
    import re

    found = re.findall(r"\bcuda\s*>=?\s*([0-9]+(?:\.[0-9]+)*)", requirement)
    return max(found, key=lambda v: tuple(int(p) for p in v.split(".")), default=None)
