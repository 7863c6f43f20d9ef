"""A blob's bytes as the tar walker reads them: a region of a file (seeking past what is skipped), or the
decompressed stream of a gzip or zstd blob, hashed as it is read and checked for decompression bombs.

Each blob is read once, front to back, in chunks of CHUNK bytes: memory stays at a few chunks whatever
the blob's size. gzip is inflated by zlib in this process; zstd by the `zstd -dc` binary (no zstd module is
required), fed from a thread, time-boxed like every child gpudoctor starts.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator
from typing import BinaryIO, Optional

from gpudoctor.image.tarwalk import TarError
from gpudoctor.image.view import ImageError

CHUNK = 1024 * 1024
BOMB_FLOOR = 256 * 1024 * 1024  # below this many decompressed bytes no ratio is refused
BOMB_RATIO = 100
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def new_hash(digest: str, where: str):
    """The hashlib object for a "sha256:<hex>" (or sha512) digest; ImageError for any other form."""
    algorithm, _, hexa = digest.partition(":")
    lengths = {"sha256": 64, "sha512": 128}
    if algorithm not in lengths or len(hexa) != lengths[algorithm] or hexa.strip("0123456789abcdef"):
        raise ImageError(f"{where}: {digest!r} is not a sha256 or sha512 digest")
    return hashlib.new(algorithm)


class FileRegion:
    """`size` bytes of an open file from `offset`: read, and skip by seeking."""

    def __init__(self, f: BinaryIO, offset: int, size: int) -> None:
        self.f, self.start, self.size, self.pos = f, offset, size, 0

    def read(self, n: int) -> bytes:
        n = max(0, min(n, self.size - self.pos))
        self.f.seek(self.start + self.pos)
        data = self.f.read(n)
        self.pos += len(data)
        return data

    def skip(self, n: int) -> None:
        if self.pos + n > self.size:
            raise TarError("the archive ends inside a member")
        self.pos += n


class ChunkStream:
    """A forward-only stream over an iterator of byte chunks (the decompressor's output)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.buf = b""
        self.pos = 0

    def read(self, n: int) -> bytes:
        end = self.pos + n
        if end <= len(self.buf):
            data = self.buf[self.pos : end]
            self.pos = end
            return data
        parts = [self.buf[self.pos :]]
        want = n - len(parts[0])
        self.buf, self.pos = b"", 0
        for chunk in self.chunks:
            if len(chunk) >= want:
                parts.append(chunk[:want])
                self.buf, self.pos = chunk, want
                break
            parts.append(chunk)
            want -= len(chunk)
        return b"".join(parts)

    def skip(self, n: int) -> None:
        left = len(self.buf) - self.pos
        if n <= left:
            self.pos += n
            return
        n -= left
        self.buf, self.pos = b"", 0
        for chunk in self.chunks:
            if len(chunk) > n:
                self.buf, self.pos = chunk, n
                return
            n -= len(chunk)
        if n:
            raise TarError("the archive ends inside a member")

    def drain(self) -> None:
        """Read what is left (the end-of-archive padding), so the whole blob is hashed."""
        self.buf, self.pos = b"", 0
        for _ in self.chunks:
            pass


class Checked:
    """Counts and hashes a blob's raw bytes as they are read; `verify()` at the end."""

    def __init__(self, raw: FileRegion, digest: Optional[str], where: str) -> None:
        self.raw, self.digest, self.where = raw, digest, where
        self.hash = new_hash(digest, where) if digest else None
        self.count = 0

    def read(self, n: int) -> bytes:
        data = self.raw.read(n)
        if self.hash is not None:
            self.hash.update(data)
        self.count += len(data)
        return data

    def verify(self) -> None:
        if self.hash is not None and f"{self.hash.name}:{self.hash.hexdigest()}" != self.digest:
            raise ImageError(f"{self.where}: its content does not match its digest {self.digest}")


def _bomb(out: int, fed: int, where: str) -> None:
    if out > BOMB_FLOOR and out > BOMB_RATIO * max(fed, 1):
        raise ImageError(
            f"{where}: refused as a decompression bomb ({out} bytes out of {fed} compressed, over "
            f"{BOMB_RATIO}x past {BOMB_FLOOR // (1024 * 1024)} MiB)"
        )


def gunzip(src: Checked, deadline: float) -> Iterator[bytes]:
    """The decompressed chunks of a gzip blob (concatenated members included), at most CHUNK each."""
    d = zlib.decompressobj(31)
    out = 0
    data = src.read(CHUNK)
    while data:
        if time.monotonic() > deadline:
            raise ImageError(f"{src.where}: not read within the time allowed")
        try:
            chunk = d.decompress(data, CHUNK)
        except zlib.error as e:
            raise ImageError(f"{src.where}: not a valid gzip stream ({e})") from None
        out += len(chunk)
        _bomb(out, src.count, src.where)
        if chunk:
            yield chunk
        if d.eof:
            rest = d.unused_data or src.read(CHUNK)
            if not rest.startswith(GZIP_MAGIC):
                break  # trailing padding after the last member
            d = zlib.decompressobj(31)
            data = rest
            continue
        data = d.unconsumed_tail or src.read(CHUNK)
    else:
        if not d.eof:
            raise ImageError(f"{src.where}: the gzip stream is truncated")
    while src.read(CHUNK):  # hash what follows the last member too
        pass


def unzstd(src: Checked, deadline: float) -> Iterator[bytes]:
    """The decompressed chunks of a zstd blob, through `zstd -dc` (a child fed from a thread)."""
    zstd = shutil.which("zstd")
    if zstd is None:
        raise ImageError(f"{src.where}: a zstd layer, and no zstd binary on PATH to decompress it")
    proc = subprocess.Popen(
        [zstd, "-dc", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )

    def feed() -> None:
        try:
            while True:
                data = src.read(CHUNK)
                if not data:
                    break
                proc.stdin.write(data)
        except (OSError, ValueError):
            pass  # the child died, or was killed at the deadline: its exit status says which
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    # A child that stops answering is killed at the deadline: the read below then sees the end.
    timer = threading.Timer(max(0.0, deadline - time.monotonic()), proc.kill)
    timer.daemon = True
    timer.start()
    out = 0
    try:
        while True:
            if time.monotonic() > deadline:
                raise ImageError(f"{src.where}: zstd did not finish within the time allowed")
            chunk = proc.stdout.read1(CHUNK)
            if not chunk:
                break
            out += len(chunk)
            _bomb(out, src.count, src.where)
            yield chunk
        feeder.join(max(0.0, deadline - time.monotonic()))
        rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        if time.monotonic() > deadline:
            raise ImageError(f"{src.where}: zstd did not finish within the time allowed")
        if rc != 0:
            first = (proc.stderr.read(4096).decode("utf-8", "replace").strip().splitlines() or [""])[0]
            raise ImageError(f"{src.where}: zstd failed: {first or f'exit status {rc}'}")
    except subprocess.TimeoutExpired:
        raise ImageError(f"{src.where}: zstd did not finish within the time allowed") from None
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            pipe.close()
