"""A cache of the shipped knowledge tables, validated and typed: a check reads them back without importing
PyYAML, and without parsing or validating them again.

Parsing and validating the tables (and importing yaml) costs a check that judges a CUDA build of a
framework about 40 ms, and its result is the same on every run until the tables or gpudoctor change. The
cache holds the Knowledge that loading.py built (every row, typed), as JSON, under the user's cache
directory (`$XDG_CACHE_HOME/gpudoctor`, else `~/.cache/gpudoctor`), in a file named after the sha256 of
every table file's name and bytes together, in a directory named after gpudoctor's version and this
format; the file repeats the key, the version and the format. It is never trusted for other tables or
across versions. It is written only when every table is valid (a broken table is never cached, and reports
its problems as without a cache), and only when what the JSON reads back as is equal to what was built.

Reading it back checks every value against the type its dataclass field declares (rows.py), builds the
frozen rows directly, and gives up at the first surprise: anything wrong with the file (missing,
unreadable, truncated, another format, wrong types, unwritable) means parsing the tables as without a
cache. GPUDOCTOR_NO_CACHE=1 turns it off. Only the shipped tables go through it (knowledge()).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Optional

from .. import __version__, datafiles
from . import rows
from .rows import Knowledge

FORMAT = 1  # 1: the built Knowledge, each dataclass as an object of its fields

Decoder = Callable[[Any], Any]


class _Mismatch(ValueError):
    """A value in the cache file is not of the type its field declares."""


def cache_dir() -> Optional[Path]:
    return datafiles.cache_dir(f"tables-{__version__}-{FORMAT}")


def tables_key(files: Mapping[str, bytes]) -> str:
    """The sha256 of every table file's name and bytes, in name order: any change to any table, or a table
    added or removed, is another key."""
    digest = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def load(files: Mapping[str, bytes], build: Callable[[Mapping[str, bytes]], Knowledge]) -> Knowledge:
    """build(files) (loading.py's parse and validation, which raises KnowledgeError), from the cache when it
    holds these files' Knowledge."""
    directory = cache_dir()
    if directory is None:
        return build(files)
    key = tables_key(files)
    path = directory / f"{key}.json"
    cached = _read(path, key)
    if cached is not None:
        return cached
    kb = build(files)  # raises on a broken table: nothing is written
    _write(path, key, kb)
    return kb


def encode(value: Any) -> Any:
    """A dataclass as an object of its fields, a tuple as a list, a mapping as an object, a date as
    YYYY-MM-DD; str, int, float, bool and None as they are."""
    if is_dataclass(value):
        return {f.name: encode(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise TypeError(f"the table cache does not keep {type(value).__name__}")


def decode(data: Any) -> Knowledge:
    """The Knowledge that encode() wrote; _Mismatch (a ValueError) at the first value of the wrong type."""
    return _decoder("Knowledge", {})(data)


def _read(path: Path, key: str) -> Optional[Knowledge]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return _from_doc(doc, key)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _from_doc(doc: Any, key: str) -> Knowledge:
    if not isinstance(doc, dict) or (doc.get("format"), doc.get("version"), doc.get("key")) != (
        FORMAT,
        __version__,
        key,
    ):
        raise _Mismatch("another format, version or key")
    return decode(doc["knowledge"])


def _write(path: Path, key: str, kb: Knowledge) -> None:
    try:
        text = json.dumps({"format": FORMAT, "version": __version__, "key": key, "knowledge": encode(kb)})
        if _from_doc(json.loads(text), key) != kb:  # a value JSON does not keep exactly: not cached
            return
        datafiles.write_atomically(path, text)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return


def _decoder(annotation: str, made: dict[str, Decoder]) -> Decoder:
    """What reads a value of the type `annotation` (a field's declared type, as rows.py spells it) back from
    JSON, checking it on the way: every type the rows use, and nothing else (another raises _Mismatch, so a
    Knowledge with a field of a new type is simply never cached). `made` holds the decoders built so far."""
    if annotation in made:
        return made[annotation]
    decoder: Decoder
    if annotation in _SCALARS:
        decoder = _SCALARS[annotation]
    elif annotation.startswith("Optional[") and annotation.endswith("]"):
        inner = _decoder(annotation[len("Optional[") : -1], made)
        decoder = lambda v: None if v is None else inner(v)  # noqa: E731
    elif annotation.startswith("tuple[") and annotation.endswith(", ...]"):
        item = _decoder(annotation[len("tuple[") : -len(", ...]")], made)
        decoder = lambda v: tuple([item(x) for x in _typed(v, list)])  # noqa: E731
    elif annotation.startswith("Mapping[str, ") and annotation.endswith("]"):
        value = _decoder(annotation[len("Mapping[str, ") : -1], made)
        decoder = lambda v: MappingProxyType({_typed(k, str): value(x) for k, x in _typed(v, dict).items()})  # noqa: E731
    elif is_dataclass(getattr(rows, annotation, None)):
        decoder = _dataclass_decoder(getattr(rows, annotation), made)
    else:
        raise _Mismatch(f"no reader for {annotation}")
    made[annotation] = decoder
    return decoder


def _dataclass_decoder(cls: type, made: dict[str, Decoder]) -> Decoder:
    decoders = {f.name: _decoder(str(f.type), made) for f in fields(cls)}
    names = decoders.keys()

    def decode_one(v: Any) -> Any:
        if _typed(v, dict).keys() != names:
            raise _Mismatch(f"{cls.__name__}: other fields")
        return cls(**{name: read(v[name]) for name, read in decoders.items()})

    return decode_one


def _typed(v: Any, kind: type) -> Any:
    if type(v) is not kind:
        raise _Mismatch(f"expected {kind.__name__}, got {type(v).__name__}")
    return v


def _number(v: Any) -> Any:
    if type(v) not in (int, float):
        raise _Mismatch(f"expected a number, got {type(v).__name__}")
    return v


_SCALARS: dict[str, Decoder] = {
    "str": lambda v: _typed(v, str),
    "int": lambda v: _typed(v, int),
    "bool": lambda v: _typed(v, bool),
    "float": _number,
    "datetime.date": lambda v: datetime.date.fromisoformat(_typed(v, str)),
}
