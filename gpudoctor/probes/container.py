"""Container facts: whether this runs in a container, under which runtime, the NVIDIA_* variables that tell
the NVIDIA Container Toolkit which GPUs, driver features and CUDA version the image wants, and the toolkit's
own configuration where this host has one (/etc/nvidia-container-runtime/config.toml)."""

from __future__ import annotations

from typing import Any, Optional

from ..facts import Fact, FactSpec, known, unknown
from ..host.base import NO_PERMISSION, NOT_FOUND, HostError
from . import EVERY_PROFILE, ProbeSpec

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("container.detected", "bool", "", "running inside a container"),
    FactSpec("container.runtime", "str", "", "docker, podman, kubernetes, containerd, lxc, or none"),
    FactSpec("container.nvidia_require_cuda", "str", "", "NVIDIA_REQUIRE_CUDA as the image declares it"),
    FactSpec(
        "container.nvidia_requires",
        "list[str]",
        "",
        "every NVIDIA_REQUIRE_* variable (JETPACK ones too) as NAME=value: NVIDIA_REQUIRE_CUDA=cuda>=13.0",
    ),
    FactSpec("container.cuda_version", "str", "", "CUDA_VERSION as the image declares it, e.g. 13.0.2"),
    FactSpec(
        "container.nvidia_disable_require",
        "bool",
        "",
        "NVIDIA_DISABLE_REQUIRE is true as Go's strconv.ParseBool reads it (1 t T TRUE true True); any other "
        "value leaves the checks on",
    ),
    FactSpec("container.nvidia_visible_devices", "str", "", "NVIDIA_VISIBLE_DEVICES"),
    FactSpec("container.nvidia_driver_capabilities", "str", "", "NVIDIA_DRIVER_CAPABILITIES"),
    FactSpec(
        "container.toolkit_mode",
        "str",
        "",
        "the NVIDIA Container Toolkit's runtime mode ([nvidia-container-runtime] mode of "
        "/etc/nvidia-container-runtime/config.toml; auto when unset): legacy, cdi, jit-cdi, csv, auto",
    ),
    FactSpec(
        "container.toolkit_disable_require",
        "bool",
        "",
        "disable-require in the toolkit's config.toml: the hook checks no requirement",
    ),
    FactSpec(
        "container.require_verdict",
        "str",
        "",
        "derived: the NVIDIA container runtime's legacy check of the NVIDIA_REQUIRE_* requirements on this "
        "host's driver and GPUs: not required, disabled, not a GPU container, met, unmet, invalid",
    ),
    FactSpec(
        "container.require_failed", "str", "", "derived: the requirement that is refused, as NAME=value"
    ),
    FactSpec(
        "container.require_gpu",
        "str",
        "",
        "derived: the GPU it is refused on, with the brand and arch the runtime compares (its sixteen brand "
        "names since release 1.9.0: Tesla, Nvidia, NvidiaRTX, ...; any other brand is Unknown to it)",
    ),
    FactSpec("container.require_error", "str", "", "derived: the runtime's error message"),
    FactSpec(
        "container.require_cuda",
        "version",
        "",
        "derived: the CUDA version the refused requirement asks of the driver (its highest cuda>= or cuda> "
        "bound), e.g. 13.1; unknown when it asks none (a brand or driver condition refused it)",
    ),
    FactSpec(
        "container.require_enforcement",
        "str",
        "",
        "derived: which NVIDIA Container Toolkit mode refuses an unmet requirement, as this host shows it",
    ),
)
PROBE = ProbeSpec("container", profiles=EVERY_PROFILE)

CGROUP = "/proc/1/cgroup"
CONTAINERENV = "/run/.containerenv"
TOOLKIT_CONFIG = "/etc/nvidia-container-runtime/config.toml"
REQUIRE_PREFIX = "NVIDIA_REQUIRE_"
NOT_SET = "not set"  # the unknown reason of an environment variable that is unset
# Substrings of a cgroup path, most specific first: a Kubernetes pod's path also names its runtime.
_CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)
# Go's strconv.ParseBool, which the toolkit reads NVIDIA_DISABLE_REQUIRE with; anything else is an error
# there, and the toolkit then leaves the checks on.
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


# --- pure parsers --------------------------------------------------------------------------------------


def parse_cgroup_runtime(text: str) -> Optional[str]:
    """The runtime /proc/1/cgroup names (v1 "12:memory:/docker/<id>", v2 "0::/..."), or None."""
    paths = [line.split(":", 2)[2] for line in text.splitlines() if line.count(":") >= 2]
    for marker, runtime in _CGROUP_MARKERS:
        if any(marker in p for p in paths):
            return runtime
    return None


def parse_go_bool(value: str) -> Optional[bool]:
    """strconv.ParseBool: True or False for the twelve spellings it accepts, None for anything else
    ("yes", " true", "tRuE")."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    return None


def parse_toolkit_config(text: str) -> tuple[str, bool]:
    """(the runtime mode, disable-require) of the toolkit's config.toml: `mode` of the
    [nvidia-container-runtime] table ("auto" when unset, the toolkit's default), and the top-level
    `disable-require` (false when unset). ValueError when it is not TOML of that shape."""
    from ..toml_reader import toml

    data = toml().loads(text)
    runtime = data.get("nvidia-container-runtime", {})
    mode = runtime.get("mode", "auto") if isinstance(runtime, dict) else None
    disable = data.get("disable-require", False)
    if not isinstance(mode, str) or not isinstance(disable, bool):
        raise ValueError("mode is not a string or disable-require not a boolean")
    return mode, disable


def detect_runtime(
    dockerenv: bool,
    containerenv: bool,
    kubernetes_env: Optional[str],
    container_env: Optional[str],
    cgroup: Optional[str],
) -> Optional[tuple[str, str]]:
    """(runtime, the evidence) from the signals each runtime leaves, or None when none is seen.

    A pod is reported as kubernetes whatever runs its containers: that is where its limits are set."""
    by_cgroup = parse_cgroup_runtime(cgroup) if cgroup is not None else None
    if kubernetes_env:
        return "kubernetes", "env:KUBERNETES_SERVICE_HOST"
    if by_cgroup == "kubernetes":
        return "kubernetes", CGROUP
    if containerenv:
        return "podman", CONTAINERENV
    if container_env == "podman":
        return "podman", "env:container"
    if dockerenv:
        return "docker", "/.dockerenv"
    if container_env == "docker":
        return "docker", "env:container"
    if by_cgroup:
        return by_cgroup, CGROUP
    if container_env:
        # systemd's `container` variable: "lxc", "oci", "systemd-nspawn", ... named as given.
        return container_env, "env:container"
    return None


# --- probe ---------------------------------------------------------------------------------------------


def _env(host: Any, name: str) -> tuple[Optional[str], Fact]:
    """The raw value, and its fact (unknown "not set" when absent)."""
    source = f"env:{name}"
    try:
        value = host.env(name)
    except HostError as e:
        return None, unknown(e.reason, source)
    return value, unknown(NOT_SET, source) if value is None else known(value, source)


def _runtime_facts(host: Any) -> dict[str, Fact]:
    # Reasons a signal could not be checked, other than its simply not being there: with any of these,
    # finding nothing does not show there is no container.
    failures: list[tuple[str, str]] = []
    try:
        dockerenv = ".dockerenv" in host.listdir("/")
    except HostError as e:
        dockerenv = False
        failures.append((e.reason, "/"))
    try:
        host.read(CONTAINERENV)
        containerenv = True
    except HostError as e:
        # Unreadable is still there; podman may make it root-only.
        containerenv = e.reason == NO_PERMISSION
        if e.reason not in (NOT_FOUND, NO_PERMISSION):
            failures.append((e.reason, CONTAINERENV))
    try:
        cgroup: Optional[str] = host.read(CGROUP)
    except HostError as e:
        cgroup = None
        if e.reason != NOT_FOUND:
            failures.append((e.reason, CGROUP))
    kubernetes_env, _ = _env(host, "KUBERNETES_SERVICE_HOST")
    container_env, _ = _env(host, "container")

    found = detect_runtime(dockerenv, containerenv, kubernetes_env, container_env, cgroup)
    if found is not None:
        runtime, source = found
        return {"container.detected": known(True, source), "container.runtime": known(runtime, source)}
    if failures:
        reason, source = failures[0]
        return {"container.detected": unknown(reason, source), "container.runtime": unknown(reason, source)}
    source = f"/, {CONTAINERENV}, {CGROUP}, env:KUBERNETES_SERVICE_HOST, env:container"
    return {"container.detected": known(False, source), "container.runtime": known("none", source)}


def _requires(host: Any) -> Fact:
    """Every NVIDIA_REQUIRE_* variable, as NAME=value."""
    source = f"env:{REQUIRE_PREFIX}*"
    try:
        names = host.env_names(REQUIRE_PREFIX)
        values = [(name, host.env(name)) for name in names]
    except HostError as e:
        return unknown(e.reason, source)
    return known([f"{name}={value}" for name, value in values if value is not None], source)


def _toolkit_facts(host: Any) -> dict[str, Fact]:
    try:
        text = host.read(TOOLKIT_CONFIG)
    except HostError as e:
        gone = unknown(e.reason, TOOLKIT_CONFIG)
        return {"container.toolkit_mode": gone, "container.toolkit_disable_require": gone}
    try:
        mode, disable = parse_toolkit_config(text)
    except ValueError as e:
        bad = unknown(f"unreadable: {str(e)[:80]}", TOOLKIT_CONFIG)
        return {"container.toolkit_mode": bad, "container.toolkit_disable_require": bad}
    return {
        "container.toolkit_mode": known(mode, TOOLKIT_CONFIG),
        "container.toolkit_disable_require": known(disable, TOOLKIT_CONFIG),
    }


def probe(host: Any) -> dict[str, Fact]:
    facts = _runtime_facts(host)
    facts["container.nvidia_require_cuda"] = _env(host, "NVIDIA_REQUIRE_CUDA")[1]
    facts["container.nvidia_requires"] = _requires(host)
    facts["container.cuda_version"] = _env(host, "CUDA_VERSION")[1]
    raw, fact = _env(host, "NVIDIA_DISABLE_REQUIRE")
    # A spelling ParseBool refuses leaves the checks on: known False, as the toolkit reads it.
    disable = fact if raw is None else known(parse_go_bool(raw) is True, fact.source)
    facts["container.nvidia_disable_require"] = disable
    facts["container.nvidia_visible_devices"] = _env(host, "NVIDIA_VISIBLE_DEVICES")[1]
    facts["container.nvidia_driver_capabilities"] = _env(host, "NVIDIA_DRIVER_CAPABILITIES")[1]
    facts.update(_toolkit_facts(host))
    return facts
