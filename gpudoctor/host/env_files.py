"""The files `gpudoctor envs` reads to find every Python environment (gpudoctor/envs/), and nothing else.

The live Host hands this reader out (`LiveHost.env_files()`); the modules that find and describe
environments ask it their questions and never open a file themselves, so a test points them at a temporary
home with the same reader and a snapshot could answer them from its record. Every answer is plain data or
None: a file that cannot be read is absent to the caller, which says so (a broken environment is listed with
its reason, never dropped).
"""

from __future__ import annotations

import os
from typing import Optional

from .command_words import read_regular

MAX_TEXT = 1024 * 1024  # METADATA, kernel.json, environments.txt, pyvenv.cfg: far smaller in practice
MAX_ENTRIES = 10_000  # a directory listed: an envs directory or site-packages with more is cut there


class EnvFiles:
    """This machine's files, read-only, each question answered without following a FIFO or a device."""

    def text(self, path: str, limit: int = MAX_TEXT) -> Optional[str]:
        """A regular file's first `limit` bytes as text (UTF-8, errors replaced); None when it is not a
        readable regular file."""
        data = self.head(path, limit)
        return None if data is None else data.decode("utf-8", "replace")

    def head(self, path: str, limit: int) -> Optional[bytes]:
        """At most `limit` bytes of a regular file, as `gpudoctor run` reads a command's files (a FIFO in
        its place cannot hang the open)."""
        return read_regular(path, limit)

    def listdir(self, path: str) -> Optional[list[str]]:
        """The names in a directory, sorted (at most MAX_ENTRIES); None when it is not a readable one."""
        try:
            with os.scandir(path) as it:
                names = []
                for entry in it:
                    names.append(entry.name)
                    if len(names) >= MAX_ENTRIES:
                        break
        except OSError:
            return None
        return sorted(names)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def lexists(self, path: str) -> bool:
        """Something is there, a dangling symbolic link included."""
        return os.path.lexists(path)

    def readlink(self, path: str) -> Optional[str]:
        try:
            return os.readlink(path)
        except OSError:
            return None

    def real(self, path: str) -> str:
        """The path with its symbolic links resolved."""
        return os.path.realpath(path)
