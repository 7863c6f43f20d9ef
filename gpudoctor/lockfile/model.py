"""What a lockfile pins, read into one value: the interface every format's reader produces.

A lockfile is judged as if it were installed, before anything is: `read_lock` (lockfile/read.py) turns
any of the formats gpudoctor knows into a `Lock`, and `as_inspection` (lockfile/inspection.py) turns that
into the dump an installed environment's inspection gives, so the same probes judge both.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from ..toml_reader import toml

# A lockfile is text a person could review; one larger than this is refused rather than read.
MAX_BYTES = 32 * 1024 * 1024

FORMATS = ("uv.lock", "poetry.lock", "pylock.toml", "requirements.txt", "environment.yml", "conda-lock.yml")


class LockError(Exception):
    """The file is unreadable or not a lockfile gpudoctor knows; `reason` says why in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = " ".join(str(reason).split())


class Pin(NamedTuple):
    name: str  # normalised (PEP 503)
    version: str  # as pinned; with the local tag its index implies when the pin has none
    index: str  # the index or channel URL it comes from ("" when not recorded)
    requires: list  # its dependencies as "name==version" lines, versions as pinned in the same lock


class Lock(NamedTuple):
    path: str
    format: str  # one of FORMATS
    requires_python: str  # e.g. ">=3.10", or ""
    pins: list  # Pin, sorted by name: the entries that apply to the target
    skipped: list  # one line per entry that does not apply to the target or could not be read, with why


def normalise(name: str) -> str:
    """A project name as PEP 503 compares it: lower case, runs of - _ . as one -."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def read_text(path: str) -> str:
    """The file's text, refused when it is larger than MAX_BYTES, not a regular file or not UTF-8."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not os.path.isfile(path):
                raise LockError(f"{path}: not a regular file")
            # read(n) allocates n bytes before reading: ask for what the file holds, and one byte more to
            # see it grew past the limit since.
            data = f.read(min(size, MAX_BYTES) + 1)
    except OSError as e:
        raise LockError(f"{path}: cannot be read: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise LockError(f"{path}: larger than {MAX_BYTES // (1024 * 1024)} MiB; a lockfile is not")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise LockError(f"{path}: not UTF-8 text (byte {e.start})") from None


def load_toml(text: str, what: str) -> dict:
    """The TOML document's data; LockError when it is not TOML."""
    try:
        return toml().loads(text)
    except ValueError as e:  # TOMLDecodeError
        raise LockError(f"{what} is not valid TOML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise LockError(f"{what} nests too deeply") from None


def tables(data: dict, key: str, what: str) -> list:
    """data[key] as a list of tables ([] when absent); LockError when it is something else."""
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise LockError(f"{what}: {key} is not a list of tables")
    return value


def text_of(value: object) -> str:
    """A string field's value; "" for anything else (a lock may hold any TOML value anywhere)."""
    return value if isinstance(value, str) else ""


def entry_of(pkg: dict, table: str, number: int) -> tuple[str, str, str, str]:
    """(normalised name, version, how a skipped line names it, what it lacks: "name", "version" or "") of
    the number-th entry of a lock's `table` ([[package]], [[packages]])."""
    name = normalise(text_of(pkg.get("name")))
    version = text_of(pkg.get("version"))
    where = f"{name} {version}".strip() or f"[[{table}]] {number}"
    return name, version, where, "name" if not name else "version" if not version else ""


# --- the variant an index names ----------------------------------------------------------------------------

# The PyTorch index serves one build of torch per path: /whl/cu124, /whl/cpu, /whl/rocm6.2, and the
# nightly and test channels below them (/whl/nightly/cu128). Its wheels carry that variant as their local
# tag (torch-2.5.1+cu124), but a pin read from a file that records only the version (a requirements line
# `torch==2.5.1` under that --index-url, a lock of an index that serves an untagged wheel) lacks it.
_VARIANT = r"cu\d{2,3}|cpu|rocm\d+(?:\.\d+)*|xpu"
# The distributions the PyTorch index builds once per variant; what else it serves (filelock, numpy, the
# nvidia-* wheels) is the same wheel as anywhere, and has no local tag.
VARIANT_BUILT = ("torch", "torchvision", "torchaudio")


def index_variant(url: str) -> str:
    """The variant an index URL names ("cu124", "cpu", "rocm6.2"), or "": the last path segment after a
    /whl/ segment (http://127.0.0.1:8000/whl/nightly/cu128 -> cu128)."""
    path = re.sub(r"^[a-z+]+://[^/]*", "", str(url or "").strip(), flags=re.I)
    parts = [p for p in path.split("/") if p]
    if parts and parts[-1] == "simple":
        parts = parts[:-1]
    if len(parts) < 2 or "whl" not in parts[:-1]:
        return ""
    last = parts[-1].lower()
    return last if re.fullmatch(_VARIANT, last) else ""


def with_variant(name: str, version: str, index: str) -> str:
    """`version` with the local tag its index implies, for the distributions the PyTorch index builds per
    variant; unchanged when it has a local tag already or the index names none."""
    variant = index_variant(index)
    if not version or "+" in version or not variant or normalise(name) not in VARIANT_BUILT:
        return version
    return f"{version}+{variant}"


def nvidia_requires(pins: list) -> list:
    """ "name==version" of every nvidia-* pin: what a torch pin without a local tag is given as its
    requirements where the lock records no dependency edges (pylock.toml, a plain requirements file), so
    that probes/python_env.torch_build can read its CUDA from them as it does from an installed torch's
    Requires-Dist. Only for torch: the nvidia-* wheels in a lock without a CUDA torch came from elsewhere."""
    return sorted(f"{p.name}=={p.version}" for p in pins if p.name.startswith("nvidia-") and p.version)


def finish(path: str, fmt: str, requires_python: str, pins: list, skipped: list, wheels: bool = True) -> Lock:
    """The Lock: one pin per name (a second entry that also applies is skipped, saying so), sorted by name;
    in a lock of wheels, a torch pin without requirements given the lock's nvidia-* pins (nvidia_requires).
    A conda lock's pytorch is no wheel: it uses conda's CUDA packages, not the nvidia-* wheels beside it."""
    skipped = list(skipped)
    kept: dict = {}
    for pin in pins:
        first = kept.get(pin.name)
        if first is None:
            kept[pin.name] = pin
        elif first.version != pin.version or first.index != pin.index:
            skipped.append(
                f"{pin.name} {pin.version}: another entry for {pin.name} ({first.version}) applies too; "
                "the first is judged (name the Python to tell them apart)"
            )
    out = []
    for pin in kept.values():
        tag = pin.version.split("+", 1)[1] if "+" in pin.version else ""
        if wheels and pin.name == "torch" and not pin.requires and (not tag or tag.startswith("cu")):
            pin = pin._replace(requires=nvidia_requires(list(kept.values())))
        out.append(pin)
    out.sort(key=lambda p: p.name)
    return Lock(path, fmt, requires_python, out, list(dict.fromkeys(skipped)))
