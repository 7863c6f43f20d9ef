"""A tar reader that walks the headers itself: 512-byte blocks, ustar, pax and GNU long names.

Python's tarfile builds a TarInfo object per member and reads pax headers through the email-like parser;
over an image of 100,000 files that is most of the time a read takes. This walker parses only the fields an
image needs (name, type, size, link target) and leaves each member's data to the caller, who reads what it
keeps and lets the walker skip the rest: by seeking on a file, by discarding decompressed bytes on a stream.
Nothing is written anywhere. Malformed headers (a bad checksum, a size that is not a number, a long-name
record over its limit) raise TarError.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple, Protocol

BLOCK = 512
MAX_LONG_NAME = 64 * 1024  # a GNU 'L'/'K' record: a path, not a payload
MAX_PAX = 1024 * 1024  # a pax extended header
FILE, DIR, SYMLINK, HARDLINK, OTHER = "file", "dir", "symlink", "hardlink", "other"
NO_DATA = (b"1", b"2", b"3", b"4", b"5", b"6")
TYPES = {b"0": FILE, b"\0": FILE, b"7": FILE, b"5": DIR, b"2": SYMLINK, b"1": HARDLINK}


class TarError(ValueError):
    """The bytes are not a tar archive this reader accepts."""


class Stream(Protocol):
    def read(self, n: int) -> bytes: ...  # up to n bytes; fewer only at the end

    def skip(self, n: int) -> None: ...  # raises TarError when fewer than n bytes are left


class Member(NamedTuple):
    name: str  # as stored (pax or GNU long name applied), not normalised
    kind: str  # FILE, DIR, SYMLINK, HARDLINK or OTHER
    size: int  # bytes of data that follow the header
    linkname: str  # a link's target, "" otherwise


def _number(field: bytes) -> int:
    if field[:1] and field[0] & 0x80:  # GNU base-256, for sizes of 8 GiB and more
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.split(b"\0", 1)[0].strip(b" ")
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise TarError(f"a header field is not an octal number: {text[:20]!r}") from None


def _text(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _pax(data: bytes) -> dict:
    """A pax extended header's records, `LENGTH KEY=VALUE\\n` each."""
    out, at = {}, 0
    while at < len(data):
        space = data.find(b" ", at)
        if space == -1:
            break
        try:
            length = int(data[at:space])
        except ValueError:
            raise TarError("a pax record's length is not a number") from None
        if length <= 0 or at + length > len(data):
            raise TarError("a pax record runs past its header")
        record = data[space + 1 : at + length - 1]
        key, _, value = record.partition(b"=")
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        at += length
    return out


class TarWalker:
    """`for member in TarWalker(stream): ...` - inside the loop `read(limit)` returns the start of the current
    member's data; what is left of it is skipped when the loop moves on."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self._left = 0  # data bytes of the current member not yet read
        self._pad = 0

    def read(self, limit: int) -> bytes:
        n = min(limit, self._left)
        data = self.stream.read(n)
        if len(data) < n:
            raise TarError("the archive ends inside a member")
        self._left -= n
        return data

    def _data(self, size: int, limit: int, what: str) -> bytes:
        if size > limit:
            raise TarError(f"a {what} of {size} bytes (over {limit})")
        data = self.stream.read(size)
        if len(data) < size:
            raise TarError("the archive ends inside a member")
        self.stream.skip(-size % BLOCK)
        return data

    def __iter__(self) -> Iterator[Member]:
        long_name = long_link = None
        pax: dict = {}
        while True:
            if self._left or self._pad:
                self.stream.skip(self._left + self._pad)
                self._left = self._pad = 0
            block = self.stream.read(BLOCK)
            if len(block) < BLOCK:
                if not block:
                    return  # no end-of-archive blocks: tolerated, as GNU tar does
                raise TarError("the archive ends inside a header")
            if block.count(0) == BLOCK:
                return  # the end-of-archive marker
            stored = _number(block[148:156])
            if stored != sum(block) - sum(block[148:156]) + 8 * 32:
                raise TarError("a header's checksum does not match (not a tar archive, or a damaged one)")
            size = _number(block[124:136])
            flag = block[156:157]
            if flag in (b"x", b"g"):
                records = _pax(self._data(size, MAX_PAX, "pax header"))
                if flag == b"x":
                    pax = records
                continue
            if flag in (b"L", b"K"):
                value = _text(self._data(size, MAX_LONG_NAME, "long name"))
                if flag == b"L":
                    long_name = value
                else:
                    long_link = value
                continue
            name = _text(block[0:100])
            if block[257:263] == b"ustar\0":  # POSIX: a prefix field; GNU ("ustar  ") has none
                prefix = _text(block[345:500])
                if prefix:
                    name = prefix + "/" + name
            linkname = _text(block[157:257])
            name = pax.get("path", long_name or name)
            linkname = pax.get("linkpath", long_link or linkname)
            if "size" in pax:
                try:
                    size = int(pax["size"])
                except ValueError:
                    raise TarError("a pax size is not a number") from None
            kind = TYPES.get(flag, OTHER)
            if flag in NO_DATA:
                size = 0  # as tarfile does: links, directories and devices carry no data whatever size says
            long_name = long_link = None
            pax = {}
            self._left, self._pad = size, -size % BLOCK
            yield Member(name, kind, size, linkname)
