"""What the modules that read a command line share (host/command_python.py and the `uv run` and `conda
run` readers): the answer's type, reading a file's first bytes, finding a command as execvp does and a file
in a directory or its parents, reading options, and the phrases a reason is made of."""

from __future__ import annotations

import os
import stat
from typing import Any, NamedTuple, Optional

# A file's first bytes read: the kernel reads 256 for a shebang (BINPRM_BUF_SIZE, Linux 5.1 and later); the
# second line of pip's /bin/sh trampoline carries a path of up to PATH_MAX.
MAX_HEAD = 4096
MAX_TEXT = 256 * 1024  # pyproject.toml, environments.txt, a script's inline metadata
DEFAULT_PATH = "/bin:/usr/bin"  # execvp's search path where PATH is unset (glibc, confstr _CS_PATH)
NOT_PYTHON = "the command is not a Python program"
TOP = "argv[0] of the command"
INNER = "the command it runs"
TRUE = ("1", "true", "yes", "on")  # an environment variable that turns a flag on


class Judged(NamedTuple):
    interpreter: Optional[str]  # None: the command names no interpreter that can be known from here
    reason: str


class Inside(NamedTuple):
    """A wrapper's answer (`uv run`, `conda run`): run `command` inside the environment at `prefix` (its bin/
    first on PATH); `python_itself`: the command is run by that environment's python (`-m`, a script);
    `what`: the reason. A None prefix: the command runs as it is (uv outside a project, no .venv)."""

    prefix: Optional[str]
    command: list
    python_itself: bool
    what: str


class LiveFiles:
    """The files of this machine, read as `interpreter_of` needs them."""

    def head(self, path: str) -> Optional[bytes]:
        """The first MAX_HEAD bytes of a regular file; None when it is not one or cannot be read."""
        return read_regular(path, MAX_HEAD)

    def text(self, path: str) -> Optional[str]:
        """A small text file (its first MAX_TEXT bytes); None when it is not a readable regular file."""
        data = read_regular(path, MAX_TEXT)
        return None if data is None else data.decode("utf-8", "replace")

    def executable(self, path: str) -> bool:
        """A regular file this user may execute (what execvp tries)."""
        return os.path.isfile(path) and os.access(path, os.X_OK)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def real(self, path: str) -> str:
        """The path with its symbolic links resolved (where a script or a conda install really is)."""
        return os.path.realpath(path)

    def listdir(self, path: str) -> list:
        """The names in a directory (pyenv's installed versions); [] when it cannot be read."""
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []


def read_regular(path: str, limit: int) -> Optional[bytes]:
    """At most `limit` bytes of a regular file (None when it is not one or cannot be read). Opened
    non-blocking: a FIFO in its place cannot hang the open (it is then refused as not a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def find(name: str, env: dict, cwd: str, files: Any) -> Optional[str]:
    """Where execvp finds `name`: a name with "/" as it is (from `cwd`), else the first executable file in
    the directories of the command's PATH (an empty entry is the working directory)."""
    if os.sep in name:
        return os.path.normpath(os.path.join(cwd, name))
    search = env.get("PATH")
    for directory in (DEFAULT_PATH if search is None else search).split(os.pathsep):
        candidate = os.path.normpath(os.path.join(cwd, directory or ".", name))
        if files.executable(candidate):
            return candidate
    return None


def up_to(start: str, name: str, files: Any) -> Optional[str]:
    """The nearest directory from `start` upwards that holds the file `name` (`.venv/pyvenv.cfg` too), as uv
    looks for a project or a `.venv` and pyenv for a `.python-version`."""
    here = os.path.normpath(start)
    while True:
        if files.text(os.path.join(here, name)) is not None:
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def read_options(args: list, with_values: frozenset) -> tuple[list, int]:
    """The options before the first word that is not one: [(name, value or None)], and that word's index.
    A value comes attached (`--with=torch`, `-wtorch`) or as the next word, for the options in `with_values`;
    `--` ends the options."""
    found: list = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return found, i + 1
        if not word.startswith("-") or word == "-":
            return found, i
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            attached: Optional[str] = value if eq else None
        else:
            name, attached = word[:2], (word[2:] or None)
        if name in with_values and attached is None and i + 1 < len(args):
            found.append((name, args[i + 1]))
            i += 2
            continue
        found.append((name, attached if name in with_values else None))
        i += 1
    return found, i


def subcommand(args: list, with_values: frozenset) -> Optional[str]:
    """The first word that is not an option (nor an option's value)."""
    _found, at = read_options(args, with_values)
    return args[at] if at < len(args) else None


def last(found: list, *names: str) -> Optional[str]:
    values = [value for name, value in found if name in names and value]
    return values[-1] if values else None


def subject(name: str, how: str) -> str:
    """`name` as the subject of a sentence, with where it came from unless it is simply the command."""
    return name if how == TOP else f"{name}, {how},"


def tail(how: str) -> str:
    """ " (how)" where `how` says more than that this is the command itself."""
    return "" if how == TOP else f" ({how})"


def said(what: str, how: str) -> str:
    """`what` chose the interpreter; `how` says where that came from, unless it is simply the command."""
    return what if how == TOP else f"{what}, {how}"
