"""The layer merge: whiteouts, opaque directories, links followed inside the image, limits deferred."""

from __future__ import annotations

import io

import pytest

from gpudoctor.image.streams import FileRegion
from gpudoctor.image.tarwalk import TarWalker
from gpudoctor.image.tree import Tree
from gpudoctor.image.view import ImageError

from . import imagegen as g


def tree_of(*layers: dict) -> Tree:
    tree = Tree()
    for i, layer in enumerate(layers):
        data = g.layer_tar(layer)
        tree.add_layer(TarWalker(FileRegion(io.BytesIO(data), 0, len(data))), f"layer {i + 1}")
    return tree


def test_whiteouts_delete_from_lower_layers_only():
    tree = tree_of(
        {"/etc/os-release": b"A", "/opt/x/libcudnn.so.9": b"", "/opt/x/libnccl.so.2": b""},
        {"/opt/x": ("opaque",), "/opt/x/libcudart.so.12": b"", "/etc/os-release": ("whiteout",)},
    )
    assert tree.content("/etc/os-release", "t") is None
    assert tree.libraries() == ["/opt/x/libcudart.so.12"]


def test_a_file_added_again_above_a_whiteout_is_there():
    tree = tree_of(
        {"/etc/ld.so.conf": b"old"}, {"/etc/ld.so.conf": ("whiteout",)}, {"/etc/ld.so.conf": b"new"}
    )
    assert tree.content("/etc/ld.so.conf", "t") == b"new"


def test_links_resolve_inside_the_image_and_loops_end():
    tree = tree_of(
        {
            "/usr/local/cuda-12.4/version.json": b"{}",
            "/usr/local/cuda": ("link", "../../../../usr/local/cuda-12.4"),  # `..` stops at the root
            "/usr/local/a": ("link", "b"),
            "/usr/local/b": ("link", "a"),
        }
    )
    assert tree.content("/usr/local/cuda/version.json", "t") == b"{}"
    assert tree.resolve("/usr/local/a/x") is None


def test_an_oversized_file_is_refused_only_if_it_survives():
    big = b"x" * (64 * 1024 + 1)
    replaced = tree_of({"/etc/os-release": big}, {"/etc/os-release": b"ID=debian\n"})
    assert replaced.content("/etc/os-release", "t") == b"ID=debian\n"
    kept = tree_of({"/etc/os-release": big})
    with pytest.raises(ImageError, match="over its limit of 65536"):
        kept.content("/etc/os-release", "t")


def test_a_directory_or_file_replacing_a_lower_link_ends_it():
    tree = tree_of(
        {"/usr/local/cuda": ("link", "cuda-12.4"), "/opt/x/a": ("link", "b")},
        {"/usr/local/cuda": ("dir",), "/usr/local/cuda/version.json": b"{}", "/opt/x/a": b"plain"},
    )
    assert tree.content("/usr/local/cuda/version.json", "t") == b"{}"
    assert tree.links() == {}
