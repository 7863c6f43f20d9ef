"""What is installed in the target environment, exactly: every distribution with its RECORD and its hash.

A restore point must be able to say "this environment is back as it was" and mean it, so the inventory
is read from the files an installer wrote, not from names in directory listings: each `*.dist-info`
directory's METADATA (Name, Version), RECORD (every file, and the sha256 of the RECORD file's bytes, which
changes whenever any installed file's recorded hash does), INSTALLER, REQUESTED and direct_url.json.
`.egg-info` directories (setuptools' legacy `setup.py develop`/egg installs) are skipped: they carry no
dependable file list, so they could be neither backed up nor removed. So are `~*.dist-info` directories:
pip's stash of what it was replacing, left when it was stopped half-way (pip skips them too: "Pip's
AdjacentTempDirectory leaves folders e.g. ``~atplotlib.dist-info`` if cleanup was interrupted",
pip 23.2.1 src/pip/_internal/metadata/base.py:613).

Only the environment's own site directories are walked (sysconfig's purelib and platlib of the target
interpreter): the user site and PYTHONPATH are not part of the environment, and a fix never installs
there. The target interpreter runs SCRIPT as `python -I -B -c SCRIPT` (isolated, no bytecode written, so
the environment is not changed by looking at it); SCRIPT is standard library only and valid on Python 3.8+.
Its answer is JSON on one line after MARKER, so whatever a sitecustomize prints cannot be mistaken for it.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass
from typing import Optional

from ..host import children

FORMAT = 1
MARKER = "GPUDOCTOR-INVENTORY "
TAIL = 600  # characters of a failed interpreter's stderr quoted in the error

# The most read of an inventory or `pip inspect` answer. An inventory lists every installed file, about 100
# bytes each (0.36 MB for a venv of 3,500 files; torch's RECORD alone has 15,000 lines): room to spare.
MAX_ANSWER = 256 * 1024 * 1024
SCRIPT = r"""
import csv, hashlib, io, json, os, re, sys, sysconfig
MARKER = "GPUDOCTOR-INVENTORY "
def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()
def text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None
def headers(meta):
    found = {}
    for line in (meta or "").splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in found:
            found[key] = value.strip()
    return found
sites, real = [], set()
paths = sysconfig.get_paths()
for key in ("purelib", "platlib"):
    site = paths.get(key)
    if site and os.path.isdir(site):
        site = os.path.normpath(os.path.abspath(site))
        if os.path.realpath(site) not in real:
            real.add(os.path.realpath(site))
            sites.append(site)
dists, errors = [], []
for site in sites:
    for folder in sorted(os.listdir(site)):
        info = os.path.join(site, folder)
        if not folder.endswith(".dist-info") or folder.startswith("~") or not os.path.isdir(info):
            continue
        stem = folder[: -len(".dist-info")]
        meta = headers(text(os.path.join(info, "METADATA")))
        name, _, version = stem.partition("-")
        record, files, digest = os.path.join(info, "RECORD"), [], ""
        try:
            with open(record, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = None
        except OSError as e:
            errors.append("%s: %s" % (record, e))
            continue
        if raw is not None:
            digest = hashlib.sha256(raw).hexdigest()
            for row in csv.reader(io.StringIO(raw.decode("utf-8", "surrogateescape"))):
                if row and row[0].strip():
                    files.append(os.path.normpath(os.path.join(site, row[0])))
            files.append(os.path.normpath(record))
        direct = text(os.path.join(info, "direct_url.json"))
        try:
            direct = json.loads(direct) if direct is not None else None
        except ValueError:
            direct = None
        dists.append({
            "name": norm(meta.get("Name") or name), "version": meta.get("Version") or version,
            "dist_info": info, "site": site, "record_sha256": digest, "files": sorted(set(files)),
            "installer": ((text(os.path.join(info, "INSTALLER")) or "").splitlines() or [""])[0].strip(),
            "requested": os.path.exists(os.path.join(info, "REQUESTED")),
            "direct_url": direct if isinstance(direct, dict) else None,
        })
answer = {"format": 1, "python": sys.executable, "prefix": sys.prefix, "sites": sites,
          "dists": dists, "errors": errors}
sys.stdout.write("\n" + MARKER + json.dumps(answer) + "\n")
"""


class InventoryError(Exception):
    """The inventory could not be read: the interpreter did not run, timed out, failed, or gave no
    answer that could be read. The message says which."""


def normalise(name: str) -> str:
    """PEP 503: lower case, runs of -, _ and . as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Dist:
    name: str  # normalised (PEP 503)
    version: str
    dist_info: str  # absolute path of its .dist-info directory
    site: str  # the site directory it lies in
    record_sha256: str  # hex sha256 of the RECORD file's bytes; "" when it has no RECORD
    files: tuple[str, ...]  # absolute, normalised paths of every RECORD entry, RECORD itself too
    installer: str  # INSTALLER's first line, "" if none
    requested: bool  # REQUESTED present
    direct_url: Optional[dict]  # parsed direct_url.json (PEP 610), None if none

    def same_install(self, other: Dist) -> bool:
        """The same version with the same RECORD: the same files with the same recorded hashes."""
        return self.version == other.version and self.record_sha256 == other.record_sha256


@dataclass(frozen=True)
class Inventory:
    python: str  # the interpreter it was read through
    prefix: str  # its sys.prefix
    sites: tuple[str, ...]  # the environment's own site directories
    dists: dict[str, Dist]  # by normalised name

    def versions(self) -> dict[str, str]:
        return {name: d.version for name, d in sorted(self.dists.items())}

    def to_json(self) -> dict:
        dists = {}
        for name, d in sorted(self.dists.items()):
            dists[name] = asdict(d)
            dists[name]["files"] = list(d.files)
        return {
            "format": FORMAT,
            "python": self.python,
            "prefix": self.prefix,
            "sites": list(self.sites),
            "dists": dists,
        }

    @classmethod
    def from_json(cls, data: dict) -> Inventory:
        try:
            if data.get("format") != FORMAT:
                raise InventoryError(f"inventory format {data.get('format')!r}, expected {FORMAT}")
            dists = {}
            for d in data["dists"].values() if isinstance(data["dists"], dict) else data["dists"]:
                dist = Dist(
                    name=str(d["name"]),
                    version=str(d["version"]),
                    dist_info=str(d["dist_info"]),
                    site=str(d["site"]),
                    record_sha256=str(d["record_sha256"]),
                    files=tuple(str(f) for f in d["files"]),
                    installer=str(d["installer"]),
                    requested=bool(d["requested"]),
                    direct_url=d["direct_url"] if isinstance(d["direct_url"], dict) else None,
                )
                dists.setdefault(dist.name, dist)  # the first on the site path wins, as for imports
            return cls(str(data["python"]), str(data["prefix"]), tuple(map(str, data["sites"])), dists)
        except (KeyError, TypeError, AttributeError) as e:
            raise InventoryError(f"not an inventory: {type(e).__name__}: {e}") from None


def run_child(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run argv (never a shell) in a session of its own and wait at most `timeout` seconds; on timeout the
    whole group is killed (children.communicate). Raises OSError when it cannot start or prints more than
    MAX_ANSWER bytes (children.TooMuchOutput), and subprocess.TimeoutExpired when it does not finish."""
    proc = children.spawn(argv)
    out, err = children.communicate(proc, timeout, limit=MAX_ANSWER)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def read_inventory(python: str, timeout: float = 60.0) -> Inventory:
    """The exact inventory of the environment of `python`; InventoryError when it cannot be read."""
    argv = [python, "-I", "-B", "-c", SCRIPT]
    try:
        done = run_child(argv, timeout)
    except subprocess.TimeoutExpired:
        raise InventoryError(f"{python} did not answer within {timeout:g} s") from None
    except OSError as e:
        raise InventoryError(f"cannot run {python}: {e.strerror or e}") from None
    stderr = done.stderr.decode("utf-8", "replace").strip()[-TAIL:]
    if done.returncode != 0:
        raise InventoryError(f"{python} exited with status {done.returncode}: {stderr or '(no stderr)'}")
    answer = None
    for line in reversed(done.stdout.decode("utf-8", "replace").splitlines()):
        if line.startswith(MARKER):
            try:
                answer = json.loads(line[len(MARKER) :])
            except ValueError:
                pass
            break
    if not isinstance(answer, dict) or not isinstance(answer.get("dists"), list):
        raise InventoryError(f"{python} gave no readable inventory{': ' + stderr if stderr else ''}")
    if answer.get("errors"):
        raise InventoryError(f"{python}: unreadable RECORD: {'; '.join(map(str, answer['errors']))}")
    answer["python"] = python
    return Inventory.from_json(answer)


def freeze_lines(inv: Inventory) -> list[str]:
    """`name==version`, or `name @ URL` for a direct-URL install (PEP 610), sorted by name: what
    `pip install --no-deps -r` needs to put the environment's versions back by hand."""
    return [_requirement(d) for _name, d in sorted(inv.dists.items())]


def _requirement(d: Dist) -> str:
    url = d.direct_url or {}
    if not isinstance(url.get("url"), str):
        return f"{d.name}=={d.version}"
    target, fragment = url["url"], []
    vcs = url.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs"):
        target = f"{vcs['vcs']}+{target}" + (f"@{vcs['commit_id']}" if vcs.get("commit_id") else "")
    archive = url.get("archive_info")
    if isinstance(archive, dict) and isinstance(archive.get("hash"), str):
        fragment.append(archive["hash"])
    if url.get("subdirectory"):
        fragment.append(f"subdirectory={url['subdirectory']}")
    target += ("#" + "&".join(fragment)) if fragment else ""
    if isinstance(url.get("dir_info"), dict) and url["dir_info"].get("editable"):
        return f"-e {target}"
    return f"{d.name} @ {target}"


def diff(before: Inventory, after: Inventory) -> dict[str, tuple[Optional[str], Optional[str]]]:
    """name -> (version before or None, version after or None), for every distribution added, removed or
    changed; a new RECORD hash under the same version is a change, (v, v)."""
    changed = {}
    for name in sorted(set(before.dists) | set(after.dists)):
        old, new = before.dists.get(name), after.dists.get(name)
        if old is None or new is None or not old.same_install(new):
            changed[name] = (old.version if old else None, new.version if new else None)
    return changed
