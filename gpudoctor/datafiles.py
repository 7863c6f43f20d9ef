"""What every loader of shipped data files shares: where the shipped files are, how a problem found in
one is named (file, line, rule or row, where in it, what is wrong), and where what is computed from them is
cached. Rule files (engine/loader.py), knowledge tables (knowledge/) and policies report their problems
with it; the rule cache and the table digests keep their JSON with it. Every file a user names (rule
files, policies, baselines, logs) is read with a bound (`read_capped`). It imports nothing of gpudoctor.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import NamedTuple, Optional


class Problem(NamedTuple):
    file: str
    line: int
    rule_id: str
    where: str
    message: str

    def __str__(self) -> str:
        rule = f" {self.rule_id}:" if self.rule_id else ""
        where = f" at {self.where}:" if self.where else ""
        return f"{self.file}:{self.line}:{rule}{where} {self.message}"


def shipped_rules_dir() -> Path:
    """The rules installed with the package, or the repository's rules/ in a source checkout."""
    here = Path(__file__).resolve().parent
    installed = here / "_rules"
    return installed if installed.is_dir() else here.parent / "rules"


def rule_files(path: Path) -> list[Path]:
    """The rule files of a directory (*.yaml, then *.yml), or the file itself."""
    if path.is_dir():
        return sorted(p for p in path.glob("*.yaml") if p.is_file()) + sorted(
            p for p in path.glob("*.yml") if p.is_file()
        )
    return [path]


def cache_dir(name: str) -> Optional[Path]:
    """The directory `name` of gpudoctor's cache (`$XDG_CACHE_HOME/gpudoctor`, else `~/.cache/gpudoctor`);
    None when GPUDOCTOR_NO_CACHE is set."""
    if os.environ.get("GPUDOCTOR_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudoctor" / name


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` (its directory made: a cache's), through a temporary file and a rename: a reader
    never sees half a file. OSError when it cannot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, text)


def write_output(path: Path, text: str) -> None:
    """`text` into a file a user named (`--html`, `-o`), as write_atomically does, into a directory that
    exists: a missing one is an OSError naming it, not made (cp, tar and a shell redirection refuse it)."""
    missing = missing_directory(path)
    if missing is not None:
        raise OSError(errno.ENOENT, f"no such directory: {missing}")
    _write(path, text)


def missing_directory(path: Path) -> Optional[Path]:
    """The directory of `path` when it does not exist, else None."""
    return None if path.parent.is_dir() else path.parent


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def read_capped(path: str | Path, limit: int) -> bytes:
    """The bytes of the file at `path`, at most `limit` of them: a larger input (a big file, a device or a
    pipe that never ends: /dev/zero, <(yes)) is an OSError (EFBIG) saying the limit, read no further."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {size_text(limit)}, more than gpudoctor reads")
    return data


def read_capped_text(path: str | Path, limit: int) -> str:
    """`read_capped` as Path.read_text gives a file: UTF-8 (UnicodeDecodeError otherwise), universal
    newlines."""
    return read_capped(path, limit).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def size_text(n: int) -> str:
    """1048576 -> "1 MiB", 262144 -> "256 KiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"
