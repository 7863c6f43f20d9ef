"""Container facts: whether this runs in a container, under which runtime, and the NVIDIA_* variables
that tell the NVIDIA container toolkit which GPUs, driver features and CUDA version the image wants."""

from __future__ import annotations

from typing import Any, Optional

from ..facts import Fact, known, unknown
from ..host.base import NO_PERMISSION, NOT_FOUND, HostError

CGROUP = "/proc/1/cgroup"
CONTAINERENV = "/run/.containerenv"
# Substrings of a cgroup path, most specific first: a Kubernetes pod's path also names its runtime.
_CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)
_TRUE = ("1", "true", "yes")


# --- pure parsers --------------------------------------------------------------------------------------


def parse_cgroup_runtime(text: str) -> Optional[str]:
    """The runtime /proc/1/cgroup names (v1 "12:memory:/docker/<id>", v2 "0::/..."), or None."""
    paths = [line.split(":", 2)[2] for line in text.splitlines() if line.count(":") >= 2]
    for marker, runtime in _CGROUP_MARKERS:
        if any(marker in p for p in paths):
            return runtime
    return None


def parse_flag(value: str) -> bool:
    return value.strip().lower() in _TRUE


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
    return value, unknown("not set", source) if value is None else known(value, source)


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


def probe(host: Any) -> dict[str, Fact]:
    facts = _runtime_facts(host)
    facts["container.nvidia_require_cuda"] = _env(host, "NVIDIA_REQUIRE_CUDA")[1]
    raw, fact = _env(host, "NVIDIA_DISABLE_REQUIRE")
    facts["container.nvidia_disable_require"] = fact if raw is None else known(parse_flag(raw), fact.source)
    facts["container.nvidia_visible_devices"] = _env(host, "NVIDIA_VISIBLE_DEVICES")[1]
    facts["container.nvidia_driver_capabilities"] = _env(host, "NVIDIA_DRIVER_CAPABILITIES")[1]
    return facts
