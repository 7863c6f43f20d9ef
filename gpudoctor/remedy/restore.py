"""Restore points and roll back: put an environment back exactly as a restore point says it was.

A run's restore point lives in its directory (`<run_dir>/restore/`):
    inventory.json      Inventory.to_json() of the target before the run
    requirements.txt    freeze_lines, with a header saying how to restore by hand
    pip-inspect.json    `python -m pip inspect` verbatim, when the target has pip 22.2 or later
    files.json          every path under each site directory (directories end in /), by site
    dists/*.tar         backups of distributions as they were installed (backup.py has the layout)

Rolling back removes what the restore point does not have (backed up first into the current run's
restore point, so that a rollback or an undo can itself be undone) and puts back, from backups, what it
had, each file checked against the sha256 the backup recorded. Then what an installer stopped half-way
left under the directories of the distributions it touched is removed: files no distribution lists that
files.json says were not there (a partly written .so, pip's `~orch` stash of what it was replacing).
Success is not assumed: the environment is read again and `ok` says whether names, versions and RECORD
hashes all match, every file put back is as recorded, and every leftover is gone.
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
        listing = {site: _listing(site) for site in point.inventory.sites}
        _write(point.dir / "files.json", json.dumps(listing, indent=0) + "\n")
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

    def files(self) -> dict[str, set[str]] | None:
        """files.json: the paths under each site directory at the restore point; None when it has none (a
        restore point of gpudoctor before issue 24) or it cannot be read."""
        try:
            data = json.loads((self.dir / "files.json").read_text(encoding="utf-8"))
            return {str(site): set(map(str, paths)) for site, paths in data.items()}
        except (OSError, ValueError, AttributeError, TypeError):
            return None

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
    # files no distribution lists that were not there at the restore point, removed: what an installer
    # stopped half-way leaves (a partly written .so, pip's `~orch` stash of what it was replacing)
    leftovers: list[str] = field(default_factory=list)
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

    listing = point.files()
    half_written: list[Dist] = []
    unrestorable = [want[n] for n in want if n not in restore and not _same(now, want[n])]
    for dist in list(remove):
        holds = next(
            (w for w in unrestorable if w.name != dist.name and set(w.files) & set(dist.files)), None
        )
        if dist.name in want and dist.name not in restore:
            instead = want[dist.name].version
            keep(dist, f"kept {dist.name} {dist.version}: no backup of {instead} to put in its place")
        elif holds is not None:  # onnxruntime-gpu in the place of onnxruntime: one of the two beats neither
            keep(
                dist,
                f"kept {dist.name} {dist.version}: it holds the files of {holds.name} {holds.version}, "
                "of which there is no backup to put in its place",
            )
        elif not dist.record_sha256 and listing is not None and _new(dist, listing):
            remove.remove(dist)  # a .dist-info an installer stopped before its RECORD: the sweep takes it
            half_written.append(dist)
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
    broken = False  # a file put back is not as the restore point recorded it
    for name, tar in sorted(restore.items()):
        problems = backup.extract(tar, now.prefix)
        result.problems += problems
        if problems:
            broken = True
            result.missing.append(f"{name}=={want[name].version}")
        else:
            result.restored.append(f"{name} {want[name].version}")
    touched = remove + half_written + [want[n] for n in restore]
    touched += [now.dists[n] for n in restore if n in now.dists]
    if listing is not None and touched:
        after = read_inventory(point.inventory.python, timeout)
        result.leftovers, problems = _sweep(after, listing, touched)
        result.problems += problems
        broken = broken or bool(problems)
    result.after = read_inventory(point.inventory.python, timeout)
    result.ok = (
        not broken
        and set(result.after.dists) == set(want)
        and all(result.after.dists[n].same_install(d) for n, d in want.items())
    )
    return result


def _listing(site: str) -> list[str]:
    """Every path under `site`, relative to it; directories end in /."""
    out = []
    for top, dirs, files in os.walk(site):
        rel = os.path.relpath(top, site)
        base = "" if rel == "." else rel + "/"
        out += [base + d + "/" for d in dirs if not os.path.islink(os.path.join(top, d))]
        out += [base + f for f in files]
        out += [base + d for d in dirs if os.path.islink(os.path.join(top, d))]
    return sorted(out)


def _sweep(env: Inventory, had: dict[str, set[str]], touched: list[Dist]) -> tuple[list[str], list[str]]:
    """Remove what an installer stopped half-way left: under the top-level entries of the touched
    distributions (their packages and .dist-info directories) and pip's `~` stash entries, every path no
    distribution of `env` lists that the restore point's listing `had` does not have. Returns (the paths
    removed, the problems)."""
    owned = {f for d in env.dists.values() for f in d.files}
    removed: list[str] = []
    problems: list[str] = []
    for site in env.sites:
        before = had.get(site)
        if before is None:
            continue
        tops = {os.path.basename(d.dist_info) for d in touched if d.site == site}
        tops |= {
            rel.split(os.sep)[0]
            for d in touched
            for rel in (os.path.relpath(f, site) for f in d.files)
            if d.site == site and not rel.startswith("..")
        }
        before_tops = {p.split("/")[0] for p in before}
        try:
            entries = sorted(os.listdir(site))
        except OSError as e:
            problems.append(f"cannot list {site}: {e}")
            continue
        for top in entries:
            if top in tops or (top.startswith("~") and top not in before_tops):
                _sweep_entry(site, top, before, owned, removed, problems)
    return removed, problems


def _sweep_entry(
    site: str, top: str, before: set[str], owned: set[str], removed: list, problems: list
) -> None:
    path = os.path.join(site, top)
    if os.path.islink(path) or not os.path.isdir(path):
        walk = [(site, [], [top])]
    else:
        walk = list(os.walk(path, topdown=False))
    for where, dirs, files in walk:
        for name in files + [d for d in dirs if os.path.islink(os.path.join(where, d))]:
            full = os.path.join(where, name)
            if os.path.relpath(full, site) in before or full in owned:
                continue
            try:
                os.unlink(full)
                removed.append(full)
            except OSError as e:
                problems.append(f"cannot remove {full}, which was not there before the run: {e}")
        if where != site and os.path.relpath(where, site) + "/" not in before:
            try:
                os.rmdir(where)
            except OSError:  # not empty: something listed or kept is in it
                pass


def _new(dist: Dist, listing: dict[str, set[str]]) -> bool:
    """The .dist-info directory of `dist` was not there at the restore point."""
    return os.path.relpath(dist.dist_info, dist.site) + "/" not in listing.get(dist.site, set())


def _same(now: Inventory, dist: Dist) -> bool:
    return dist.name in now.dists and now.dists[dist.name].same_install(dist)


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
