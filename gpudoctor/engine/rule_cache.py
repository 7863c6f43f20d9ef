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

A check reads the whole shipped set at once (`load_shipped`), from one file beside those: every file's rules,
with each file's name, size, modification and change times and inode as they were when its text was read.
While every file of the directory is as recorded (the way Python trusts a bytecode cache while its source's
time and size are unchanged), the set is read and no rule file at all; else each file loads as above and the
set is written anew. Reading 22 files and hashing them was two thirds of loading the rules.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any, Callable, Optional

from .. import __version__, datafiles
from ..datafiles import Problem
from .model import ErrorText, FixStep, Rule

# 1: the parsed YAML and its line numbers; 2: the built rules; 3: error texts with sources; 4: their
# whitespace read as one space. Bump it whenever the loader builds other rules from the same text.
FORMAT = 5  # 5: Rule.applies

Loader = Callable[[str, str], "tuple[list[Rule], list[Problem]]"]


def cache_dir() -> Optional[Path]:
    return datafiles.cache_dir(f"rules-{__version__}-{FORMAT}")


def load(text: str, name: str, build: Loader) -> tuple[list[Rule], list[Problem]]:
    """build(text, name) (the loader's parse and validation), from the cache when it holds this text's
    rules; `name` is the file's path, which every rule carries."""
    directory = cache_dir()
    if directory is None:
        return build(text, name)
    import hashlib  # only here: a check whose shipped set is cached never hashes a text (load_shipped)

    path = directory / (hashlib.sha256(text.encode("utf-8")).hexdigest() + ".json")
    cached = _read(path, name)
    if cached is not None:
        return cached, []
    rules, problems = build(text, name)
    if not problems:
        _write(path, rules, name)
    return rules, problems


def _to_json(rule: Rule) -> dict[str, Any]:
    data = rule._asdict()  # the shape dataclasses.asdict gave (FORMAT 5): fix steps as objects
    data["fix"] = [step._asdict() for step in rule.fix]
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


def shipped_files(directory: str) -> list[tuple[str, tuple[int, ...]]]:
    """The rule files of `directory` as datafiles.rule_files lists them (*.yaml, then *.yml, each sorted by
    name; files only, symlinks followed), each with what says it changed: size, modification and change
    times, inode. OSError when the directory cannot be listed."""
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith((".yaml", ".yml")) and entry.is_file():
                st = entry.stat()
                found.append((entry.path, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)))
    return sorted(found, key=lambda f: (not f[0].endswith(".yaml"), os.path.basename(f[0])))


def load_shipped(
    directory: str, load_one: Callable[[Path], tuple[list[Rule], list[Problem]]]
) -> tuple[list[str], list[tuple[list[Rule], list[Problem]]]]:
    """(the shipped rule files of `directory`, each one's rules and problems): from the set file while every
    file is as it recorded, else load_one(path) for each (the set written again when no file has problems).
    A directory that cannot be listed is loaded as datafiles.rule_files finds it, never from the set (a
    missing one is a file that cannot be read)."""
    cached = cache_dir()
    try:
        files = shipped_files(directory)
    except OSError:
        cached = None
        files = [(str(path), ()) for path in datafiles.rule_files(Path(directory))]
    names = [name for name, _stamp in files]
    if cached is None:
        return names, [load_one(Path(name)) for name in names]
    path = cached / f"shipped-{zlib.crc32(directory.encode('utf-8', 'surrogateescape')):08x}.json"
    stamps = [[name, *stamp] for name, stamp in files]
    loaded = _read_set(path, directory, stamps)
    if loaded is not None:
        return names, loaded
    loaded = [load_one(Path(name)) for name in names]
    if not any(problems for _rules, problems in loaded):
        _write_set(path, directory, stamps, loaded)
    return names, loaded


def _read_set(path: Path, directory: str, stamps: list) -> Optional[list[tuple[list[Rule], list[Problem]]]]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if doc["directory"] != directory or doc["files"] != stamps or len(doc["rules"]) != len(stamps):
            return None
        return [
            ([_from_json(data, name) for data in rules], [])
            for (name, *_stamp), rules in zip(stamps, doc["rules"])
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_set(path: Path, directory: str, stamps: list, loaded: list) -> None:
    try:
        rules = [[_to_json(r) for r in file_rules] for file_rules, _problems in loaded]
        text = json.dumps({"directory": directory, "files": stamps, "rules": rules})
        kept = json.loads(text)["rules"]
        if [[_from_json(d, n) for d in f] for (n, *_s), f in zip(stamps, kept)] != [r for r, _p in loaded]:
            return  # a value JSON does not keep (a non-string key): not cached
        datafiles.write_atomically(path, text)
    except (OSError, TypeError, ValueError):
        return
