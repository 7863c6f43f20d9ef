"""What every loader of shipped data files shares: where the shipped files are, and how a problem found in
one is named (file, line, rule or row, where in it, what is wrong). Rule files (engine/loader.py),
knowledge tables (knowledge/) and policies report their problems with it. It imports nothing of gpudoctor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
