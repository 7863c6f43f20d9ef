"""A cache of the shipped rule files, parsed: the check reads them without importing or running PyYAML.

Parsing the shipped YAML (and importing yaml) is a fifth of a check's time, and its result is the same on
every run until gpudoctor changes. The cache holds what `yamlsafe.load` returns for one file (the data and
every value's line), as JSON, under the user's cache directory (`$XDG_CACHE_HOME/gpudoctor`, else
`~/.cache/gpudoctor`), in a file named after the sha256 of the source text and gpudoctor's version: it is
never trusted for other text or across versions. It is written on first use, atomically, and only when
the data survives JSON exactly (string keys, JSON types). Anything wrong with it (missing, unreadable,
malformed, unwritable) means parsing the YAML as without a cache. The rules built from it are validated as
always. GPUDOCTOR_NO_CACHE=1 turns it off. Only the shipped files go through it, never a user's.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional

from .. import __version__
from . import yamlsafe

FORMAT = 1


def cache_dir() -> Optional[Path]:
    if os.environ.get("GPUDOCTOR_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudoctor" / f"rules-{__version__}-{FORMAT}"


def load(text: str) -> tuple[Any, dict[tuple, int]]:
    """yamlsafe.load(text), from the cache when it holds this text's result."""
    directory = cache_dir()
    if directory is None:
        return yamlsafe.load(text)
    path = directory / (hashlib.sha256(text.encode("utf-8")).hexdigest() + ".json")
    cached = _read(path)
    if cached is not None:
        return cached
    data, lines = yamlsafe.load(text)  # a YamlError propagates: nothing is cached for a bad file
    _write(path, data, lines)
    return data, lines


def _read(path: Path) -> Optional[tuple[Any, dict[tuple, int]]]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        lines = {tuple(p): int(n) for p, n in doc["lines"]}
        return doc["data"], lines
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, data: Any, lines: dict[tuple, int]) -> None:
    doc = {"data": data, "lines": [[list(p), n] for p, n in lines.items()]}
    try:
        text = json.dumps(doc)
        if json.loads(text)["data"] != data:  # a non-string key or a non-JSON value: not cached
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        return
