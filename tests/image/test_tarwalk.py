"""The header walker on archives Python's tarfile writes (ustar, GNU long names, pax), and on damaged ones."""

from __future__ import annotations

import io
import tarfile

import pytest

from gpudoctor.image.streams import FileRegion
from gpudoctor.image.tarwalk import DIR, FILE, HARDLINK, SYMLINK, TarError, TarWalker

LONG = "usr/local/lib/python3.11/site-packages/" + "a" * 150 + "/METADATA"


def archive(fmt: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for name, kind, data, link in [
            ("etc", tarfile.DIRTYPE, b"", ""),
            ("etc/os-release", tarfile.REGTYPE, b"ID=ubuntu\n", ""),
            (LONG, tarfile.REGTYPE, b"Version: 1\n" * 100, ""),
            ("lib/a.so", tarfile.SYMTYPE, b"", "a.so.1"),
            ("lib/b.so", tarfile.LNKTYPE, b"", "etc/os-release"),
        ]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.size = kind, link, len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()


def walk(data: bytes, read: int = 1 << 20) -> list:
    walker = TarWalker(FileRegion(io.BytesIO(data), 0, len(data)))
    return [(m.name, m.kind, m.size, m.linkname, walker.read(read)) for m in walker]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_it_reads_what_tarfile_writes(fmt):
    """GNU stores the long name in an 'L' record, pax in a path= record; names come back as stored."""
    members = walk(archive(fmt))
    assert members == [
        ("etc/", DIR, 0, "", b""),
        ("etc/os-release", FILE, 10, "", b"ID=ubuntu\n"),
        (LONG, FILE, 1100, "", b"Version: 1\n" * 100),
        ("lib/a.so", SYMLINK, 0, "a.so.1", b""),
        ("lib/b.so", HARDLINK, 0, "etc/os-release", b""),
    ]


def test_a_partial_read_leaves_the_rest_skipped():
    members = walk(archive(tarfile.PAX_FORMAT), read=3)
    assert [m[4] for m in members] == [b"", b"ID=", b"Ver", b"", b""]


def test_a_damaged_header_is_refused():
    data = bytearray(archive(tarfile.GNU_FORMAT))
    data[10] ^= 0xFF
    with pytest.raises(TarError, match="checksum"):
        walk(bytes(data))


def test_a_truncated_member_is_refused():
    data = archive(tarfile.GNU_FORMAT)
    with pytest.raises(TarError):
        walk(data[:1000])
