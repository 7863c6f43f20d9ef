"""Stores: an OCI directory and a tar archive answer by name; nothing may resolve outside them."""

from __future__ import annotations

import os

import pytest

from gpudoctor.image.store import DirStore, TarStore
from gpudoctor.image.view import ImageError

from . import imagegen as g


def test_a_directory_store_reads_by_name_and_refuses_escapes(tmp_path):
    root = g.write_dir(tmp_path / "oci", {"index.json": b"{}", "blobs/sha256/ab": b"x" * 10})
    os.symlink("/etc/hostname", root / "blobs" / "sha256" / "out")
    store = DirStore(str(root), "ref")
    assert store.read("index.json") == b"{}"
    assert store.size("blobs/sha256/ab") == 10 and store.size("nope") is None
    with pytest.raises(ImageError, match="climbs out"):
        store.size("../x")
    with pytest.raises(ImageError, match="resolves outside the image directory"):
        store.size("blobs/sha256/out")
    with pytest.raises(ImageError, match="over its limit of 5"):
        store.read("blobs/sha256/ab", 5)
    store.close()


def test_a_tar_store_indexes_members_without_extracting(tmp_path):
    path = g.write_tar(tmp_path / "a.tar", {"index.json": b"{}", "blobs/sha256/ab": b"y" * 600})
    before = set(os.listdir(tmp_path))
    store = TarStore(str(path), "ref")
    assert store.read("index.json") == b"{}"
    assert store.region("blobs/sha256/ab").read(1000) == b"y" * 600
    assert store.read("index.json", digest=g.digest(b"{}")) == b"{}"
    with pytest.raises(ImageError, match="does not match its digest"):
        store.read("index.json", digest=g.digest(b"[]"))
    store.close()
    assert set(os.listdir(tmp_path)) == before
