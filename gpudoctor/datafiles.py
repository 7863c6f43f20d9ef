"""What every loader of shipped data files shares: where the shipped files are, how a problem found in
one is named (file, line, rule or row, where in it, what is wrong), and where what is computed from them is
cached. Rule files (engine/loader.py), knowledge tables (knowledge/) and policies report their problems
with it; the rule cache and the table digests keep their JSON with it. It imports nothing of gpudoctor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class Problem:
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


def cache_dir(name: str) -> Optional[Path]:
    """The directory `name` of gpudoctor's cache (`$XDG_CACHE_HOME/gpudoctor`, else `~/.cache/gpudoctor`);
    None when GPUDOCTOR_NO_CACHE is set."""
    if os.environ.get("GPUDOCTOR_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudoctor" / name


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` (its directory made), through a temporary file and a rename: a reader never sees
    half a file. OSError when it cannot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
