"""read_image end to end, on real archives the tests write (tests/image/imagegen.py): OCI layout directory
and tar, docker save (legacy and Docker 25+), gzip / zstd / uncompressed layers, whiteouts, amd64 and arm64,
a multi-platform index; and the hostile archives it must refuse, each with its reason."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
import zlib

import pytest

from gpudoctor.image import ImageError, read_image
from gpudoctor.image.reader import host_arch

from . import imagegen as g

SITE = g.SITE


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One torch image written in every format (small: a few KB each)."""
    root = tmp_path_factory.mktemp("images")
    image = g.torch_image()
    return {
        "oci-dir": g.write_dir(root / "oci", g.oci_files([image])),
        "oci-tar": g.write_tar(root / "oci.tar", g.oci_files([image])),
        "oci-none": g.write_dir(root / "none", g.oci_files([g.torch_image("none")])),
        "oci-zstd": g.write_dir(root / "zstd", g.oci_files([g.torch_image("zstd")])),
        "docker-legacy": g.write_tar(root / "legacy.tar", g.docker_files(g.torch_image("none"))),
        "docker-25": g.write_tar(root / "d25.tar", g.docker_files(g.torch_image("none"), legacy=False)),
    }


@pytest.mark.parametrize("kind", ["oci-dir", "oci-tar", "oci-none", "oci-zstd", "docker-legacy", "docker-25"])
def test_every_format_gives_the_same_view(built, kind):
    if kind == "oci-zstd" and shutil.which("zstd") is None:
        pytest.skip("no zstd binary here")
    view = read_image(str(built[kind]))
    assert view.ref == str(built[kind])
    assert (view.os, view.arch, view.variant, view.layers) == ("linux", "amd64", "", 4)
    assert view.env["NVIDIA_REQUIRE_CUDA"] == "cuda>=12.4 brand=tesla,driver>=470,driver<471"
    assert view.env["CUDA_VERSION"] == "12.4.1"
    assert view.entrypoint == ["/opt/nvidia/nvidia_entrypoint.sh"] and view.cmd == ["python3"]
    assert view.files == {
        "/etc/os-release": g.OS_RELEASE.decode(),  # a link to ../usr/lib/os-release, followed
        "/usr/lib/os-release": g.OS_RELEASE.decode(),
        "/usr/local/cuda/version.json": g.CUDA_VERSION_JSON.decode(),  # through two links
    }
    assert view.links == {
        "/usr/local/bin/python3": "python3.11",
        "/usr/local/cuda": "/etc/alternatives/cuda",
        "/usr/local/cuda-12.4/lib64/libcudart.so.12": "libcudart.so.12.4.127",
    }
    # /opt/old/libnccl.so.2 was deleted by a whiteout
    assert view.libraries == [
        "/usr/local/cuda-12.4/lib64/libcudart.so.12",
        "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127",
        f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
        f"{SITE}/torch/lib/libtorch_cuda.so",
    ]
    assert view.ld_cache is None
    (python,) = view.pythons
    assert python["executable"] == "/usr/local/bin/python3.11"
    assert python["version"] == "3.11.9"  # PYTHON_VERSION of the official python images
    assert python["machine"] == "x86_64"
    assert python["all"] == {"nvidia-cudnn-cu12": "9.1.0.70", "pip": "24.0", "torch": "2.5.1+cu124"}
    torch = [d for d in python["distributions"] if d["name"] == "torch"][0]
    assert torch["texts"]["torch/version.py"] == g.TORCH_VERSION_PY.decode()
    assert torch["requires"][1].startswith("nvidia-cuda-runtime-cu12==12.4.127;")
    cudnn = [d for d in python["distributions"] if d["name"] == "nvidia-cudnn-cu12"][0]
    assert cudnn["libs"] == ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_graph.so.9"]
    assert cudnn["installer"] == "pip"


def test_the_digest_is_the_configs(built):
    image = g.torch_image()
    assert read_image(str(built["oci-dir"])).digest == g.digest(image.config)


def test_a_multi_platform_index_gives_the_asked_architecture(tmp_path):
    amd = g.torch_image(arch="amd64")
    arm = g.torch_image(arch="arm64", variant="v8")
    root = g.write_dir(tmp_path / "multi", g.oci_files([amd, arm]))
    view = read_image(str(root), arch="arm64")
    assert (view.arch, view.variant) == ("arm64", "v8")
    assert view.pythons[0]["machine"] == "aarch64"
    assert read_image(str(root), arch="amd64").arch == "amd64"
    assert read_image(str(root)).arch == host_arch()
    with pytest.raises(ImageError, match=r"no linux/s390x manifest \(it has linux/amd64, linux/arm64/v8\)"):
        read_image(str(root), arch="s390x")


def test_a_single_arm64_image_is_read_as_it_is_on_any_host(tmp_path):
    root = g.write_dir(tmp_path / "arm", g.oci_files([g.torch_image(arch="arm64")]))
    assert read_image(str(root), arch="amd64").arch == "arm64"


def test_a_tag_picks_the_manifest(tmp_path):
    root = g.write_dir(tmp_path / "t", g.oci_files([g.torch_image()], tag="v1"))
    assert read_image(f"{root}:v1").layers == 4
    with pytest.raises(ImageError, match="no manifest is tagged 'v2'"):
        read_image(f"{root}:v2")


# What `python3 -m venv` (3.12, Debian) writes.
VENV_CFG = b"home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n"


def test_path_order_puts_the_python_path_finds_first(tmp_path):
    layers = g.torch_layers() + [
        {
            "/opt/venv/bin/python3.12": ("link", "/usr/bin/python3.12"),  # as `python3 -m venv` links them
            "/opt/venv/bin/python3": ("link", "python3.12"),
            "/opt/venv/pyvenv.cfg": VENV_CFG,
            "/opt/venv/lib/python3.12/site-packages/torch-2.6.0.dist-info/METADATA": (
                b"Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0\n"
            ),
        }
    ]
    env = ["PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin"]
    root = g.write_dir(tmp_path / "venv", g.oci_files([g.Image(layers, env=env)]))
    pythons = read_image(str(root)).pythons
    assert [p["prefix"] for p in pythons] == ["/opt/venv", "/usr/local"]
    venv = pythons[0]
    assert (venv["base_prefix"], venv["version"], venv["executable"]) == (
        "/usr",
        "3.12.3",
        "/opt/venv/bin/python3.12",
    )
    assert venv["path"][-1] == "/opt/venv/lib/python3.12/site-packages"
    assert venv["all"] == {"torch": "2.6.0"}


def test_an_ld_so_cache_in_the_image_is_parsed(tmp_path):
    from pathlib import Path

    cache = (Path(__file__).parent / "data" / "ld.so.cache.aarch64").read_bytes()
    root = g.write_dir(tmp_path / "ld", g.oci_files([g.Image([{"/etc/ld.so.cache": cache}], arch="arm64")]))
    ld = read_image(str(root)).ld_cache
    assert len(ld) == 164 and ld[0] == ("libz.so.1", "libc6,AArch64", "/lib/libz.so.1")


# -- refused ---------------------------------------------------------------------------------------------
def _info(name: str, kind=tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info


@pytest.mark.parametrize(
    "extra, reason",
    [
        (_info("../evil"), "a member climbs out of the archive"),
        (_info("/etc/evil"), "the archive names an absolute path"),
        (
            _info("blobs/sha256/out", tarfile.SYMTYPE, "../../../etc/passwd"),
            "a link points out of the archive",
        ),
        (_info("blobs/sha256/abs", tarfile.SYMTYPE, "/etc/passwd"), "a link points out of the archive"),
        (_info("hard", tarfile.LNKTYPE, "index.json"), "hardlink member hard"),
    ],
)
def test_hostile_outer_archives_are_refused(tmp_path, extra, reason):
    path = g.write_tar(tmp_path / "bad.tar", g.oci_files([g.torch_image()]), extra=[extra])
    with pytest.raises(ImageError, match=reason):
        read_image(str(path))


def test_a_link_to_a_member_inside_the_archive_is_followed(tmp_path):
    """The legacy docker save writes a symlink for a layer it already wrote."""
    files = g.docker_files(g.Image([{"/etc/os-release": g.OS_RELEASE}], "none"))
    manifest = json.loads(files["manifest.json"])
    first = manifest[0]["Layers"][0]
    manifest[0]["Layers"].append("again/layer.tar")
    files["manifest.json"] = json.dumps(manifest).encode()
    link = _info("again/layer.tar", tarfile.SYMTYPE, f"../{first}")
    view = read_image(str(g.write_tar(tmp_path / "dup.tar", files, extra=[link])))
    assert view.layers == 2 and "/etc/os-release" in view.files


def test_a_missing_blob_is_refused(tmp_path):
    image = g.torch_image()
    files = g.oci_files([image])
    del files["blobs/sha256/" + g.digest(image.layers[2]).split(":")[1]]
    with pytest.raises(ImageError, match=r"layer 3: the blob sha256:[0-9a-f]{64} it names is missing"):
        read_image(str(g.write_dir(tmp_path / "m", files)))


def test_a_layer_whose_bytes_do_not_match_its_digest_is_refused(tmp_path):
    image = g.torch_image()
    files = g.oci_files([image])
    other = gzip.compress(g.layer_tar(g.torch_layers()[0]), compresslevel=1, mtime=12345)  # same size
    assert len(other) == len(image.layers[0])
    files["blobs/sha256/" + g.digest(image.layers[0]).split(":")[1]] = other
    with pytest.raises(ImageError, match="layer 1: its content does not match its digest"):
        read_image(str(g.write_dir(tmp_path / "d", files)))


def test_a_config_that_does_not_match_its_digest_is_refused(tmp_path):
    image = g.torch_image()
    files = g.oci_files([image])
    name = "blobs/sha256/" + g.digest(image.config).split(":")[1]
    files[name] = files[name].replace(b"amd64", b"arm64")
    with pytest.raises(ImageError, match="does not match its digest"):
        read_image(str(g.write_dir(tmp_path / "c", files)))


def test_malformed_json_is_refused(tmp_path):
    files = g.oci_files([g.torch_image()])
    files["index.json"] = b'{"manifests": ['
    with pytest.raises(ImageError, match="the index is not valid JSON"):
        read_image(str(g.write_dir(tmp_path / "j", files)))


def test_an_index_over_its_limit_is_refused(tmp_path):
    files = g.oci_files([g.torch_image()])
    files["index.json"] = b" " * (4 * 1024 * 1024 + 1)
    with pytest.raises(ImageError, match="index.json is 4194305 bytes, over its limit of 4194304"):
        read_image(str(g.write_dir(tmp_path / "big", files)))


def test_a_layer_member_with_dotdot_is_refused(tmp_path):
    files = g.oci_files([g.Image([{"/etc/../../escape": b"x"}])])
    with pytest.raises(ImageError, match=r"layer 1: refused: a member climbs out of the image's root"):
        read_image(str(g.write_dir(tmp_path / "dd", files)))


def _sparse_layer(path, member: str, size: int) -> None:
    """An uncompressed layer whose one member claims `size` bytes, written sparse: never held in memory."""
    info = tarfile.TarInfo(member)
    info.size = size
    with open(path, "wb") as f:
        f.write(info.tobuf(tarfile.PAX_FORMAT))
        f.seek(size + (-size % 512), os.SEEK_CUR)
        f.write(b"\0" * 1024)


@pytest.mark.parametrize(
    "member, reason",
    [
        ("usr/share/big.bin", None),  # skipped however large
        (f"{SITE.lstrip('/')}/torch-2.5.1.dist-info/METADATA", "over its limit of 1048576"),
        ("etc/os-release", "over its limit of 65536"),
    ],
)
def test_a_one_gigabyte_member(tmp_path, member, reason):
    """An extracted docker save (a directory): the 1 GB member is sought past, or refused unread."""
    root = tmp_path / "gb"
    (root / "l1").mkdir(parents=True)
    _sparse_layer(root / "l1" / "layer.tar", member, 1 << 30)
    config = g.config_json([])
    (root / "config.json").write_bytes(config)
    (root / "manifest.json").write_text(json.dumps([{"Config": "config.json", "Layers": ["l1/layer.tar"]}]))
    if reason is None:
        assert read_image(str(root)).layers == 1
    else:
        with pytest.raises(ImageError, match=reason):
            read_image(str(root))


def test_a_gzip_bomb_is_refused(tmp_path):
    """300 MiB of zeros in one member, streamed through zlib (about 300 KB compressed)."""
    size = 300 << 20
    info = tarfile.TarInfo("usr/share/zeros")
    info.size = size
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = io.BytesIO()
    out.write(z.compress(info.tobuf(tarfile.PAX_FORMAT)))
    zeros = b"\0" * (1 << 20)
    for _ in range(size >> 20):
        out.write(z.compress(zeros))
    out.write(z.compress(b"\0" * 1024) + z.flush())
    bomb = out.getvalue()
    root = tmp_path / "bomb"
    (root / "blobs").mkdir(parents=True)
    (root / "blobs" / "layer.tar.gz").write_bytes(bomb)
    (root / "config.json").write_bytes(g.config_json([]))
    (root / "manifest.json").write_text(
        json.dumps([{"Config": "config.json", "Layers": ["blobs/layer.tar.gz"]}])
    )
    with pytest.raises(ImageError, match=r"refused as a decompression bomb"):
        read_image(str(root))


def test_neither_layout_nor_archive(tmp_path):
    with pytest.raises(ImageError, match=r"neither an OCI image layout \(index.json\) nor a docker save"):
        read_image(str(tmp_path))


def test_a_compressed_archive_is_named(tmp_path):
    path = tmp_path / "image.tar.gz"
    path.write_bytes(gzip.compress(b"x" * 1024))
    with pytest.raises(ImageError, match="a compressed archive: decompress it first"):
        read_image(str(path))


def test_an_archive_that_is_not_a_tar(tmp_path):
    path = tmp_path / "junk.tar"
    path.write_bytes(b"hello" * 200)
    with pytest.raises(ImageError, match="not a readable tar archive"):
        read_image(str(path))


def test_a_digest_that_would_leave_blobs_is_refused(tmp_path):
    files = g.oci_files([g.torch_image()])
    index = json.loads(files["index.json"])
    index["manifests"][0]["digest"] = "sha256:../../../../etc/passwd"
    files["index.json"] = json.dumps(index).encode()
    with pytest.raises(ImageError, match="is not a sha256 or sha512 digest"):
        read_image(str(g.write_dir(tmp_path / "esc", files)))


def test_an_archive_of_several_images_needs_a_tag(tmp_path):
    one, two = (
        g.docker_files(g.torch_image("none"), tags=("a:1",)),
        g.docker_files(g.Image([{}], "none"), tags=("b:2",)),
    )
    files = {**one, **two}
    files["manifest.json"] = json.dumps(
        json.loads(one["manifest.json"]) + json.loads(two["manifest.json"])
    ).encode()
    path = g.write_tar(tmp_path / "two.tar", files)
    with pytest.raises(
        ImageError, match=r"the archive holds 2 images: name one as .*:TAG \(\['a:1', 'b:2'\]\)"
    ):
        read_image(str(path))
    assert read_image(f"{path}:b:2").layers == 1
    assert read_image(f"{path}:1").layers == 4


@pytest.mark.parametrize("fmt", g.FORMATS)
def test_write_image_writes_each_format(tmp_path, fmt):
    """The one call the end-to-end tests of `check --image` use."""
    layers = [{"/etc/os-release": g.OS_RELEASE}, {"/etc/os-release": ("whiteout",)}]
    ref = g.write_image(tmp_path / f"img-{fmt}", layers, fmt, arch="arm64", env=["CUDA_VERSION=12.4.1"])
    view = read_image(str(ref))
    assert (view.arch, view.env, view.layers, view.files) == ("arm64", {"CUDA_VERSION": "12.4.1"}, 2, {})
