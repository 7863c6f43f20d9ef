"""glibc's ld.so.cache parsed as `ldconfig -p` prints it: this machine's real cache and a committed real
aarch64 one (old table + new, tests/image/data/SOURCES.md), each checked against the real ldconfig."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpudoctor.image.ldcache import CacheError, parse_ld_so_cache

DATA = Path(__file__).parent / "data"


def ldconfig_p(cache: str) -> list:
    """The entries `ldconfig -p -C CACHE` prints, as (soname, flags, path)."""
    out = subprocess.run(["ldconfig", "-p", "-C", cache], capture_output=True, text=True, timeout=30).stdout
    entries = []
    for line in out.splitlines():
        if line.startswith("\t"):
            left, _, path = line.strip().partition(" => ")
            soname, _, flags = left.partition(" (")
            entries.append((soname, flags[:-1], path))
    return entries


needs_ldconfig = pytest.mark.skipif(shutil.which("ldconfig") is None, reason="no ldconfig on this machine")


@needs_ldconfig
@pytest.mark.parametrize(
    "cache", ["/etc/ld.so.cache", str(DATA / "ld.so.cache.aarch64"), str(DATA / "ld.so.cache.old-format")]
)
def test_it_reads_what_ldconfig_prints(cache):
    if not Path(cache).is_file():
        pytest.skip(f"{cache} does not exist here")
    expected = ldconfig_p(cache)
    assert expected  # the real tool printed entries
    assert parse_ld_so_cache(Path(cache).read_bytes()) == expected


def test_the_old_table_is_passed_over_for_the_new_one():
    data = (DATA / "ld.so.cache.aarch64").read_bytes()
    assert data.startswith(b"ld.so-1.7.0")
    entries = parse_ld_so_cache(data)
    assert len(entries) == 164
    assert entries[0] == ("libz.so.1", "libc6,AArch64", "/lib/libz.so.1")


@pytest.mark.parametrize(
    "data",
    [b"", b"not a cache at all", b"glibc-ld.so.cache1.1" + b"\xff" * 40, b"ld.so-1.7.0\0\xff\xff\xff\x7f"],
)
def test_what_is_not_a_cache_is_said_so(data):
    with pytest.raises(CacheError):
        parse_ld_so_cache(data)


def test_a_string_offset_out_of_the_file_is_refused():
    data = bytearray((DATA / "ld.so.cache.aarch64").read_bytes())
    cut = bytes(data[: len(data) // 2])  # the string table is cut off
    with pytest.raises(CacheError):
        parse_ld_so_cache(cut)


def test_a_big_endian_cache():
    """Both tables, big-endian: the old one with 180 entries (ldconfig rounds its count up to even), the new
    one with 179. No ldconfig here reads it: checked against its own string table instead (every soname and
    path in it, in pairs, and every path ending in its soname, as ldconfig writes them)."""
    data = (DATA / "ld.so.cache.powerpc").read_bytes()
    entries = parse_ld_so_cache(data)
    assert len(entries) == 179
    assert all(path.rsplit("/", 1)[1] == soname for soname, _, path in entries)
    # 32-bit PowerPC: no required-ABI suffix; the dynamic loader links no libc, so it is plain "ELF"
    assert {(s, f) for s, f, _ in entries if f != "libc6"} == {("ld.so.1", "ELF")}
    new = 16 + 180 * 12  # already 8-byte aligned
    assert data[new : new + 20] == b"glibc-ld.so.cache1.1"
    strings = [s.decode() for s in data[new + 48 + 179 * 24 :].split(b"\0") if s]
    assert [x for e in entries for x in (e[0], e[2])] == strings
