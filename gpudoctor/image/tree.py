"""The layers merged as the runtime would stack them, keeping only what an image check reads.

Each layer's members are looked at once, by name: the few files whose content is needed are read (each
under its limit), the links under the directories of interest and the names of the CUDA libraries, Python
interpreters and metadata folders are noted, everything else is skipped without being held. Whiteouts
(`.wh.NAME`, and `.wh..wh..opq` for an opaque directory) remove what the layers below put there, applied
at the end of the layer that holds them. A member that must be read but is over its limit is marked, and
refused only if it is still there when the last layer is read (a later layer may replace it).
"""

from __future__ import annotations

import posixpath
import re
from typing import NamedTuple, Optional

from gpudoctor.host import pyinspect
from gpudoctor.image.tarwalk import DIR, FILE, HARDLINK, SYMLINK, Member, TarWalker
from gpudoctor.image.view import FILES, MAX_FILE, ImageError

LD_CACHE = "/etc/ld.so.cache"
MAX_LD_CACHE = 8 * 1024 * 1024
MAX_METADATA = 1024 * 1024
MAX_RECORD = 16 * 1024 * 1024
MAX_DPKG_STATUS = 16 * 1024 * 1024  # read when no larger; skipped, not refused, when larger
DPKG_STATUS = "/var/lib/dpkg/status"
MAX_PYVENV_CFG = 16 * 1024  # as pyinspect reads it
MAX_INSTALLER = 256  # as pyinspect reads it
MAX_LINK_HOPS = 40  # as the kernel's MAXSYMLINKS
# Links noted: those under these roots (the view reports the ones under INTEREST_ROOTS and site trees).
LINK_ROOTS = ("/usr/", "/lib", "/opt/", "/etc/", "/bin/", "/sbin/")
LINK_SKIP = ("/usr/share/",)
INTEREST_ROOTS = ("/usr/local/", "/usr/lib", "/lib", "/opt/")
FILE_NAMES = frozenset(posixpath.basename(p) for p in FILES)
FILE_DEPTH = 5  # a FILES name deeper than this is not a candidate (/usr/local/cuda-12.4/version.json is 4)
BUILD_FILES = {rel for rels in pyinspect.BUILD_FILES.values() for rel in rels}
SITE_DIRS = ("site-packages", "dist-packages")
PYTHON_BIN = re.compile(r"/bin/python(\d(\.\d+)?)?$")
PYTHON_LIB = re.compile(r"^(.*)/lib/python(\d+\.\d+)$")
GLIBC_FILE = re.compile(r"/libc-(\d+\.\d+)\.so$")
REFUSE, TRUNCATE, SKIP = "refuse", "truncate", "skip"
OVERSIZE = object()  # a member over its limit: refused if still present at the end


class Entry(NamedTuple):
    layer: int
    kind: str  # FILE, DIR, SYMLINK
    data: object  # FILE: bytes read, None (name only) or OVERSIZE; SYMLINK: the target; DIR: None
    size: int
    limit: int  # for OVERSIZE: the limit it went over


def clean(name: str, where: str) -> str:
    """A layer member's name as an absolute path; a name with `..` is refused (no image can hold one)."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageError(f"{where}: refused: a member climbs out of the image's root ({name})")
    return "/" + "/".join(parts)


def _site_split(path: str) -> Optional[tuple[str, str]]:
    """(the site-packages directory, the rest) for a path under one, else None."""
    at = path.find("-packages/")
    while at != -1:
        start = path.rfind("/", 0, at) + 1
        if path[start : at + 9] in SITE_DIRS:
            return path[: at + 9], path[at + 10 :]
        at = path.find("-packages/", at + 1)
    return None


def _dist_key(folder: str) -> Optional[str]:
    if not folder.endswith((".dist-info", ".egg-info")):
        return None
    stem = folder.rsplit(".", 1)[0]
    return pyinspect._norm(stem.split("-", 1)[0]) if "-" in stem else None


class Tree:
    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.layer = 0

    # -- reading -------------------------------------------------------------------------------------
    def _limit(self, path: str) -> tuple[int, str]:
        """(how many bytes of this file to keep, what to do with a larger one: REFUSE it if it is still
        there at the end, TRUNCATE it as pyinspect's reads do, or SKIP it); (0, SKIP) for the rest."""
        if path == LD_CACHE:
            return MAX_LD_CACHE, REFUSE
        name = path[path.rfind("/") + 1 :]
        if name in FILE_NAMES and path.count("/") <= FILE_DEPTH:
            return MAX_FILE, REFUSE
        if name == "pyvenv.cfg" and path.count("/") <= FILE_DEPTH:
            return MAX_PYVENV_CFG, TRUNCATE
        if path == DPKG_STATUS:
            return MAX_DPKG_STATUS, SKIP
        if "-packages/" not in path:
            return 0, SKIP
        split = _site_split(path)
        if split is None:
            return 0, SKIP
        rest = split[1]
        if rest in BUILD_FILES:
            return pyinspect.MAX_BUILD_FILE, TRUNCATE
        folder, _, leaf = rest.partition("/")
        key = _dist_key(folder)
        if key is None or "/" in leaf or not key.startswith(pyinspect.INTERESTING):
            return 0, SKIP
        if leaf in ("METADATA", "PKG-INFO"):
            return MAX_METADATA, REFUSE
        if leaf == "INSTALLER":
            return MAX_INSTALLER, TRUNCATE
        if leaf == "RECORD" and key.startswith(pyinspect.RECORD_SCANNED):
            return MAX_RECORD, REFUSE
        return 0, SKIP

    def _note_dirs(self, path: str, kind: str) -> None:
        """Site directories and the metadata folders in them exist when anything under them does."""
        split = _site_split(path + "/") if kind == DIR else _site_split(path)
        if split is None:
            return
        site, rest = split
        if site not in self.entries:
            self.entries[site] = Entry(self.layer, DIR, None, 0, 0)
        folder = rest.split("/", 1)[0]
        if folder.endswith((".dist-info", ".egg-info")):
            key = f"{site}/{folder}"
            if kind == FILE and "/" not in rest:  # an .egg-info file (distutils wrote one): named only
                self.entries[key] = Entry(self.layer, FILE, None, 0, 0)
            elif key not in self.entries:
                self.entries[key] = Entry(self.layer, DIR, None, 0, 0)

    def add_layer(self, walker: TarWalker, where: str) -> None:
        """Read one layer's members (in the order of the archive) on top of those below."""
        self.layer += 1
        deleted: set = set()
        opaque: set = set()
        entries = self.entries
        for m in walker:
            path = clean(m.name, where)
            name = path[path.rfind("/") + 1 :]
            if name.startswith(".wh."):
                parent = path[: len(path) - len(name) - 1] or "/"
                if name == ".wh..wh..opq":
                    opaque.add(parent)
                else:
                    deleted.add(posixpath.join(parent, name[4:]))
                continue
            self._member(walker, m, path, name, where, entries)
        if deleted or opaque:
            self._whiteout(deleted, opaque)

    def _member(self, walker: TarWalker, m: Member, path: str, name: str, where: str, entries: dict) -> None:
        kind = m.kind
        if kind == DIR:
            below = entries.get(path)
            if below is not None and below.kind != DIR:
                del entries[path]  # a directory now where a link or file of a lower layer was
            if name in SITE_DIRS or name == "conda-meta" or PYTHON_LIB.match(path):
                entries[path] = Entry(self.layer, DIR, None, 0, 0)
            if "-packages/" in path or name in SITE_DIRS:
                self._note_dirs(path, DIR)  # the site directory, and a metadata folder directly in it
            return
        if kind == SYMLINK:
            if "-packages/" in path:
                entries[path] = Entry(self.layer, SYMLINK, m.linkname, 0, 0)
                self._note_dirs(path, SYMLINK)
            elif path.startswith(LINK_ROOTS) and not path.startswith(LINK_SKIP):
                entries[path] = Entry(self.layer, SYMLINK, m.linkname, 0, 0)
            else:
                entries.pop(path, None)
            return
        if kind == HARDLINK:
            target = entries.get(clean(m.linkname, where))
            if target is not None and target.kind == FILE:
                entries[path] = target._replace(layer=self.layer)
                return
            kind = FILE  # its content is another member's: noted by name only
        if kind != FILE:
            return
        self._file(walker, m, path, name, entries)
        if "-packages/" in path:
            self._note_dirs(path, FILE)
        elif "/conda-meta/" in path:  # a conda prefix, though the layer has no entry for the directory
            meta = path[: path.index("/conda-meta/") + 11]
            if meta not in entries:
                entries[meta] = Entry(self.layer, DIR, None, 0, 0)

    def _file(self, walker: TarWalker, m: Member, path: str, name: str, entries: dict) -> None:
        limit, over = self._limit(path)
        if limit:
            if m.size <= limit or over == TRUNCATE:
                entries[path] = Entry(self.layer, FILE, walker.read(limit), m.size, limit)
            elif over == REFUSE:
                entries[path] = Entry(self.layer, FILE, OVERSIZE, m.size, limit)
            else:
                entries.pop(path, None)
        elif ".so" in name and _is_library(name):
            entries[path] = Entry(self.layer, FILE, None, m.size, 0)
        elif "/bin/python" in path and PYTHON_BIN.search(path):
            entries[path] = Entry(self.layer, FILE, None, m.size, 0)
        elif name.startswith("libc-") and GLIBC_FILE.search(path):
            entries[path] = Entry(self.layer, FILE, None, m.size, 0)
        else:
            entries.pop(path, None)  # what a lower layer had here (a link, a kept file) is replaced

    def _whiteout(self, deleted: set, opaque: set) -> None:
        keep = {}
        for path, e in self.entries.items():
            if e.layer < self.layer and _hidden(path, deleted, opaque):
                continue
            keep[path] = e
        self.entries = keep

    # -- answering -----------------------------------------------------------------------------------
    def resolve(self, path: str) -> Optional[str]:
        """The path with every link in it followed (inside the image; `..` stops at its root); None on a
        loop."""
        parts = [p for p in path.split("/") if p]
        done = ""
        hops = i = 0
        while i < len(parts):
            cur = f"{done}/{parts[i]}"
            e = self.entries.get(cur)
            if e is not None and e.kind == SYMLINK:
                hops += 1
                if hops > MAX_LINK_HOPS:
                    return None
                base = "/" if e.data.startswith("/") else (done or "/")
                joined = posixpath.normpath(posixpath.join(base, e.data))
                joined = "/" + joined.lstrip("/")
                parts = [p for p in joined.split("/") if p] + parts[i + 1 :]
                done, i = "", 0
                continue
            done, i = cur, i + 1
        return done or "/"

    def get(self, path: str) -> Optional[Entry]:
        real = self.resolve(path)
        return None if real is None else self.entries.get(real)

    def content(self, path: str, where: str) -> Optional[bytes]:
        """A kept file's bytes through the image's links; None when absent or noted by name only."""
        e = self.get(path)
        if e is None or e.kind != FILE or e.data is None:
            return None
        if e.data is OVERSIZE:
            raise ImageError(f"{where}: refused: {path} is {e.size} bytes, over its limit of {e.limit}")
        return e.data

    def exists(self, path: str) -> bool:
        return self.get(path) is not None

    def lexists(self, path: str) -> bool:
        """Whether the path is there, a dangling link included (a venv's python whose base is not)."""
        parent, _, name = path.rpartition("/")
        real = self.resolve(parent or "/")
        return real is not None and f"{real.rstrip('/')}/{name}" in self.entries

    def links(self) -> dict:
        return {
            p: e.data
            for p, e in sorted(self.entries.items())
            if e.kind == SYMLINK and (p.startswith(INTEREST_ROOTS) or "-packages/" in p)
        }

    def libraries(self) -> list:
        return sorted(
            p
            for p, e in self.entries.items()
            if e.kind in (FILE, SYMLINK) and ".so" in p[p.rfind("/") :] and _is_library(p[p.rfind("/") + 1 :])
        )


def _is_library(name: str) -> bool:
    low = name.lower()
    return ".so" in low and any(m in low for m in pyinspect.LIB_MARKERS)


def _hidden(path: str, deleted: set, opaque: set) -> bool:
    if path in deleted:
        return True
    parent = path
    while parent not in ("", "/"):
        parent = parent[: parent.rfind("/")] or "/"
        if parent in deleted or parent in opaque:
            return True
    return False
