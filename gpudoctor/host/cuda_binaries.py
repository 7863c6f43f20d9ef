"""Which GPU architectures the CUDA extensions of a Python environment carry code for, from their ELF files.

Runs as source text in a child process of the target interpreter (`python -I -B -c PROGRAM DIR...`, the
directories being the environment's import path as the inspection found it, user site-packages included),
so it uses the standard library alone and works on Python 3.8+. It lists the distributions installed in
those directories that depend on torch (a `Requires-Dist: torch...` line in their METADATA; torchvision and
torchaudio too), leaving out torch itself, triton and NVIDIA's own nvidia-* wheels; reads each one's RECORD
for shared libraries (`*.so`, `*.so.N`); and reads, in each library, the section `.nv_fatbin` that nvcc puts
the GPU code in: which compute capabilities it has machine code (SASS) for and which it has PTX for. A
library without that section has no GPU code of its own and is left out. It prints one JSON object.

Only headers are read, with positioned reads of a few bytes (an extension can be hundreds of MB with
thousands of fatbin containers): the ELF header, the section headers, the section names, and in `.nv_fatbin`
each container's 16-byte header and each entry's header. The number of files, containers and entries read is
bounded, and so is the time spent; a file that is cut short or malformed is reported as unreadable with the
reason, never raised.

The fatbin layout (verified on the extensions of tests/fixtures/cuda_ext, built with nvcc 13.5):
- container header, 16 bytes little endian: u32 magic 0xBA55ED50, u16 version (1), u16 header size (16), u64
  size of the entries that follow; containers follow each other in the section;
- entry header: u16 kind (1 PTX, 2 ELF cubin, 0x10 ELF cubin alternate), u16, u32 header size (64 to 120),
  u64 payload size (8-aligned; the next entry starts header size + payload size further on), ..., at 24 u16
  minor and u16 major version (of the cubin format, or of the PTX ISA), at 28 u32 compute capability x 10
  (80, 90, 100, 120), at 40 u64 flags: 0x100000 marks arch-specific code (sm_90a), 0x200000 family code
  (sm_100f), as nvcc 13.5 writes them.
Sources: GrigoryEvko/nvopen-tools@3b50e20e542bdef410c00d1f75cbc169b70dd15f:fatbin/FORMAT_SPECIFICATION.md
("Entry Structure", "Traversal Algorithm"); the section name: NVIDIA's include/fatbinary_section.h
(FATBIN_DATA_SECTION_NAME, in the nvidia-cuda-nvcc wheel); the flags: tests/fixtures/cuda_ext/build.sh.

    python -I -B gpudoctor/host/cuda_binaries.py /path/to/site-packages
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import time

FORMAT = 1
SECTION = b".nv_fatbin"
CONTAINER_MAGIC = 0xBA55ED50
KIND_PTX = 1
KINDS_SASS = (2, 0x10)
ARCH_SPECIFIC = 0x100000  # sm_90a
FAMILY_SPECIFIC = 0x200000  # sm_100f
DEPENDS_ON = "torch"
ALWAYS = ("torchvision", "torchaudio")  # torch's own companions, whatever their metadata says
EXCLUDED = ("torch", "triton", "pytorch-triton")  # plus every nvidia-* distribution
MAX_DISTRIBUTIONS = 500  # distributions depending on torch that are read
MAX_FILES = 1000  # shared libraries read, all distributions together
MAX_METADATA = 256 * 1024  # bytes of a METADATA file read: its header, where Requires-Dist is, comes first
MAX_RECORD = 8 * 1024 * 1024
MAX_SECTION_HEADERS = 4 * 1024 * 1024  # bytes of section header table
MAX_NAMES = 4 * 1024 * 1024  # bytes of the section-name string table
MAX_CONTAINERS = 50_000  # per file (libcublasLt.so.13 has 2,775)
MAX_ENTRIES = 200_000  # per file
MAX_ENTRY_HEADER = 1024
TIME_BUDGET = 8.0  # seconds; then the answer says which files were not read


class Unreadable(Exception):
    """A file that could not be read as an ELF shared library, with the reason."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pread(fd: int, size: int, offset: int, size_of_file: int) -> bytes:
    """Exactly `size` bytes at `offset`, or Unreadable when the file is shorter."""
    if offset < 0 or size < 0 or offset + size > size_of_file:
        raise Unreadable(f"cut short: {size} bytes at offset {offset} are past its end ({size_of_file})")
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise Unreadable(f"cut short: read {len(data)} of {size} bytes at offset {offset}")
    return data


def elf_section(fd: int, size_of_file: int, name: bytes):
    """(offset, size) of the section called `name` of a 64-bit little-endian ELF file, or None when it has
    none; None too for a file that is not ELF at all (not a shared library). Unreadable for a malformed
    one."""
    ident = os.pread(fd, 64, 0)
    if ident[:4] != b"\x7fELF":
        return None
    if len(ident) < 64:
        raise Unreadable("cut short: the ELF header is incomplete")
    if ident[4] != 2 or ident[5] != 1:
        raise Unreadable("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", ident, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if shoff == 0 or shnum == 0:
        return None  # no section headers (sstrip): nothing to find the fatbin by
    if shentsize < 64 or shnum * shentsize > MAX_SECTION_HEADERS or shstrndx >= shnum:
        raise Unreadable(f"malformed section headers ({shnum} of {shentsize} bytes, names in {shstrndx})")
    table = _pread(fd, shnum * shentsize, shoff, size_of_file)

    def header(index: int):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        return struct.unpack_from("<IIQQQQ", table, index * shentsize)

    names_at, names_size = header(shstrndx)[4], header(shstrndx)[5]
    if names_size > MAX_NAMES:
        raise Unreadable(f"malformed section names table ({names_size} bytes)")
    names = _pread(fd, names_size, names_at, size_of_file)
    for index in range(shnum):
        name_at, kind, _flags, _addr, offset, size = header(index)
        end = names.find(b"\0", name_at)
        if names[name_at:end] == name and kind != 8:  # 8: SHT_NOBITS, no bytes in the file
            if offset + size > size_of_file:
                raise Unreadable(f"cut short: its {name.decode()} section ends past the end of the file")
            return offset, size
    return None


def fatbin_entries(fd: int, size_of_file: int, offset: int, size: int) -> list:
    """(kind, compute capability x 10, flags) of every entry of the fatbin containers in the section at
    `offset`, reading only their headers. Unreadable when a container or entry runs past its bounds."""
    found = []
    at, end, containers = offset, offset + size, 0
    while at + 16 <= end:
        containers += 1
        if containers > MAX_CONTAINERS:
            raise Unreadable(f"more than {MAX_CONTAINERS} fatbin containers: not all read")
        magic, _version, header_size, body = struct.unpack("<IHHQ", _pread(fd, 16, at, size_of_file))
        if magic != CONTAINER_MAGIC:
            if magic == 0 and header_size == 0 and body == 0:  # padding between containers
                at += 8
                continue
            raise Unreadable(f"no fatbin container at offset {at} (magic {magic:#x})")
        if header_size < 16 or at + header_size + body > end:
            raise Unreadable(f"the fatbin container at offset {at} runs past its section")
        entry, last = at + header_size, at + header_size + body
        while entry + 64 <= last:
            if len(found) >= MAX_ENTRIES:
                raise Unreadable(f"more than {MAX_ENTRIES} fatbin entries: not all read")
            head = _pread(fd, 48, entry, size_of_file)
            kind, _unused, entry_size, payload = struct.unpack_from("<HHIQ", head, 0)
            arch = struct.unpack_from("<I", head, 28)[0]
            flags = struct.unpack_from("<Q", head, 40)[0]
            if entry_size < 64 or entry_size > MAX_ENTRY_HEADER or entry + entry_size + payload > last:
                raise Unreadable(f"malformed fatbin entry at offset {entry}")
            found.append((kind, arch, flags))
            entry += entry_size + payload
        at = last
    return found


def arch_name(prefix: str, arch: int, flags: int) -> str:
    """sm_90, sm_90a, sm_100f, compute_90 from an entry's compute capability x 10 and its flags."""
    suffix = "a" if flags & ARCH_SPECIFIC else "f" if flags & FAMILY_SPECIFIC else ""
    return f"{prefix}_{arch}{suffix}"


def _arch_key(name: str):
    digits = re.search(r"\d+", name)
    return (int(digits.group()) if digits else 0, name)


def fatbin_archs(path: str):
    """(SASS architectures, PTX architectures) of the GPU code a shared library carries, e.g.
    (["sm_80", "sm_90"], ["compute_90"]); None when it has no `.nv_fatbin` section (no GPU code of its own,
    or not an ELF file). Unreadable (with the reason) for a file that cannot be read or is malformed."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None  # listed in RECORD but gone: nothing to load
    except OSError as e:
        raise Unreadable(e.strerror or str(e)) from None
    try:
        size_of_file = os.fstat(fd).st_size
        section = elf_section(fd, size_of_file, SECTION)
        if section is None:
            return None
        sass, ptx = set(), set()
        for kind, arch, flags in fatbin_entries(fd, size_of_file, *section):
            if kind in KINDS_SASS:
                sass.add(arch_name("sm", arch, flags))
            elif kind == KIND_PTX:
                ptx.add(arch_name("compute", arch, flags))
        return sorted(sass, key=_arch_key), sorted(ptx, key=_arch_key)
    except OSError as e:
        raise Unreadable(e.strerror or str(e)) from None
    finally:
        os.close(fd)


# --- the environment's distributions ----------------------------------------------------------------------


def _read_text(path: str, limit: int):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


def requires(metadata: str) -> list:
    """The distribution names of a METADATA file's Requires-Dist lines (its header ends at the first blank
    line), normalised: `Requires-Dist: torch (>=2.0)` and `Requires-Dist: torch>=2.0; extra == "gpu"`
    both give "torch"."""
    names = []
    for line in metadata.splitlines():
        if not line.strip():
            break
        if line.lower().startswith("requires-dist:"):
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line.split(":", 1)[1])
            if m:
                names.append(_norm(m.group(1)))
    return names


def _field(metadata: str, name: str) -> str:
    for line in metadata.splitlines():
        if not line.strip():
            break
        if line.lower().startswith(name.lower() + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def depends_on_torch(name: str, metadata: str) -> bool:
    key = _norm(name)
    if key in EXCLUDED or key.startswith("nvidia-"):
        return False
    return key in ALWAYS or DEPENDS_ON in requires(metadata)


def shared_libraries(record: str) -> list:
    """The paths of a RECORD file (CSV: path,hash,size) that name shared libraries, in its order."""
    found = []
    for line in record.splitlines():
        path = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line
        path = path.strip().strip('"')
        if re.search(r"\.so(\.\d+)*$", path) and path not in found:
            found.append(path)
    return found


def distributions(directories: list) -> list:
    """(name, version, dist-info folder) of each distribution that depends on torch in `directories`, the
    first of a name on the path winning (as it does for imports)."""
    seen, found = set(), []
    for directory in directories:
        try:
            folders = sorted(os.listdir(directory or "."))
        except OSError:
            continue
        for folder in folders:
            if not folder.endswith(".dist-info"):
                continue
            full = os.path.join(directory or ".", folder)
            metadata = _read_text(os.path.join(full, "METADATA"), MAX_METADATA)
            if metadata is None:
                continue
            name = _field(metadata, "Name") or folder[: -len(".dist-info")].split("-")[0]
            if _norm(name) in seen:
                continue
            seen.add(_norm(name))
            if depends_on_torch(name, metadata):
                found.append((name, _field(metadata, "Version"), full))
    return found


def scan(directories: list, budget: float = TIME_BUDGET) -> dict:
    """What the program prints: the CUDA extensions found, the files that could not be read, and what was
    left unread (a limit reached)."""
    started = time.monotonic()
    out = {"format": FORMAT, "python": sys.version.split()[0], "extensions": [], "unreadable": []}
    out["distributions"], out["files"], out["not_read"] = 0, 0, None
    dists = distributions(directories)
    if len(dists) > MAX_DISTRIBUTIONS:
        out["not_read"] = f"more than {MAX_DISTRIBUTIONS} distributions depend on torch"
        dists = dists[:MAX_DISTRIBUTIONS]
    for name, version, folder in dists:
        out["distributions"] += 1
        record = _read_text(os.path.join(folder, "RECORD"), MAX_RECORD) or ""
        site = os.path.dirname(folder)
        for relative in shared_libraries(record):
            if out["files"] >= MAX_FILES:
                out["not_read"] = f"more than {MAX_FILES} shared libraries in the distributions using torch"
                return out
            if time.monotonic() - started > budget:
                out["not_read"] = f"reading took more than {budget:g} s"
                return out
            out["files"] += 1
            path = os.path.normpath(os.path.join(site, relative))
            item = {"distribution": name, "version": version, "file": path}
            try:
                archs = fatbin_archs(path)
            except Unreadable as e:
                item["reason"] = str(e)
                out["unreadable"].append(item)
                continue
            if archs is not None:
                item["sass"], item["ptx"] = archs
                out["extensions"].append(item)
    return out


def main(argv: list) -> None:
    data = json.dumps(scan(argv[1:])).encode("utf-8")
    while data:
        data = data[os.write(1, data) :]


def source() -> str:
    """This module as a program for `python -c`, given the directories to scan as its arguments."""
    with open(__file__, encoding="utf-8") as f:
        return f.read()


if __name__ == "__main__":
    main(sys.argv)
