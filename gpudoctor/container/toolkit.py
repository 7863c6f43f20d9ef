"""What the NVIDIA Container Toolkit does with an image's environment before nvidia-container-cli judges its
requirements (nvidia-container-toolkit v1.20: internal/config/image/cuda_image.go and devices.go, and
cmd/nvidia-container-runtime-hook).

- A container asks for GPUs through NVIDIA_VISIBLE_DEVICES: unset, empty or `void` is not a GPU container
  and nothing is checked (a legacy image with the variable unset gets `all`); `none` is a GPU container
  with no GPU, judged once with no visible GPU.
- The requirements are the values of every variable named NVIDIA_REQUIRE_*, except NVIDIA_REQUIRE_JETPACK*.
  A legacy image (CUDA_VERSION set, NVIDIA_REQUIRE_CUDA empty or unset) adds `cuda>=MAJOR.MINOR` of its
  CUDA_VERSION, which must be a semantic version (golang.org/x/mod/semver): one that is not stops the
  container.
- NVIDIA_DISABLE_REQUIRE, read with Go's strconv.ParseBool, turns every check off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

REQUIRE_PREFIX = "NVIDIA_REQUIRE_"
JETPACK_PREFIX = "NVIDIA_REQUIRE_JETPACK"
CUDA_VERSION = "CUDA_VERSION"
REQUIRE_CUDA = "NVIDIA_REQUIRE_CUDA"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
_UINT32_MAX = 2**32 - 1


def is_legacy(env: Mapping[str, str]) -> bool:
    """IsLegacy: CUDA_VERSION is set and not empty, NVIDIA_REQUIRE_CUDA is empty or unset."""
    return bool(env.get(CUDA_VERSION)) and not env.get(REQUIRE_CUDA)


# --- golang.org/x/mod/semver, as far as parseMajorMinorVersion uses it -----------------------------------


def _int(text: str) -> tuple[Optional[str], str]:
    """semver's parseInt: a run of digits without a leading zero (0 itself is fine), and the rest."""
    end = 0
    while end < len(text) and text[end].isdigit() and text[end].isascii():
        end += 1
    if end == 0 or (text[0] == "0" and end != 1):
        return None, text
    return text[:end], text[end:]


def _ident_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


def _dotted(text: str, numbers_strict: bool) -> bool:
    """A pre-release (numbers_strict: no numeric identifier with a leading zero) or build suffix, without
    its leading '-' or '+': dot-separated non-empty identifiers of [0-9A-Za-z-]."""
    for ident in text.split("."):
        if not ident or not all(_ident_char(c) for c in ident):
            return False
        if numbers_strict and ident.isdigit() and len(ident) > 1 and ident[0] == "0":
            return False
    return True


def semver_major_minor(version: str) -> tuple[Optional[str], str]:
    """parseMajorMinorVersion: ("13.0", "") for "13.0.2", ("12.0", "") for "v12"; (None, the toolkit's
    reason) for what it rejects."""
    major_minor = _semver_major_minor(version)
    if major_minor is None:
        return None, "invalid version string"
    major, minor = major_minor.split(".")
    if int(major) > _UINT32_MAX:
        return None, "invalid major version"
    if int(minor) > _UINT32_MAX:
        return None, "invalid minor version"
    return major_minor, ""


def _semver_major_minor(version: str) -> Optional[str]:
    rest = version[1:] if version.startswith("v") else version
    numbers: list[str] = []
    while len(numbers) < 3:  # MAJOR[.MINOR[.PATCH]], a missing MINOR being 0
        number, rest = _int(rest)
        if number is None:
            return None
        numbers.append(number)
        if not rest:
            return f"{numbers[0]}.{numbers[1] if len(numbers) > 1 else '0'}"
        if len(numbers) < 3:
            if rest[0] != ".":
                return None
            rest = rest[1:]
    # After all three numbers only a -pre-release and a +build may follow.
    if "+" in rest:
        rest, build = rest.split("+", 1)
        if not _dotted(build, numbers_strict=False):
            return None
    if rest and (rest[0] != "-" or not _dotted(rest[1:], numbers_strict=True)):
        return None
    return f"{numbers[0]}.{numbers[1]}"


# --- the requirements and the device request ------------------------------------------------------------


def requirements(env: Mapping[str, str], disabled: bool) -> tuple[list[tuple[str, str]], Optional[str]]:
    """([(variable, expression), ...] in the order gpudoctor reports them, error): GetRequirements. Go visits
    the variables in no set order; they are ANDed, so only which failure is named first can differ. The
    legacy CUDA_VERSION requirement comes last, as it does there. The error is the hook's message when
    CUDA_VERSION cannot be read, which stops the container."""
    if disabled:
        return [], None
    found = [
        (name, value)
        for name, value in sorted(env.items())
        if name.startswith(REQUIRE_PREFIX) and not name.startswith(JETPACK_PREFIX)
    ]
    if is_legacy(env):
        version = env[CUDA_VERSION]
        major_minor, why = semver_major_minor(version)
        if major_minor is None:
            why = f"invalid CUDA version {version}: {why}"
            return found, f"failed to get requirements failed to get version: {why}"
        found.append((CUDA_VERSION, f"cuda>={major_minor}"))
    return found, None


def requested_devices(env: Mapping[str, str]) -> Optional[list[str]]:
    """The devices the container asks for (devicesFromEnvvars and NewVisibleDevices): None when it is not a
    GPU container, [] for `none` (a GPU container with no GPU), ["all"], or the ids as listed."""
    value = env.get(VISIBLE_DEVICES)
    devices = [d.strip() for d in value.split(",") if d.strip()] if value is not None else []
    if value is None and is_legacy(env):
        devices = ["all"]
    if not devices or "void" in devices:
        return None
    for d in devices:
        if d == "all":
            return ["all"]
        if d == "none":
            return []
    return devices
