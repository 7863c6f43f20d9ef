"""Where an image's files are: an OCI layout directory, or a tar archive of one (or of `docker save`).

A Store answers by name ("index.json", "blobs/sha256/<hex>", "<id>/layer.tar"): the size, a small file's
bytes (limited and, given its digest, verified), a region of the file to stream a layer from. A tar archive
is indexed once by walking its headers (nothing is extracted); its members may not climb out of it (`..`,
absolute names) and its links may only name another member inside it (the legacy `docker save` writes a
symlink for a layer it already wrote); a directory's files may not resolve outside it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from typing import BinaryIO, Optional

from gpudoctor.image.streams import GZIP_MAGIC, ZSTD_MAGIC, FileRegion, new_hash
from gpudoctor.image.tarwalk import DIR, FILE, SYMLINK, TarError, TarWalker
from gpudoctor.image.view import ImageError

MAX_JSON = 4 * 1024 * 1024  # index, manifest, config
MAX_LINK_HOPS = 16


def _clean(name: str, where: str) -> str:
    """A member name as a relative path ("./a/b/" -> "a/b"); `..` and absolute names are refused."""
    if name.startswith("/"):
        raise ImageError(f"{where}: refused: the archive names an absolute path ({name})")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageError(f"{where}: refused: a member climbs out of the archive ({name})")
    return "/".join(parts)


class Store:
    where = ""

    def size(self, name: str) -> Optional[int]:
        raise NotImplementedError

    def region(self, name: str) -> FileRegion:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def has(self, name: str) -> bool:
        return self.size(name) is not None

    def read(self, name: str, limit: int = MAX_JSON, digest: Optional[str] = None) -> bytes:
        """A small file whole; ImageError when it is missing, over `limit`, or does not match `digest`."""
        size = self.size(name)
        if size is None:
            raise ImageError(f"{self.where}: {name} is missing from the image")
        if size > limit:
            raise ImageError(f"{self.where}: refused: {name} is {size} bytes, over its limit of {limit}")
        data = self.region(name).read(size)
        if digest is not None:
            h = new_hash(digest, f"{self.where}: {name}")
            h.update(data)
            if f"{h.name}:{h.hexdigest()}" != digest:
                raise ImageError(f"{self.where}: {name} does not match its digest {digest}")
        return data


class DirStore(Store):
    def __init__(self, root: str, where: str) -> None:
        self.root = os.path.realpath(root)
        self.where = where
        self.files: list[BinaryIO] = []

    def _path(self, name: str) -> str:
        path = os.path.realpath(os.path.join(self.root, _clean(name, self.where)))
        if not path.startswith(self.root + os.sep):
            raise ImageError(f"{self.where}: refused: {name} resolves outside the image directory")
        return path

    def size(self, name: str) -> Optional[int]:
        try:
            st = os.stat(self._path(name))
        except OSError:
            return None
        return st.st_size if os.path.isfile(self._path(name)) else None

    def region(self, name: str) -> FileRegion:
        f = open(self._path(name), "rb")  # noqa: SIM115 - closed with the store
        self.files.append(f)
        return FileRegion(f, 0, os.fstat(f.fileno()).st_size)

    def close(self) -> None:
        for f in self.files:
            f.close()


class TarStore(Store):
    def __init__(self, path: str, where: str) -> None:
        self.where = where
        self.f = open(path, "rb")  # noqa: SIM115 - closed with the store
        try:
            self.members = self._index()
        except BaseException:
            self.f.close()
            raise

    def _index(self) -> dict:
        head = self.f.read(4)
        if head.startswith(GZIP_MAGIC) or head.startswith(ZSTD_MAGIC):
            raise ImageError(f"{self.where}: a compressed archive: decompress it first (gzip -d / zstd -d)")
        total = os.fstat(self.f.fileno()).st_size
        whole = FileRegion(self.f, 0, total)
        members: dict = {}
        links: dict = {}
        walker = TarWalker(whole)
        try:
            for m in walker:
                name = _clean(m.name, self.where)
                if m.kind == FILE:
                    members[name] = (whole.pos, m.size)
                elif m.kind == SYMLINK:
                    links[name] = m.linkname
                elif m.kind == DIR or not name:
                    continue
                else:
                    raise ImageError(f"{self.where}: refused: {m.kind} member {m.name} in the archive")
        except TarError as e:
            raise ImageError(f"{self.where}: not a readable tar archive ({e})") from None
        for name, target in links.items():
            members[name] = members[self._follow(name, target, links, members)]
        return members

    def _follow(self, name: str, target: str, links: dict, members: dict) -> str:
        """The regular member a symlink in the archive ends at; a link out of the archive is refused."""
        seen = name
        for _ in range(MAX_LINK_HOPS):
            if target.startswith("/"):
                raise self._out(seen, target)
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
            if joined == ".." or joined.startswith("../"):
                raise self._out(seen, target)
            if joined in members:
                return joined
            if joined not in links:
                raise ImageError(f"{self.where}: refused: a link names no member ({seen} -> {target})")
            name, target = joined, links[joined]
        raise ImageError(f"{self.where}: refused: a link loop at {seen}")

    def _out(self, name: str, target: str) -> ImageError:
        return ImageError(f"{self.where}: refused: a link points out of the archive ({name} -> {target})")

    def size(self, name: str) -> Optional[int]:
        found = self.members.get(_clean(name, self.where))
        return None if found is None else found[1]

    def region(self, name: str) -> FileRegion:
        offset, size = self.members[_clean(name, self.where)]
        return FileRegion(self.f, offset, size)

    def close(self) -> None:
        self.f.close()


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
