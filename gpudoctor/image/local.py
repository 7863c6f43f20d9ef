"""A local image name, read through the container engine's own CLI: `docker image save` (or podman's)
into a private temporary directory, time-boxed; never a pull from a registry."""

from __future__ import annotations

import os
import shutil
import subprocess

from gpudoctor.image.view import ImageError

ENGINES = ("docker", "podman")


def engine() -> tuple[str, str] | None:
    """(name, path) of the first container engine CLI on PATH, or None."""
    for name in ENGINES:
        path = shutil.which(name)
        if path:
            return name, path
    return None


def save(ref: str, directory: str, timeout: float) -> str:
    """The path of `ref` saved as an archive inside `directory` (which the caller removes afterwards)."""
    found = engine()
    if found is None:
        raise ImageError(
            f"{ref}: no such file or directory, and neither docker nor podman is on PATH "
            "to read a local image"
        )
    name, path = found
    out = os.path.join(directory, "image.tar")
    try:
        proc = subprocess.run(
            [path, "image", "save", "-o", out, ref],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=max(1.0, timeout),
        )
    except subprocess.TimeoutExpired:
        raise ImageError(f"{ref}: `{name} image save` did not finish within {timeout:.0f} s") from None
    except OSError as e:
        raise ImageError(f"{ref}: could not run {name}: {e}") from None
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        first = lines[0] if lines else f"exit status {proc.returncode}"
        raise ImageError(f"{ref}: {name} image save failed: {first}")
    return out
