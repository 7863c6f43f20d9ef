"""What a check judges besides the machine: a container image (`check --image REF`) or a lockfile (`check
--lock FILE`), before it is deployed or installed.

`open_image` and `open_lock` read it and wrap the host in the view the probes then ask (host/image_view.py,
host/lock_view.py); the image's or lockfile's own description becomes facts the run is given (image.*,
lock.*: parameters, like the policy's, so the rules that read them are part of a check only with one);
`side` says, per finding, whether it is the image's (or lockfile's), the host's, or a mismatch between them.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

from .facts import Fact, FactSpec, head, known, spec_name, unknown

FACT_SPECS = (
    FactSpec(
        "image.ref", "str", "", "check --image: the image as named (a layout directory, an archive, a name)"
    ),
    FactSpec("image.digest", "str", "", "check --image: the image configuration's digest (sha256:...)"),
    FactSpec("image.os", "str", "", "check --image: the operating system the image is built for (linux)"),
    FactSpec(
        "image.arch", "str", "", "check --image: its CPU architecture as images name it (amd64, arm64, ...)"
    ),
    FactSpec(
        "image.machine",
        "str",
        "",
        "check --image: that architecture as the kernel names it (x86_64, aarch64, ...), compared with "
        "system.machine",
    ),
    FactSpec("image.layers", "int", "", "check --image: how many layers were read"),
    FactSpec("image.pythons", "int", "", "check --image: how many Python environments the layers hold"),
    FactSpec("image.entrypoint", "str", "", "check --image: the entrypoint and command, joined by spaces"),
    FactSpec("lock.path", "str", "", "check --lock: the lockfile judged"),
    FactSpec(
        "lock.format",
        "str",
        "",
        "check --lock: uv.lock, poetry.lock, pylock.toml, requirements.txt, environment.yml, conda-lock.yml",
    ),
    FactSpec("lock.pins", "int", "", "check --lock: the pins that apply to this machine"),
    FactSpec(
        "lock.skipped", "int", "", "check --lock: entries for other platforms or Pythons, or unreadable"
    ),
    FactSpec("lock.requires_python", "str", "", "check --lock: the lock's requires-python (empty: none)"),
    FactSpec(
        "lock.python",
        "version",
        "",
        "check --lock: the Python it is judged for: the host's interpreter's (the node's, in fleet), when "
        "the lock's requires-python admits it",
    ),
)
# OCI (Go) architecture names -> the kernel's (uname -m), as the image's programs will see the machine.
MACHINES = {
    "amd64": "x86_64",
    "arm64": "aarch64",
    "arm": "armv7l",
    "386": "i686",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
}
OCI_ARCH = {machine: arch for arch, machine in MACHINES.items()}
# The fact sections an image (a lockfile) decides: its environment, its Python, its libraries. The others
# are the machine's (driver, GPUs, PCI, kernel); knowledge and derived sections are neither.
IMAGE_SIDE = (
    "image", "python", "frameworks", "extensions", "cuda", "cudnn", "nccl", "cuda_libs", "container", "env",
)  # fmt: skip
LOCK_SIDE = ("lock", "python", "frameworks")
# Facts outside those sections that an image decides all the same: the C library its interpreter links
# (platform.libc_ver() in the image; wheels' manylinux tags are judged against it). A lockfile is installed
# with the node's own interpreter, so the node's stays.
IMAGE_OWNED = ("system.glibc",)
# The node's, though in a section an image fills (prefixes): how its container toolkit is set up.
NODE_OWNED = ("container.toolkit_",)
NEUTRAL = ("knowledge", "policy")
# Derived facts that already weigh one side against the other (the runtime's verdict on the image's
# requirements with this driver and these GPUs; a build's kernels against these GPUs): a mismatch.
MISMATCH = ("container.require_", "frameworks[].unsupported", "frameworks[].cuda_unsupported")


class Subject(NamedTuple):
    kind: str  # "image" or "lock"
    name: str  # the reference or path, as given
    host: Any  # the host as the probes ask it
    facts: dict  # the image.* or lock.* facts the run is given


def host_machine(host: Any) -> str:
    """The machine as the host's kernel names it (system.machine, as the system probe reads it); ""
    unknown."""
    from .probes.system import kernel_machine

    fact = kernel_machine(host)
    return str(fact.value) if fact.known else ""


def open_image(host: Any, ref: str, timeout: float, machine: Optional[str] = None) -> Subject:
    """The image (raises gpudoctor.image.view.ImageError), read for the host's architecture (`machine`, as
    the kernel names it, where the host cannot say) where it holds several, and the host as a container of
    it would see things."""
    from .host.image_view import ImageHost
    from .image import read_image

    machine = machine or host_machine(host)
    view = read_image(ref, arch=OCI_ARCH.get(machine) or None, timeout=timeout)
    src = f"image {ref}"
    facts: dict[str, Fact] = {
        "image.ref": known(ref, src),
        "image.digest": known(view.digest, src) if view.digest else unknown("not recorded", src),
        "image.os": known(view.os, src) if view.os else unknown("not recorded", src),
        "image.arch": known(view.arch, src) if view.arch else unknown("not recorded", src),
        "image.machine": (
            known(MACHINES[view.arch], src)
            if view.arch in MACHINES
            else unknown(f"architecture {view.arch!r}", src)
        ),
        "image.layers": known(view.layers, src),
        "image.pythons": known(len(view.pythons), src),
        "image.entrypoint": known(" ".join(str(w) for w in [*view.entrypoint, *view.cmd]), src),
        # judged as a container this host would start, not as wherever gpudoctor itself runs
        "container.detected": known(False, f"{src}: a container this host would start"),
    }
    return Subject("image", ref, ImageHost(host, view), facts)


def host_python(host: Any) -> str:
    """The version of the interpreter `check` would judge on the host ("3.12.3"); "" where the host cannot
    say."""
    from .host.base import HostError

    try:
        version = host.python().get("version")
    except HostError:
        return ""
    found = re.match(r"\d+\.\d+(\.\d+)?", version) if isinstance(version, str) else None
    return found.group(0) if found else ""


def lock_python(requires_python: str, python: str) -> tuple[str, str]:
    """(the Python a lock is judged for, or "", and why it is unknown): the one the lock pins (a conda lock
    holds its Python: requires-python "==3.11.9"), else `python` (the host's) where the lock's
    requires-python admits it."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    pinned = re.fullmatch(r"==\s*(\d+\.\d+(\.\d+)?)", requires_python.strip())
    if pinned:
        return pinned.group(1), ""
    if not python:
        return "", "the host's Python version is unknown"
    if requires_python:
        try:
            admitted = SpecifierSet(requires_python).contains(python, prereleases=True)
        except InvalidSpecifier:
            return "", f"the lock's requires-python {requires_python!r} is not a version specifier"
        if not admitted:
            return "", f"the lock's requires-python {requires_python} does not admit the host's {python}"
    return python, ""


def open_lock(host: Any, path: str, machine: Optional[str] = None, python: Optional[str] = None) -> Subject:
    """The lockfile's pins that apply to this machine (raises gpudoctor.lockfile LockError), as the Python
    environment they would make, for `python` (default: the host's interpreter's, host_python) where the
    lock's requires-python admits it; for any Python otherwise (lock.python says why)."""
    from .host.lock_view import LockHost
    from .lockfile import as_inspection, read_lock

    machine = machine or host_machine(host) or "x86_64"
    wanted = host_python(host) if python is None else python
    lock = read_lock(path, machine=machine, python=wanted)
    chosen, why = lock_python(lock.requires_python, wanted)
    if chosen != wanted:  # read again: the markers were judged for a Python it does not install
        lock = read_lock(path, machine=machine, python=chosen)
    src = f"lockfile {path}"
    facts: dict[str, Fact] = {
        "lock.path": known(path, src),
        "lock.format": known(lock.format, src),
        "lock.pins": known(len(lock.pins), src),
        "lock.skipped": known(len(lock.skipped), src),
        "lock.requires_python": known(lock.requires_python, src),
        "lock.python": known(chosen, src if chosen != wanted else "the host's interpreter")
        if chosen
        else unknown(why, src),
    }
    dump = as_inspection(lock, machine=machine, python=chosen)
    return Subject("lock", path, LockHost(host, dump, src), facts)


def kind_of(chosen_by: str) -> str:
    """ "image" or "lock" for a Result's Target chosen by --image or --lock; "" otherwise."""
    return {"--image": "image", "--lock": "lock"}.get(chosen_by, "")


def sections(kind: str) -> tuple[str, ...]:
    """The fact sections an image ("image") or a lockfile ("lock") decides."""
    return IMAGE_SIDE if kind == "image" else LOCK_SIDE


def owned(kind: str) -> tuple[str, ...]:
    """The facts outside its sections that the subject decides all the same."""
    return IMAGE_OWNED if kind == "image" else ()


def owns(kind: str, name: str) -> bool:
    """Whether the subject (an image, a lockfile) decides the fact `name`: one of its sections' that is not
    the node's (NODE_OWNED), or one it decides outside them (IMAGE_OWNED)."""
    return name in owned(kind) or (head(name) in sections(kind) and not name.startswith(NODE_OWNED))


def side(kind: str, fact_names: list) -> str:
    """Whose a finding is, by the facts its rule read: "image" (or "lockfile"), "host", or "both" (a
    mismatch between them: either side can change)."""
    if any(spec_name(name).startswith(MISMATCH) for name in fact_names):
        return "both"
    judged = [owns(kind, name) for name in fact_names if head(name) not in NEUTRAL]
    own, host = any(judged), not all(judged)
    if own and host:
        return "both"
    return ("image" if kind == "image" else "lockfile") if own else "host"


def finding_side(kind: str, finding: Any) -> str:
    """side() of a finding, by the facts its rule read (its evidence); "" without a subject."""
    return side(kind, [name for name, _value in finding.evidence]) if kind else ""
