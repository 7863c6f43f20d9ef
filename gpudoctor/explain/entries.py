"""The explain-only entries (rules/explain/program_errors.yaml): errors that point at the program, not the
host, each with what it means, what to do, and when the hardware is worth suspecting.

Loaded strictly, as rule files are: an unknown key, a missing field, a value of the wrong type, an id not
shaped GD-EXPLAIN-NNN or used twice is an EntryError listing every problem with its file and line. The YAML
is read with the safe loader of rule files (engine/yamlsafe.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..datafiles import Problem, read_capped_text, shipped_rules_dir
from ..engine import yamlsafe
from ..engine.loader import error_texts, key_problems
from ..engine.model import ErrorText

ID_PATTERN = re.compile(r"^GD-EXPLAIN-\d{3}$")
STRINGS = ("id", "title", "meaning", "hardware_when")
LISTS = ("do", "references")
FIELDS = ("id", "title", "errors", "meaning", "do", "hardware_when", "references")


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    errors: tuple[ErrorText, ...]  # error messages (or distinctive parts of them) users meet, with sources
    meaning: str  # what the error means
    do: tuple[str, ...]  # what to do, in order
    hardware_when: str  # when the hardware, not the program, is worth suspecting
    references: tuple[str, ...]  # where the advice was read


class EntryError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def shipped_path() -> Path:
    return shipped_rules_dir() / "explain" / "program_errors.yaml"


def load_entries(path: Optional[Path] = None) -> list[Entry]:
    """The entries of `path` (the shipped file when None), in file order; EntryError for any problem."""
    path = Path(path) if path is not None else shipped_path()
    try:
        text = read_capped_text(path, yamlsafe.MAX_BYTES)
    except (OSError, UnicodeDecodeError) as e:
        raise EntryError([Problem(str(path), 0, "", "", f"cannot read: {e}")]) from None
    entries, problems = parse_entries(text, str(path))
    if problems:
        raise EntryError(problems)
    return entries


def parse_entries(text: str, name: str) -> tuple[list[Entry], list[Problem]]:
    """The entries of one file's text, and every problem found (entries with problems are left out)."""
    try:
        data, lines = yamlsafe.load(text)
    except yamlsafe.YamlError as e:
        return [], [Problem(name, e.line, "", "", e.message)]
    if not isinstance(data, dict) or "entries" not in data:
        return [], [Problem(name, 1, "", "", "an explain file is a mapping with an 'entries' list")]
    problems = [
        Problem(name, lines.get((k,), 1), "", str(k), "unknown top-level key (expected only 'entries')")
        for k in data
        if k != "entries"
    ]
    if not isinstance(data["entries"], list):
        return [], problems + [
            Problem(name, lines.get(("entries",), 1), "", "entries", "expected a list of entries")
        ]
    entries: list[Entry] = []
    first_line: dict[str, int] = {}
    for i, raw in enumerate(data["entries"]):
        path = ("entries", i)
        entry, found = _entry(raw, path, lines, name)
        if entry is not None:
            if entry.id in first_line:
                found.append(
                    Problem(
                        name,
                        lines.get((*path, "id"), lines.get(path, 0)),
                        entry.id,
                        "id",
                        f"duplicate id (first used at line {first_line[entry.id]})",
                    )
                )
            else:
                first_line[entry.id] = lines.get((*path, "id"), lines.get(path, 0))
        problems += found
        if entry is not None and not found:
            entries.append(entry)
    return entries, problems


def _entry(raw: Any, path: tuple, lines: dict, name: str) -> tuple[Optional[Entry], list[Problem]]:
    line = lines.get(path, 0)
    if not isinstance(raw, dict):
        return None, [Problem(name, line, "", f"entries[{path[1]}]", "an entry must be a mapping")]
    rid = raw.get("id") if isinstance(raw.get("id"), str) else ""
    found = key_problems(raw, FIELDS)
    for key in STRINGS:
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            found.append((key, "expected a non-empty string"))
    if isinstance(raw.get("id"), str) and not ID_PATTERN.match(raw["id"]):
        found.append(("id", f"an explain entry's id looks like GD-EXPLAIN-001, got {raw['id']!r}"))
    for key in LISTS:
        value = raw.get(key)
        if key not in raw:
            continue
        if not isinstance(value, list) or not value:
            found.append((key, "expected a non-empty list of strings"))
            continue
        for n, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                found.append((f"{key}[{n}]", "expected a non-empty string"))
    errors = error_texts(raw.get("errors", []), "errors", found) if "errors" in raw else ()
    if "errors" in raw and not raw["errors"]:
        found.append(("errors", "expected a non-empty list of error texts"))
    problems = [Problem(name, _line(lines, path, where), rid, where, msg) for where, msg in found]
    if problems:
        return None, problems
    entry = Entry(
        id=raw["id"],
        title=raw["title"].strip(),
        errors=errors,
        meaning=" ".join(raw["meaning"].split()),
        do=tuple(" ".join(d.split()) for d in raw["do"]),
        hardware_when=" ".join(raw["hardware_when"].split()),
        references=tuple(r.strip() for r in raw["references"]),
    )
    return entry, []


def _line(lines: dict, path: tuple, where: str) -> int:
    """The line of `where` (a key, or key[n]) inside the entry at `path`, else the entry's own line."""
    match = re.fullmatch(r"([A-Za-z_]+)(?:\[(\d+)\])?", where)
    if match:
        key, index = match.group(1), match.group(2)
        full = (*path, key, int(index)) if index is not None else (*path, key)
        for candidate in (full, (*path, key)):
            if candidate in lines:
                return lines[candidate]
    return lines.get(path, 0)
