"""A cache of the shipped rule files' rules, built and validated: a check reads them without importing or
running PyYAML, and without validating them again.

Parsing and validating the shipped YAML (and importing yaml) is a fifth of a check's time, and its result
is the same on every run until gpudoctor changes. The cache holds, for one file, its rules as the loader
built them (every field but the file's path, which is the reader's), as JSON, under the user's cache
directory (`$XDG_CACHE_HOME/gpudoctor`, else `~/.cache/gpudoctor`), in a file named after the sha256 of the
source text, in a directory named after gpudoctor's version and this format: it is never trusted for other
text or across versions. It is written on first use, atomically, only for a file without problems, and
only when the rules survive JSON exactly. Anything wrong with it (missing, unreadable, malformed, not
rules, unwritable) means loading the file as without a cache. GPUDOCTOR_NO_CACHE=1 turns it off. Only
the shipped files go through it, never a user's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

from .. import __version__, datafiles
from ..datafiles import Problem
from .model import ErrorText, FixStep, Rule

# 1: the parsed YAML and its line numbers; 2: the built rules; 3: error texts with sources; 4: their
# whitespace read as one space. Bump it whenever the loader builds other rules from the same text.
FORMAT = 4

Loader = Callable[[str, str], "tuple[list[Rule], list[Problem]]"]


def cache_dir() -> Optional[Path]:
    return datafiles.cache_dir(f"rules-{__version__}-{FORMAT}")


def load(text: str, name: str, build: Loader) -> tuple[list[Rule], list[Problem]]:
    """build(text, name) (the loader's parse and validation), from the cache when it holds this text's
    rules; `name` is the file's path, which every rule carries."""
    directory = cache_dir()
    if directory is None:
        return build(text, name)
    path = directory / (hashlib.sha256(text.encode("utf-8")).hexdigest() + ".json")
    cached = _read(path, name)
    if cached is not None:
        return cached, []
    rules, problems = build(text, name)
    if not problems:
        _write(path, rules, name)
    return rules, problems


def _to_json(rule: Rule) -> dict[str, Any]:
    data = asdict(rule)
    del data["file"]
    return data


def _from_json(data: dict[str, Any], name: str) -> Rule:
    fields = dict(data)
    fields["references"] = tuple(fields["references"])
    fields["errors"] = tuple(ErrorText(text, source) for text, source in fields["errors"])
    fields["refines"] = tuple(fields["refines"])
    fields["fix"] = tuple(
        FixStep(
            kind=step["kind"],
            argv=tuple(step["argv"]),
            text=step["text"],
            resolver=step["resolver"],
            args=tuple((key, value) for key, value in step["args"]),
        )
        for step in fields["fix"]
    )
    return Rule(file=name, **fields)


def _read(path: Path, name: str) -> Optional[list[Rule]]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return [_from_json(data, name) for data in doc["rules"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write(path: Path, rules: list[Rule], name: str) -> None:
    try:
        text = json.dumps({"rules": [_to_json(r) for r in rules]})
        if _read_text(text, name) != rules:  # a value JSON does not keep (a non-string key): not cached
            return
        datafiles.write_atomically(path, text)
    except (OSError, TypeError, ValueError):
        return


def _read_text(text: str, name: str) -> Optional[list[Rule]]:
    try:
        return [_from_json(data, name) for data in json.loads(text)["rules"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
