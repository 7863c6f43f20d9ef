"""Answers from one knowledge table without loading them all, for the facts a check derives on every host.

Loading the knowledge tables (importing gpudoctor.knowledge and PyYAML, parsing and validating every table)
costs a check about 40 ms, more than a third of its time on a host with no framework to judge. A derived
fact that needs one small answer from one table (the newest host compiler each CUDA release accepts) reads a
digest of it instead: the answer computed once from the validated tables, kept as JSON beside the rule
cache (`$XDG_CACHE_HOME/gpudoctor`, else `~/.cache/gpudoctor`), in a file named after the table and its
size, modification and change times and inode, under a directory named after gpudoctor's version: it is
trusted while the table file is as it was (the way the shipped rule set is, engine/rule_cache.py, and Python
trusts a bytecode cache), never across versions. Naming it after the table's sha256 instead cost a check
2 ms (reading the tables, importing hashlib). Anything wrong with it means computing the answer from the
tables again, and GPUDOCTOR_NO_CACHE=1 (as for the rule cache) turns it off.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

from . import __version__
from .datafiles import cache_dir, shipped_rules_dir, write_atomically

FORMAT = 1


class TableError(Exception):
    """The knowledge tables could not be loaded; the message is the first problem, in one line."""


def _cache_dir() -> Optional[Path]:
    return cache_dir(f"knowledge-{__version__}-{FORMAT}")


def digest(table: str, compute: Callable[[Any], Any], question: str = "") -> Any:
    """compute(the validated Knowledge), for an answer that depends on `table` alone and survives JSON;
    from the cache when it holds this table text's answer. `question` names the answer where one table
    gives more than one (it is part of the cache file's name). TableError when it has to compute and the
    tables do not load."""
    directory = _cache_dir()
    path = None
    if directory is not None:
        try:
            st = os.stat(shipped_rules_dir() / "knowledge" / f"{table}.yaml")
        except OSError:
            st = None
        if st is not None:
            name = f"{table}-{question}" if question else table
            path = directory / f"{name}-{st.st_size}-{st.st_mtime_ns}-{st.st_ctime_ns}-{st.st_ino}.json"
            try:
                with open(path, encoding="utf-8") as f:
                    return json.load(f)["answer"]
            except (OSError, ValueError, KeyError, TypeError):
                pass
    from .knowledge import KnowledgeError, knowledge  # validates every table: a broken one is never cached

    try:
        answer = compute(knowledge())
    except KnowledgeError as e:
        raise TableError((str(e).splitlines() or ["the knowledge tables do not load"])[0][:120]) from e
    if path is not None:
        _write(path, answer)
    return answer


def _write(path: Path, answer: Any) -> None:
    try:
        text = json.dumps({"answer": answer})
        if json.loads(text)["answer"] != answer:  # a value JSON does not keep: not cached
            return
        write_atomically(path, text)
    except (OSError, TypeError, ValueError):
        return


def host_compiler_limits() -> dict[str, dict[str, Optional[int]]]:
    """{"12.4": {"gcc": 13, "clang": 17}, ...}: the host_compilers table as knowledge.host_compilers reads it
    (None where it records no limit)."""

    def compute(kb: Any) -> dict[str, dict[str, Optional[int]]]:
        return {row.cuda: {k: row.newest(k) for k in ("gcc", "clang")} for row in kb.host_compilers}

    return digest("host_compilers", compute)


def gpu_floors() -> dict[str, str]:
    """{"12": "5.0", "13": "7.5"}: per CUDA major, the oldest compute capability it builds for, as
    knowledge.cuda_min_cc reads the cuda_drivers table (gpu_floors)."""

    def compute(kb: Any) -> dict[str, str]:
        return {str(row.cuda_major): str(row.min_cc) for row in kb.cuda_gpu_floors}

    return digest("cuda_drivers", compute, "gpu-floors")


# What the newest row of a table is, for the tables whose releases a host can outrun: (the rows' versions,
# how messages name the newest). jax.yaml has no release rows (one per CUDA plugin), so it has none.
NEWEST_OF = {
    "torch": lambda kb: [row.version for row in kb.torch_releases],
    "tensorflow": lambda kb: [row.version for row in kb.tensorflow_builds],
    "cuda_drivers": lambda kb: [str(row.branch) for row in kb.driver_branches],
}


def newest_row(table: str) -> Optional[str]:
    """The newest release `table` has a row for: "2.15" (torch), "2.21" (tensorflow), "620" (cuda_drivers:
    the newest driver branch); None when it has no rows."""

    def compute(kb: Any) -> Optional[str]:
        versions = NEWEST_OF[table](kb)
        return max(versions, key=_numbers) if versions else None

    return digest(table, compute, "newest")


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())
