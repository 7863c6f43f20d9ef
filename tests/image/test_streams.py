"""Streams over blobs: gzip inflated in chunks (concatenated members too), zstd through the real binary,
digests checked as bytes pass, bombs refused."""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import subprocess
import time

import pytest

from gpudoctor.image import streams
from gpudoctor.image.streams import Checked, ChunkStream, FileRegion, gunzip, new_hash, unzstd
from gpudoctor.image.view import ImageError

DATA = bytes(range(256)) * 5000  # 1.28 MB: more than one chunk


def checked(blob: bytes, digest=None) -> Checked:
    return Checked(FileRegion(io.BytesIO(blob), 0, len(blob)), digest, "test")


def sha(blob: bytes) -> str:
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def test_gzip_round_trip_with_digest():
    blob = gzip.compress(DATA)
    src = checked(blob, sha(blob))
    assert b"".join(gunzip(src, time.monotonic() + 60)) == DATA
    src.verify()


def test_concatenated_gzip_members_are_one_stream():
    blob = gzip.compress(b"first ") + gzip.compress(b"second")
    assert b"".join(gunzip(checked(blob), time.monotonic() + 60)) == b"first second"


def test_a_wrong_digest_is_refused():
    blob = gzip.compress(DATA)
    src = checked(blob, sha(b"other"))
    b"".join(gunzip(src, time.monotonic() + 60))
    with pytest.raises(ImageError, match="does not match its digest"):
        src.verify()


def test_a_truncated_gzip_is_refused():
    blob = gzip.compress(DATA)
    with pytest.raises(ImageError, match="truncated"):
        b"".join(gunzip(checked(blob[: len(blob) // 2]), time.monotonic() + 60))


@pytest.mark.skipif(shutil.which("zstd") is None, reason="no zstd binary here")
def test_zstd_through_the_binary():
    blob = subprocess.run(
        ["zstd", "-q", "-c"], input=DATA, capture_output=True, check=True, timeout=60
    ).stdout
    src = checked(blob, sha(blob))
    assert b"".join(unzstd(src, time.monotonic() + 60)) == DATA
    src.verify()


@pytest.mark.skipif(shutil.which("zstd") is None, reason="no zstd binary here")
def test_zstd_failure_says_why():
    with pytest.raises(ImageError, match="zstd failed"):
        b"".join(unzstd(checked(b"\x28\xb5\x2f\xfd garbage"), time.monotonic() + 60))


def test_no_zstd_binary_is_an_error(monkeypatch):
    monkeypatch.setattr(streams.shutil, "which", lambda name: None)
    with pytest.raises(ImageError, match="no zstd binary on PATH"):
        next(unzstd(checked(b""), time.monotonic() + 60))


def test_the_bomb_rule(monkeypatch):
    monkeypatch.setattr(streams, "BOMB_FLOOR", 1024)
    blob = gzip.compress(b"\0" * (4 << 20))
    with pytest.raises(ImageError, match="decompression bomb"):
        b"".join(gunzip(checked(blob), time.monotonic() + 60))


def test_chunk_stream_reads_and_skips_across_chunks():
    s = ChunkStream(iter([b"abc", b"defg", b"hi"]))
    assert s.read(2) == b"ab"
    s.skip(3)
    assert s.read(3) == b"fgh"
    assert s.read(5) == b"i"


@pytest.mark.parametrize("digest", ["md5:00", "sha256:xyz", "sha256:" + "A" * 64, "sha256:../../etc"])
def test_only_sha_digests_are_names(digest):
    with pytest.raises(ImageError, match="is not a sha256 or sha512 digest"):
        new_hash(digest, "test")


@pytest.mark.skipif(shutil.which("zstd") is None, reason="no zstd binary here")
def test_zstd_past_its_deadline_is_stopped():
    proc = subprocess.run(["zstd", "-q", "-c"], input=DATA, capture_output=True, check=True, timeout=60)
    with pytest.raises(ImageError, match="zstd did not finish within the time allowed"):
        b"".join(unzstd(checked(proc.stdout), time.monotonic() - 1))
