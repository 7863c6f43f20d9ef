"""What the image reader hands on: one ImageView per reference, or an ImageError saying why not.

The view holds only what the checks of a container image need (its config, a few small files, the links and
libraries under the directories where CUDA and Python live, the dynamic linker's cache, every Python
environment as pyinspect describes one); it knows nothing of rules or probes.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

# The small files read verbatim (after whiteouts, through the image's own links), at most MAX_FILE each.
FILES = (
    "/etc/os-release",
    "/usr/lib/os-release",
    "/usr/local/cuda/version.json",
    "/usr/local/cuda/version.txt",
    "/usr/include/cudnn_version.h",
    "/usr/include/x86_64-linux-gnu/cudnn_version.h",
    "/usr/include/aarch64-linux-gnu/cudnn_version.h",
    "/etc/ld.so.conf",
)
MAX_FILE = 64 * 1024


class ImageError(Exception):
    """A reference that cannot be read, or an archive refused; `reason` says what and why, on one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = " ".join(str(reason).split())


class ImageView(NamedTuple):
    ref: str  # as the user named it
    digest: str  # the image config's digest, "sha256:..."
    os: str  # config "os", e.g. "linux"
    arch: str  # config "architecture" (OCI/Go names): "amd64", "arm64", "ppc64le", ...
    variant: str  # config "variant" ("v8") or ""
    env: dict  # Config.Env as {NAME: VALUE}; later entries win, as the runtime does
    entrypoint: list  # Config.Entrypoint ([] when absent)
    cmd: list  # Config.Cmd ([] when absent)
    files: dict  # FILES path -> text (utf-8, errors replaced), for those that exist after whiteouts
    links: dict  # absolute path -> symlink target, under the directories of interest
    libraries: list  # sorted absolute paths of CUDA/ROCm shared libraries (pyinspect.LIB_MARKERS)
    ld_cache: Optional[list]  # /etc/ld.so.cache as [(soname, flags, path)]; None when the image has none
    pythons: list  # pyinspect.inspect()'s format, one per environment; PATH's python first
    layers: int  # how many layers were read
