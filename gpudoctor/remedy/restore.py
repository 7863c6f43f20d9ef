"""Restore points and roll back: put an environment back exactly as a restore point says it was.

A run's restore point lives in its directory (`<run_dir>/restore/`):
    inventory.json      Inventory.to_json() of the target before the run
    requirements.txt    freeze_lines, with a header saying how to restore by hand
    pip-inspect.json    `python -m pip inspect` verbatim, when the target has pip 22.2 or later
    dists/*.tar         backups of distributions as they were installed (backup.py has the layout)

Rolling back removes what the restore point does not have (backed up first into the current run's
restore point, so that a rollback or an undo can itself be undone) and puts back, from backups, what it
had. Success is not assumed: the environment is read again and `ok` says whether names, versions and
RECORD hashes all match.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import backup
from .inventory import Dist, Inventory, InventoryError, freeze_lines, normalise, read_inventory, run_child

PIP_INSPECT_SINCE = (22, 2)


class RestoreError(Exception):
    """A restore point could not be made, read or added to; the message says what."""


class RestorePoint:
    """The state of an environment before a run, and the backups that run made."""

    def __init__(self, run_dir: Path, inventory: Inventory, timeout: float = 60.0) -> None:
        self.run_dir = Path(run_dir)
        self.inventory = inventory
        self.timeout = timeout

    @property
    def dir(self) -> Path:
        return self.run_dir / "restore"

    @property
    def dists_dir(self) -> Path:
        return self.dir / "dists"

    @classmethod
    def create(cls, run_dir: Path, python: str, timeout: float = 60.0) -> RestorePoint:
        """Read the environment of `python` and write the restore point; a run has one, never replaced."""
        if (Path(run_dir) / "restore" / "inventory.json").exists():
            raise RestoreError(f"{Path(run_dir) / 'restore'} already holds a restore point")
        point = cls(Path(run_dir), read_inventory(python, timeout), timeout)
        point.dir.mkdir(parents=True, exist_ok=True)
        _write(point.dir / "inventory.json", json.dumps(point.inventory.to_json(), indent=1) + "\n")
        requirements = point.dir / "requirements.txt"
        header = [
            f"# The distributions {python} had before this run ({len(point.inventory.dists)}).",
            "# To put these versions back by hand (a direct URL install needs its source still there):",
            f"#   {python} -m pip install --no-deps -r {requirements}",
            f"#   or: uv pip install --python {python} --no-deps -r {requirements}",
        ]
        _write(requirements, "\n".join(header + freeze_lines(point.inventory)) + "\n")
        inspected = _pip_inspect(point.inventory, timeout)
        if inspected is not None:
            _write(point.dir / "pip-inspect.json", inspected)
        return point

    @classmethod
    def load(cls, run_dir: Path, timeout: float = 60.0) -> RestorePoint:
        path = Path(run_dir) / "restore" / "inventory.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(Path(run_dir), Inventory.from_json(data), timeout)
        except (OSError, ValueError, InventoryError, AttributeError) as e:
            raise RestoreError(f"cannot read the restore point {path}: {e}") from None

    def back_up(self, names: Iterable[str]) -> list[str]:
        """Back up each named distribution as it is installed now (a fresh inventory), unless this run
        already holds a backup of that exact install; names not installed are ignored. Returns the
        file names of the backups made; RestoreError when one cannot be made."""
        return self.back_up_from(read_inventory(self.inventory.python, self.timeout), names)

    def back_up_from(self, now: Inventory, names: Iterable[str]) -> list[str]:
        """back_up, given an inventory read just before."""
        made = []
        for name in dict.fromkeys(normalise(n) for n in names):
            dist = now.dists.get(name)
            if dist is None or backup.find([self.dists_dir], dist.name, dist.version, dist.record_sha256):
                continue
            if not dist.record_sha256:
                raise RestoreError(f"{dist.name} {dist.version} has no RECORD: its files are not known")
            try:
                made.append(backup.write(dist, now.prefix, self.dists_dir).name)
            except backup.BackupError as e:
                raise RestoreError(str(e)) from None
        return made

    def backups(self) -> list[Path]:
        return sorted(self.dists_dir.glob("*.tar")) if self.dists_dir.is_dir() else []


@dataclass
class Rollback:
    ok: bool  # the environment now matches the restore point: names, versions, RECORD hashes
    removed: list[str] = field(default_factory=list)  # "name version" removed
    restored: list[str] = field(default_factory=list)  # "name version" put back from a backup
    missing: list[str] = field(default_factory=list)  # "name==version" with no usable backup
    problems: list[str] = field(default_factory=list)  # anything else that went wrong
    after: Inventory | None = None


def roll_back(
    point: RestorePoint, search: Sequence[Path], keep_in: RestorePoint, timeout: float = 60.0
) -> Rollback:
    """Make the environment of `point` what `point` says it was. `search`: backup directories or run
    directories, current run first. What is removed is first backed up into `keep_in`. A distribution
    whose install cannot be put back keeps its present version in place (an environment with a
    different version beats one without it), and is listed in `missing`."""
    want = point.inventory.dists
    now = read_inventory(point.inventory.python, timeout)
    result = Rollback(ok=False)
    restore: dict[str, Path] = {}
    for name, dist in sorted(want.items()):
        if name in now.dists and now.dists[name].same_install(dist):
            continue
        for tar in backup.find(search, name, dist.version, dist.record_sha256):
            refused = backup.refusals(tar, now.prefix)
            result.problems += refused
            if not refused:  # the first usable backup, searching on past a refused one
                restore[name] = tar
                break
        else:
            result.missing.append(f"{name}=={dist.version}")
    remove = [d for n, d in sorted(now.dists.items()) if n not in want or not d.same_install(want[n])]

    def keep(dist: Dist, why: str) -> None:  # left installed, and so not replaced either
        result.problems.append(why)
        remove.remove(dist)
        if restore.pop(dist.name, None):
            result.missing.append(f"{dist.name}=={want[dist.name].version}")

    for dist in list(remove):
        if dist.name in want and dist.name not in restore:
            instead = want[dist.name].version
            keep(dist, f"kept {dist.name} {dist.version}: no backup of {instead} to put in its place")
        elif not dist.record_sha256:
            keep(dist, f"cannot remove {dist.name} {dist.version}: it has no RECORD")
        else:
            try:
                keep_in.back_up_from(now, [dist.name])
            except RestoreError as e:
                keep(dist, f"not removed, as it could not be backed up first: {e}")
    gone = {d.name for d in remove}
    staying = {f for d in now.dists.values() if d.name not in gone for f in d.files}
    for dist in remove:
        result.problems += _remove(dist, now, staying)
        result.removed.append(f"{dist.name} {dist.version}")
    for name, tar in sorted(restore.items()):
        problems = backup.extract(tar, now.prefix)
        result.problems += problems
        if problems:
            result.missing.append(f"{name}=={want[name].version}")
        else:
            result.restored.append(f"{name} {want[name].version}")
    result.after = read_inventory(point.inventory.python, timeout)
    result.ok = set(result.after.dists) == set(want) and all(
        result.after.dists[n].same_install(d) for n, d in want.items()
    )
    return result


def _remove(dist: Dist, env: Inventory, staying: set[str]) -> list[str]:
    """Delete a distribution's files, never one outside the prefix nor one a staying distribution lists;
    then the bytecode its modules left and the directories left empty. Returns the problems."""
    problems, parents = [], set()
    for path in backup.dist_paths(dist):
        if path in staying:
            continue
        if not backup.inside(path, env.prefix):
            problems.append(f"{dist.name}: not removed, outside the environment's prefix: {path}")
            continue
        parents.add(os.path.dirname(path))
        if path.endswith(".py"):
            parents.add(_drop_bytecode(path, staying, problems))
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                continue  # a RECORD names files; a directory goes only when it is left empty
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            problems.append(f"{dist.name}: cannot remove {path}: {e}")
    stops = {os.path.normpath(env.prefix), *map(os.path.normpath, env.sites)}
    for parent in sorted(parents, key=len, reverse=True):
        while parent not in stops and backup.inside(parent, env.prefix):
            try:
                os.rmdir(parent)
            except OSError:  # not empty (or gone): its parents are not empty either
                break
            parent = os.path.dirname(parent)
    return problems


def _drop_bytecode(source: str, staying: set[str], problems: list[str]) -> str:
    """Remove `__pycache__/<module>.*.pyc` of a module being removed; returns the __pycache__ dir."""
    cache = os.path.join(os.path.dirname(source), "__pycache__")
    module = os.path.basename(source)[: -len(".py")]
    try:
        names = os.listdir(cache)
    except OSError:
        return cache
    for name in names:
        pyc = os.path.join(cache, name)
        if name.startswith(module + ".") and name.endswith(".pyc") and pyc not in staying:
            try:
                os.unlink(pyc)
            except OSError as e:
                problems.append(f"cannot remove {pyc}: {e}")
    return cache


def _pip_inspect(inv: Inventory, timeout: float) -> str | None:
    """`pip inspect`'s report, verbatim, when the target's pip has it (22.2+); best effort."""
    pip = inv.dists.get("pip")
    numbers = re.match(r"(\d+)\.(\d+)", pip.version) if pip else None
    if not numbers or tuple(map(int, numbers.groups())) < PIP_INSPECT_SINCE:
        return None
    argv = [inv.python, "-I", "-B", "-m", "pip", "--disable-pip-version-check", "--no-input", "inspect"]
    try:
        done = run_child(argv, timeout)
        text = done.stdout.decode("utf-8")
        json.loads(text)  # verbatim, but only when it is the report (UnicodeDecodeError is a ValueError)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return text if done.returncode == 0 else None


def _write(path: Path, text: str) -> None:
    """Write a file whole or not at all (a crash leaves no half restore point)."""
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)
