"""glibc's /etc/ld.so.cache, parsed as `ldconfig -p` prints it, from the bytes alone.

Two layouts exist (glibc elf/cache.c, sysdeps/generic/dl-cache.h): the new one, "glibc-ld.so.cache1.1",
alone (the default since glibc 2.32), or hidden after the old "ld.so-1.7.0" table (the "compat" format of
older releases). When the new one is there it is the one read, as ldconfig reads it. The file is in the byte
order of the machine that wrote it: the new header's flags say which (2 little, 3 big); when they say
nothing, the order whose entry count fits the file is taken.
"""

from __future__ import annotations

import struct

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
OLD_HEADER = 16  # char magic[11] (+1 pad), uint32 nlibs
OLD_ENTRY = 12  # int32 flags, uint32 key, uint32 value
NEW_HEADER = 48  # magic+version[20], nlibs, len_strings, uint8 flags, pad[3], extension_offset, unused[3]
NEW_ENTRY = 24  # int32 flags, uint32 key, uint32 value, uint32 osversion, uint64 hwcap
TYPES = ("libc4", "ELF", "libc5", "libc6")
REQUIRED = {
    0x0100: ",64bit",  # FLAG_SPARC_LIB64
    0x0200: ",IA-64",
    0x0300: ",x86-64",
    0x0400: ",64bit",  # FLAG_S390_LIB64
    0x0500: ",64bit",  # FLAG_POWERPC_LIB64
    0x0600: ",N32",
    0x0700: ",64bit",  # FLAG_MIPS64_LIBN64
    0x0800: ",x32",
    0x0900: ",hard-float",
    0x0A00: ",AArch64",
    0x0B00: ",soft-float",
    0x0C00: ",nan2008",
    0x0D00: ",N32,nan2008",
    0x0E00: ",64bit,nan2008",
    0x0F00: ",soft-float",  # FLAG_RISCV_FLOAT_ABI_SOFT
    0x1000: ",double-float",
}


class CacheError(ValueError):
    """Not an ld.so.cache, or one whose tables run past its end."""


def flags_text(flags: int, hwcap: int = 0) -> str:
    """What `ldconfig -p` prints between the parentheses (elf/cache.c print_entry). The required OS version
    is not shown: glibc 2.36's ldconfig no longer prints it (the kernel version check is gone)."""
    kind = flags & 0xFF
    text = TYPES[kind] if kind < len(TYPES) else "unknown"
    required = flags & 0xFF00
    if required:
        text += REQUIRED.get(required, f",{required}")
    if hwcap:
        text += f", hwcap: {hwcap:#018x}"
    return text


def _string(data: bytes, at: int) -> str:
    if not 0 <= at < len(data):
        raise CacheError(f"a string offset ({at}) lies outside the file")
    end = data.find(b"\0", at)
    if end == -1:
        raise CacheError("a string runs past the end of the file")
    return data[at:end].decode("utf-8", "replace")


def _order(data: bytes, start: int) -> str:
    flags = data[start + 28]
    if flags & 3 == 2:
        return "<"
    if flags & 3 == 3:
        return ">"
    for order in ("<", ">"):
        (nlibs,) = struct.unpack_from(order + "I", data, start + 20)
        if start + NEW_HEADER + nlibs * NEW_ENTRY <= len(data):
            return order
    raise CacheError("its entry table is longer than the file")


def _new(data: bytes, start: int) -> list[tuple[str, str, str]]:
    order = _order(data, start)
    (nlibs,) = struct.unpack_from(order + "I", data, start + 20)
    if start + NEW_HEADER + nlibs * NEW_ENTRY > len(data):
        raise CacheError("its entry table is longer than the file")
    out = []
    for flags, key, value, _osversion, hwcap in struct.iter_unpack(
        order + "iIIIQ", data[start + NEW_HEADER : start + NEW_HEADER + nlibs * NEW_ENTRY]
    ):
        # String offsets count from the start of the new header (elf/cache.c save_cache).
        out.append((_string(data, start + key), flags_text(flags, hwcap), _string(data, start + value)))
    return out


def _old_order(data: bytes) -> str:
    for order in ("<", ">"):
        (nlibs,) = struct.unpack_from(order + "I", data, 12)
        if OLD_HEADER + nlibs * OLD_ENTRY <= len(data):
            return order
    raise CacheError("its entry table is longer than the file")


def parse_ld_so_cache(data: bytes) -> list[tuple[str, str, str]]:
    """[(soname, flags as `ldconfig -p` prints them, path)] in file order; CacheError when not a cache."""
    if data.startswith(NEW_MAGIC):
        if len(data) < NEW_HEADER:
            raise CacheError("the file ends inside its header")
        return _new(data, 0)
    if not data.startswith(OLD_MAGIC) or len(data) < OLD_HEADER:
        raise CacheError("it starts with neither ld.so-1.7.0 nor glibc-ld.so.cache1.1")
    order = _old_order(data)
    (nlibs,) = struct.unpack_from(order + "I", data, 12)
    end = OLD_HEADER + nlibs * OLD_ENTRY
    new_at = (end + 7) & ~7  # ALIGN_CACHE: struct cache_file_new is 8-byte aligned
    if len(data) > new_at + NEW_HEADER and data[new_at : new_at + len(NEW_MAGIC)] == NEW_MAGIC:
        return _new(data, new_at)
    # The old format alone: offsets count from the end of its entry table.
    return [
        (_string(data, end + key), flags_text(flags), _string(data, end + value))
        for flags, key, value in struct.iter_unpack(order + "iII", data[OLD_HEADER:end])
    ]
