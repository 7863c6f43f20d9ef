"""What `explain` matches a message against: every shipped rule's and explain entry's error texts, and the
entries themselves, cached, so that a message is matched without loading the rules.

Loading the shipped rules (even from the rule cache), parsing and validating the explain entries, and
importing the engine and yaml cost `gpudoctor explain MESSAGE` most of its time, though a message names a
few causes or none. The index holds what matching needs (match.Known for each rule or entry with error
texts) and the entries as built, as JSON under the user's cache directory (`$XDG_CACHE_HOME/gpudoctor`,
else `~/.cache/gpudoctor`), in a file named after the sha256 of every shipped rule file's and the entries
file's name and bytes, in a directory named after gpudoctor's version and this format: never trusted for
other files or across versions. It is written only when every file loads without problems; anything wrong
with it (missing, unreadable, malformed, unwritable) means building it as without a cache.
GPUDOCTOR_NO_CACHE=1 turns it off. A user's rule files (--rules) never go through it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from .. import __version__, datafiles
from .match import Known, Matcher

FORMAT = 1  # 1: the Known of each rule and entry, and the entries' fields


def entries_file() -> Path:
    return datafiles.shipped_rules_dir() / "explain" / "program_errors.yaml"


class Entries(Mapping):
    """The explain entries by id (entries.Entry), built from the index's JSON when first asked for."""

    def __init__(self, raw: list[dict[str, Any]]) -> None:
        self._raw = raw
        self._built: Optional[dict[str, Any]] = None

    def _entries(self) -> dict[str, Any]:
        if self._built is None:
            from ..engine.model import ErrorText
            from .entries import Entry

            self._built = {}
            for e in self._raw:
                fields = {k: tuple(v) if isinstance(v, list) else v for k, v in e.items()}
                fields["errors"] = tuple(ErrorText(text, source) for text, source in e["errors"])
                self._built[e["id"]] = Entry(**fields)
        return self._built

    def __getitem__(self, key: str) -> Any:
        return self._entries()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._raw)


def build(rule_paths: Sequence[str] = ()) -> tuple[Matcher, Mapping[str, Any]]:
    """The matcher over every rule's and entry's error texts, and the entries (entries.Entry) by id: the
    shipped ones from the index, a user's rule files (--rules) loaded. Raises the loaders' RuleLoadError
    and EntryError for bad files."""
    if not rule_paths:
        found, by_id = shipped()
        return Matcher(found), by_id
    from ..engine.loader import load_rules
    from .answer import knowns
    from .entries import load_entries

    entries = load_entries()
    return Matcher(knowns(load_rules(list(rule_paths)), entries)), {e.id: e for e in entries}


def shipped() -> tuple[list[Known], Mapping[str, Any]]:
    """The Known of every shipped rule and entry with error texts, and the entries by id. Raises the
    loaders' RuleLoadError or EntryError where a shipped file has problems."""
    files = datafiles.rule_files(datafiles.shipped_rules_dir()) + [entries_file()]
    directory = datafiles.cache_dir(f"explain-{__version__}-{FORMAT}")
    path = directory / (_key(files) + ".json") if directory is not None else None
    cached = _read(path) if path is not None else None
    if cached is not None:
        return cached
    knowns, entries = _build()
    if path is not None:
        _write(path, knowns, entries)
    return knowns, Entries(entries)


def _key(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for f in files:
        try:
            data = f.read_bytes()
        except OSError:
            data = b"\0unreadable"
        digest.update(f"{f.name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _build() -> tuple[list[Known], list[dict[str, Any]]]:
    from dataclasses import asdict

    from ..engine.loader import load_rules
    from .answer import knowns
    from .entries import load_entries

    entries = load_entries()
    return knowns(load_rules([]), entries), [asdict(e) for e in entries]


def _read(path: Path) -> Optional[tuple[list[Known], Mapping[str, Any]]]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        found = [
            Known(i, t, tuple(errors), tuple(refines), bool(c)) for i, t, errors, refines, c in doc["knowns"]
        ]
        return found, Entries(doc["entries"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, knowns: list[Known], entries: list[dict[str, Any]]) -> None:
    rows = [[k.id, k.title, list(k.errors), list(k.refines), k.catch_all] for k in knowns]
    try:
        datafiles.write_atomically(path, json.dumps({"knowns": rows, "entries": entries}))
    except (OSError, TypeError, ValueError):
        return
