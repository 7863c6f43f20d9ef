"""The machine a lockfile is judged for, and whether an entry's environment marker or wheel holds there.

A universal lock (uv.lock, pylock.toml, a poetry.lock) holds the entries of every platform it was locked
for: torch +cpu for macOS beside torch +cu124 for Linux, the nvidia-* wheels for Linux x86_64 only. Only
those whose markers hold for the target are judged. The Python version may be unknown (""): a marker that
holds for some Python is then kept, since nothing rules it out.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple, Optional

from .model import LockError

# sys.platform -> (os_name, platform_system)
PLATFORMS = {"linux": ("posix", "Linux"), "darwin": ("posix", "Darwin"), "win32": ("nt", "Windows")}
# The Pythons a marker is tried with when the target's is not known.
PYTHONS = tuple(f"3.{minor}" for minor in range(8, 16))


class Target(NamedTuple):
    platform: str  # sys.platform: linux, darwin, win32
    machine: str  # os.uname().machine: x86_64, aarch64, arm64
    python: str  # "3.11", "3.11.7" or "" (unknown)


def target(platform: str, machine: str, python: str) -> Target:
    platform = {"windows": "win32", "macos": "darwin", "osx": "darwin"}.get(
        platform.lower(), platform.lower()
    )
    if platform not in PLATFORMS:
        raise LockError(f"unknown platform {platform!r}: one of {', '.join(PLATFORMS)}")
    if python and not re.fullmatch(r"\d+\.\d+(\.\d+)?", python):
        raise LockError(f"not a Python version: {python!r} (e.g. 3.11)")
    return Target(platform, machine, python)


def environments(t: Target) -> list:
    """The marker environments of the target: one, or one per Python of PYTHONS when it is unknown."""
    os_name, system = PLATFORMS[t.platform]
    out = []
    for python in [t.python] if t.python else PYTHONS:
        short = ".".join(python.split(".")[:2])
        full = python if python.count(".") == 2 else f"{python}.0"
        out.append(
            {
                "os_name": os_name,
                "sys_platform": t.platform,
                "platform_system": system,
                "platform_machine": t.machine,
                "platform_release": "",
                "platform_version": "",
                "platform_python_implementation": "CPython",
                "implementation_name": "cpython",
                "implementation_version": full,
                "python_version": short,
                "python_full_version": full,
                "extra": "",
            }
        )
    return out


@functools.lru_cache(maxsize=4096)
def marker_holds(marker: str, t: Target) -> bool:
    """Whether a PEP 508 environment marker holds on the target (for some Python, when it is unknown).
    A marker packaging cannot read raises LockError with the reason. Remembered: a lock repeats a few
    markers thousands of times."""
    if not str(marker or "").strip():
        return True
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    try:
        parsed = Marker(str(marker))
        return any(parsed.evaluate(env) for env in environments(t))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName) as e:
        raise LockError(f"marker not understood: {marker!r}: {str(e).splitlines()[0]}") from None


# A wheel's platform tag -> the sys.platform it installs on.
_PLATFORM_TAGS = (
    ("manylinux", "linux"),
    ("musllinux", "linux"),
    ("linux", "linux"),
    ("macosx", "darwin"),
    ("win", "win32"),
)
# Machine names in wheel tags and in os.uname() that mean the same architecture.
_SAME_MACHINE = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def _machine(name: str) -> str:
    return _SAME_MACHINE.get(name.lower(), name.lower())


def _fits(tag: str, t: Target) -> bool:
    if tag == "any":
        return True
    system = next((s for prefix, s in _PLATFORM_TAGS if tag.startswith(prefix)), None)
    if system != t.platform:
        return False
    m = re.search(r"(x86_64|aarch64|arm64|amd64|i686|ppc64le|s390x|armv7l|universal2|win32)$", tag)
    if m is None:
        return True  # a platform tag without a machine gpudoctor knows: not ruled out
    if m.group(1) == "universal2":
        return _machine(t.machine) in ("x86_64", "aarch64")
    return _machine(m.group(1)) == _machine(t.machine)


def wheel_misfit(filename: str, t: Target) -> Optional[str]:
    """Why the wheel `filename` does not install on the target, or None when it does or its tags cannot be
    read: its platform tag names another OS or machine, or its Python tag (cp310) another Python."""
    name = filename.rsplit("/", 1)[-1].split("#", 1)[0]
    if not name.endswith(".whl"):
        return None
    parts = name[:-4].split("-")
    if len(parts) < 5:
        return None
    python_tags, abi, platform_tags = parts[-3].split("."), parts[-2], parts[-1].split(".")
    if not any(_fits(tag, t) for tag in platform_tags):
        return f"wheel {name} is for {parts[-1]}, not {t.platform} {t.machine}"
    if t.python:
        wanted = "cp" + "".join(t.python.split(".")[:2])
        exact = [tag for tag in python_tags if re.fullmatch(r"cp\d+", tag)]
        if exact and wanted not in exact and abi != "abi3":
            return f"wheel {name} is for Python {parts[-3]}, not {t.python}"
    return None
