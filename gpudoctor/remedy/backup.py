"""Backups of installed distributions: one tar per (name, version, RECORD hash), and its safe extraction.

Layout of `<name>-<version>-<record_sha256[:12]>.tar` (PAX format):
    manifest.json       first member: format, name, version, record_sha256, the prefix it was taken from,
                        the files it holds (relative to the prefix) and the ones it skipped, with why; from
                        format 2 the sha256 of each regular file as it was read (`sha256`), and the files
                        whose bytes were not those their RECORD lists when they were read (`not_as_recorded`:
                        a file another distribution overwrote, one edited by hand)
    env/<path>          each file as installed, its path relative to the environment's prefix (sys.prefix),
                        with its mode and mtime; a symbolic link is stored as a link
Paths are relative to the prefix, not to /, so a backup is put back into the environment being restored,
wherever it is now, and so nothing outside an environment can be named by one: a file a RECORD lists
outside the prefix is skipped (and said so), never backed up, removed or restored.

Extraction does by hand what tarfile's "data" filter does (Python 3.9 has no filters): every member is
checked before any is written, and the whole backup is refused if one would land outside the prefix
(absolute names, `..`, a link pointing out, a directory in the environment that is a link to elsewhere),
is not a plain file, directory or symbolic link, or asks for more than permission bits. Files are written
to a temporary name and renamed into place, so an installer's hard link (uv links files from its cache)
is replaced, never written through.

A backup is verified before anything of it is written, and each file again after it is in place: every
file's bytes must have the sha256 the manifest recorded (format 2) and the one its distribution's RECORD
lists (unless the manifest says the file already differed from RECORD when it was read). A tar has no
checksum over file data: without this, one flipped byte in a restore point would be put back silently.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

from .inventory import Dist

FORMAT = 2
READS = (1, 2)  # format 1 (gpudoctor 0.x before issue 24): no sha256 per file, RECORD only
MANIFEST = "manifest.json"
ROOT = "env/"


class BackupError(Exception):
    """A distribution could not be backed up (a file of it could not be read or the tar written)."""


def file_name(name: str, version: str, record_sha256: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9.+_-]", "_", version)
    return f"{name}-{safe}-{record_sha256[:12]}.tar"


def inside(path: str, prefix: str) -> bool:
    """`path` is under `prefix`, by name and by where its directory really is (no link leads out)."""
    path, prefix = os.path.normpath(path), os.path.normpath(prefix)
    if os.path.commonpath([path, prefix]) != prefix or path == prefix:
        return False
    parent = os.path.dirname(path)
    while not os.path.lexists(parent):  # the nearest directory that exists decides
        parent = os.path.dirname(parent)
    real_prefix = os.path.realpath(prefix)
    return os.path.commonpath([os.path.realpath(parent), real_prefix]) == real_prefix


def dist_paths(dist: Dist) -> list[str]:
    """Every file of a distribution: its RECORD's entries and whatever else its .dist-info holds."""
    paths = set(dist.files)
    for top, _dirs, files in os.walk(dist.dist_info):
        paths.update(os.path.normpath(os.path.join(top, f)) for f in files)
    return sorted(paths)


def write(dist: Dist, prefix: str, dest: Path) -> Path:
    """Tar `dist` as installed now into `dest`; the tar appears complete or not at all."""
    held, skipped = [], []
    for path in dist_paths(dist):
        if not inside(path, prefix):
            skipped.append({"path": path, "why": "outside the environment's prefix"})
        elif os.path.islink(path) or os.path.isfile(path):
            held.append(path)
        elif os.path.lexists(path):
            skipped.append({"path": path, "why": "not a file or symbolic link"})
        else:
            skipped.append({"path": path, "why": "listed in RECORD but not there"})
    rel = {p: os.path.relpath(p, prefix) for p in held}
    sha256 = {rel[p]: _sha256_file(p) for p in held if not os.path.islink(p)}
    recorded = record_hashes(dist, prefix)
    manifest = {
        "format": FORMAT,
        "name": dist.name,
        "version": dist.version,
        "record_sha256": dist.record_sha256,
        "prefix": prefix,
        "files": [rel[p] for p in held],
        "skipped": skipped,
        "sha256": sha256,
        "not_as_recorded": sorted(r for r, h in sha256.items() if recorded.get(r, h) != h),
    }
    final = dest / file_name(dist.name, dist.version, dist.record_sha256)
    part = final.with_name(final.name + ".part")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(part, "w", format=tarfile.PAX_FORMAT) as tar:
            data = json.dumps(manifest, indent=1, sort_keys=True).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            for path in held:
                info = tar.gettarinfo(path, arcname=ROOT + rel[path])
                if info.islnk():  # a second name of one inode: stored as a file of its own
                    info.type, info.linkname, info.size = tarfile.REGTYPE, "", os.stat(path).st_size
                if info.isreg():
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
        os.replace(part, final)
    except OSError as e:
        if part.is_file():
            part.unlink()
        raise BackupError(f"cannot back up {dist.name} {dist.version}: {e}") from None
    return final


def _sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return _sha256_stream(f)


def parse_record(text: str, site_rel: str) -> dict[str, str]:
    """RECORD's entries that carry a sha256 (PEP 376/627: `path,sha256=<urlsafe base64, no padding>,size`),
    as {path relative to the prefix: hex sha256}; `site_rel` is the site directory relative to the prefix."""
    out = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[1].startswith("sha256="):
            b64 = row[1][len("sha256=") :]
            try:
                digest = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
            except ValueError:
                continue
            if len(digest) == 32:  # the decoder drops what is not base64: "***" would read as b""
                out[os.path.normpath(os.path.join(site_rel, row[0]))] = digest.hex()
    return out


def record_hashes(dist: Dist, prefix: str) -> dict[str, str]:
    """The sha256 RECORD lists for each file of `dist`, by path relative to `prefix`."""
    try:
        with open(os.path.join(dist.dist_info, "RECORD"), encoding="utf-8", errors="surrogateescape") as f:
            return parse_record(f.read(), os.path.relpath(dist.site, prefix))
    except OSError:
        return {}


def expected_hashes(tar: tarfile.TarFile, manifest: dict) -> dict[str, list[tuple[str, str]]]:
    """What each regular file of a backup must hash to: {member name: [(where the hash comes from, hex)]},
    from the manifest (format 2) and from the RECORD the backup holds."""
    want: dict[str, list[tuple[str, str]]] = {}
    for rel, digest in (manifest.get("sha256") or {}).items():
        want.setdefault(ROOT + rel, []).append(("the restore point", str(digest)))
    skip = {ROOT + r for r in manifest.get("not_as_recorded") or ()}
    for member in tar.getmembers():
        if member.isreg() and member.name.endswith(".dist-info/RECORD"):
            site_rel = os.path.dirname(os.path.dirname(member.name[len(ROOT) :]))
            text = tar.extractfile(member).read().decode("utf-8", "surrogateescape")
            for rel, digest in parse_record(text, site_rel).items():
                if ROOT + rel not in skip:
                    want.setdefault(ROOT + rel, []).append(("its RECORD", digest))
    return want


def mismatch(name: str, data_sha256: str, want: dict[str, list[tuple[str, str]]]) -> Optional[str]:
    for where, digest in want.get(name, ()):
        if digest != data_sha256:
            return f"sha256 {data_sha256[:16]}..., {where} says {digest[:16]}..."
    return None


def read_manifest(tar_path: Path) -> Optional[dict]:
    try:
        with tarfile.open(tar_path) as tar:
            member = tar.next()
            if member is None or member.name != MANIFEST or not member.isreg():
                return None
            data = json.loads(tar.extractfile(member).read())
    except (OSError, tarfile.TarError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") in READS else None


def search_dirs(search: Iterable[Path]) -> list[Path]:
    """The backup directories of `search`: each given path may be a `restore/dists` directory or a run
    directory; in the order given, each once."""
    found: list[Path] = []
    for base in search:
        for d in (Path(base), Path(base) / "restore" / "dists", Path(base) / "dists"):
            if d.is_dir() and d not in found:
                found.append(d)
    return found


def find(search: Iterable[Path], name: str, version: str, record_sha256: str) -> list[Path]:
    """The backups of exactly this install (the manifest's full RECORD hash checked), first found first."""
    if not record_sha256:
        return []
    hits = []
    for d in search_dirs(search):
        path = d / file_name(name, version, record_sha256)
        manifest = read_manifest(path) if path.is_file() else None
        if manifest and (manifest.get("name"), manifest.get("version"), manifest.get("record_sha256")) == (
            name,
            version,
            record_sha256,
        ):
            hits.append(path)
    return hits


def _refusal(member: tarfile.TarInfo, prefix: str) -> Optional[str]:
    """Why a member must not be extracted into `prefix`, or None."""
    if not member.name.startswith(ROOT) or os.path.isabs(member.name[len(ROOT) :]):
        return "not a path inside the environment"
    target = os.path.normpath(os.path.join(prefix, member.name[len(ROOT) :]))
    if not inside(target, prefix):
        return "would be written outside the environment's prefix"
    if member.issym():
        pointed = os.path.normpath(os.path.join(os.path.dirname(target), member.linkname))
        if os.path.isabs(member.linkname) or not inside(pointed, prefix):
            return f"a link pointing outside the environment ({member.linkname})"
    elif not (member.isreg() or member.isdir()):
        return "not a plain file, directory or symbolic link"
    if member.mode & ~0o777:
        return f"mode {member.mode:o} asks for more than permission bits"
    return None


def refusals(tar_path: Path, prefix: str) -> list[str]:
    """Why the backup cannot be put back under `prefix`: a member refused, a file whose bytes are not
    those recorded, a file the manifest lists that is not there, or the tar unreadable."""
    manifest = read_manifest(tar_path)
    if manifest is None:
        return [f"{tar_path.name}: no manifest gpudoctor can read"]
    found = []
    try:
        with tarfile.open(tar_path) as tar:
            want = expected_hashes(tar, manifest)
            members = [m for m in tar.getmembers() if m.name != MANIFEST]
            for m in members:
                why = _refusal(m, prefix)
                if why is None and m.isreg():
                    if manifest["format"] >= 2 and m.name[len(ROOT) :] not in manifest.get("sha256", {}):
                        why = "not among the files the restore point recorded"
                    else:
                        why = mismatch(m.name, _sha256_stream(tar.extractfile(m)), want)
                if why:
                    found.append(f"{tar_path.name}: member {m.name!r} refused: {why}")
    except (OSError, tarfile.TarError, ValueError) as e:
        return [f"{tar_path.name}: cannot read the backup: {e}"]
    held = {m.name for m in members}
    found += [
        f"{tar_path.name}: {rel} is in its manifest but not in the backup"
        for rel in manifest.get("files", ())
        if ROOT + rel not in held
    ]
    return found


def _sha256_stream(stream) -> str:
    digest = hashlib.sha256()
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def extract(tar_path: Path, prefix: str) -> list[str]:
    """Put a backup's files back under `prefix`, byte for byte, with their modes and mtimes, and read each
    back to check its sha256. Returns the problems; when refusals() has any, nothing at all is written."""
    refused = refusals(tar_path, prefix)
    if refused:
        return refused
    problems = []
    try:
        with tarfile.open(tar_path) as tar:
            want = expected_hashes(tar, read_manifest(tar_path) or {})
            for member in tar.getmembers():
                if member.name == MANIFEST:
                    continue
                problem = _put(tar, member, prefix)
                if problem is None and member.isreg():
                    problem = _verify_written(member, prefix, want)
                if problem:
                    problems.append(f"{tar_path.name}: {member.name}: {problem}")
    except (OSError, tarfile.TarError) as e:
        problems.append(f"{tar_path.name}: cannot read the backup: {e}")
    return problems


def _verify_written(member: tarfile.TarInfo, prefix: str, want: dict) -> Optional[str]:
    """The file as it is on disk now has the bytes the restore point recorded."""
    target = os.path.join(prefix, member.name[len(ROOT) :])
    try:
        digest = _sha256_file(target)
    except OSError as e:
        return f"cannot read it back: {e}"
    problem = mismatch(member.name, digest, want)
    return f"not as recorded after it was written ({problem})" if problem else None


def _put(tar: tarfile.TarFile, member: tarfile.TarInfo, prefix: str) -> Optional[str]:
    target = os.path.normpath(os.path.join(prefix, member.name[len(ROOT) :]))
    if not inside(target, prefix):  # checked again: a link extracted earlier may now be on the way
        return "would be written outside the environment's prefix"
    try:
        if member.isdir():
            os.makedirs(target, exist_ok=True)
            return None
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if member.issym():
            if os.path.lexists(target) and not os.path.isdir(target):
                os.unlink(target)
            os.symlink(member.linkname, target)
            os.utime(target, (member.mtime, member.mtime), follow_symlinks=False)
            return None
    except OSError as e:
        return str(e)
    temp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.gpudoctor-part")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        source = tar.extractfile(member)
        with os.fdopen(os.open(temp, flags, 0o600), "wb") as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
            os.fchmod(out.fileno(), member.mode & 0o777)
        os.utime(temp, (member.mtime, member.mtime))
        os.replace(temp, target)  # a new inode: a hard link the old file was (uv's cache) is untouched
    except OSError as e:
        if os.path.lexists(temp):
            os.unlink(temp)
        return str(e)
    return None
