"""A container image as this host would run it: a Host that answers from the image what a container sees
of its image, and from the host wrapped what it sees of the host.

`check --image REF` judges an image before it is deployed. The probes are the ones `check` runs; they ask
this Host, which answers as the started container would see things:

- the image's: its environment (Config.Env: NVIDIA_REQUIRE_*, CUDA_VERSION, PATH, LD_LIBRARY_PATH...), its
  Python environment (the one its PATH finds first, read from the layers), its files that the reader kept
  (image/view.py FILES: os-release, the CUDA toolkit's version.json, cuDNN headers) and its loader cache;
- the host's: the kernel, /proc, /sys and /dev, NVML, the NVIDIA container toolkit's configuration, and the
  driver libraries, which the toolkit mounts into every GPU container (libcuda, libnvidia-*) and adds to its
  loader cache;
- neither: a command of the image (nvcc, gcc) cannot run in an image that is not started, and `--deep`
  programs are not run. Those facts are unknown, with that reason.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from . import ldconfig_text
from .base import NOT_FOUND, CommandResult, HostError

NOT_STARTED = "not run: the image is judged without starting it"
NO_PYTHON = "no Python environment in the image"
# What a container sees of the host: the kernel's file systems, the toolkit's configuration, systemd's state.
HOST_PREFIXES = (
    "/proc/",
    "/sys/",
    "/dev/",
    "/run/systemd",
    "/etc/nvidia-container-runtime/",
    "/etc/nvidia-imex",
)
HOST_PATHS = ("/proc", "/sys", "/dev", "/")
# Commands that read the kernel or the host's services: a container's are the host's.
HOST_COMMANDS = ("uname", "systemctl", "lspci", "dmesg", "journalctl", "readlink", "stat", "nv-fabricmanager")
LDCONFIG = ("ldconfig", "/sbin/ldconfig")
# The driver's libraries, mounted into a GPU container by the toolkit and added to its loader cache.
DRIVER_LIBRARIES = ("libcuda.so", "libcudadebugger.so", "libnvidia-", "libnvcuvid.so", "libnvoptix.so")


def is_driver_library(name: str) -> bool:
    return os.path.basename(name).startswith(DRIVER_LIBRARIES)


class ImageHost:
    """`inner` is the host (live or a snapshot); `view` the image (gpudoctor.image.view.ImageView)."""

    def __init__(self, inner: Any, view: Any) -> None:
        self.inner = inner
        self.view = view
        self._names = _directory_names(view)

    def __getattr__(self, name: str) -> Any:  # nvml, kind, timed_out, deadline of the host
        return getattr(self.inner, name)

    # --- files -------------------------------------------------------------------------------------------

    def _hosts(self, path: str) -> bool:
        return path in HOST_PATHS or path.startswith(HOST_PREFIXES)

    def read(self, path: str) -> str:
        if self._hosts(path):
            return self.inner.read(path)
        text = self.view.files.get(path)
        if text is None:
            raise HostError(NOT_FOUND, f"{path} (in the image {self.view.ref})")
        return text

    def listdir(self, path: str) -> list[str]:
        """The image's directory as far as the reader kept it (files, links, libraries, Python trees), with
        the driver libraries the toolkit would mount there; `/` and the kernel's trees are the host's."""
        if self._hosts(path):
            return self.inner.listdir(path)
        path = path.rstrip("/") or "/"
        names = set(self._names.get(path, ()))
        try:
            names.update(n for n in self.inner.listdir(path) if is_driver_library(n))
        except HostError:
            pass
        if not names and path not in self._names:
            raise HostError(NOT_FOUND, f"{path} (in the image {self.view.ref})")
        return sorted(names)

    # --- commands ----------------------------------------------------------------------------------------

    def run(self, argv: tuple, timeout: float = 2.0) -> CommandResult:
        program = argv[0] if argv else ""
        if program in LDCONFIG and tuple(argv[1:]) == ("-p",):
            return CommandResult(tuple(argv), 0, ldconfig_text.render(self._ld_cache()), "")
        if os.path.basename(program) in HOST_COMMANDS:
            return self.inner.run(argv, timeout)
        raise HostError(NOT_STARTED, " ".join(argv))

    def _ld_cache(self) -> list:
        """The image's loader cache and, after it, the driver libraries of the host's, as the toolkit's
        `ldconfig` inside a started container would list them (the host's entries come from `ldconfig -p`
        here; none when it cannot run)."""
        image = list(self.view.ld_cache or [])
        try:
            result = self.inner.run(("ldconfig", "-p"))
        except HostError:
            return image
        seen = {path for _s, _f, path in image}
        driver = [entry for entry in ldconfig_text.entries(result.stdout) if is_driver_library(entry[0])]
        return image + [e for e in driver if e[2] not in seen]

    # --- environment -------------------------------------------------------------------------------------

    def env(self, name: str) -> Optional[str]:
        return self.view.env.get(name)

    def env_names(self, prefix: str) -> list[str]:
        return sorted(n for n in self.view.env if n.startswith(prefix))

    # --- Python ------------------------------------------------------------------------------------------

    def python_targets(self) -> list[tuple[str, str]]:
        pythons = self.view.pythons
        return [(str(pythons[0].get("executable") or ""), "--image")] if pythons else []

    def target_python(self) -> str:
        targets = self.python_targets()
        return targets[0][0] if targets else ""

    def inspect_python_early(self) -> None:
        return None

    def python(self, interpreter: Optional[str] = None) -> dict:
        for dump in self.view.pythons:
            if interpreter in (None, "", dump.get("executable")):
                return dump
        raise HostError(
            NO_PYTHON if not self.view.pythons else NOT_FOUND, f"{interpreter} in {self.view.ref}"
        )

    def framework_runtime(self, interpreter: str, framework: str, timeout: float = 20.0) -> dict:
        raise HostError(NOT_STARTED, f"{framework} import")

    def cuda_binaries(self, interpreter: str, directories: Any, timeout: float = 15.0) -> dict:
        raise HostError(NOT_STARTED, "cuobjdump")


def _directory_names(view: Any) -> dict[str, set]:
    """{directory: the names in it} of every path the reader kept (files, links, libraries, interpreters)
    and every directory it read a Python environment from, with each of their parents."""
    out: dict[str, set] = {}
    leaves = [*view.files, *view.links, *view.libraries]
    directories = []
    for dump in view.pythons:
        leaves += [str(dump["executable"])] if dump.get("executable") else []
        directories += [str(p) for p in dump.get("path", []) if p]
    for path in directories:
        out.setdefault(os.path.normpath(path), set())
    for path in leaves + directories:
        child = os.path.normpath(path)
        parent = os.path.dirname(child)
        while child != parent:
            out.setdefault(parent, set()).add(os.path.basename(child))
            child, parent = parent, os.path.dirname(parent)
    return out
