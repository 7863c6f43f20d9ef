"""Writes real container image archives from layers a test describes: an OCI image layout (directory or
tar), a `docker save` archive (legacy or Docker 25+'s OCI-in-docker), a multi-platform index.

A layer is {absolute path: content}; content is bytes (a regular file), ("link", target) (a symlink),
("hardlink", path), ("dir",), ("whiteout",) (deletes the path from the layers below) or ("opaque",) (the
directory hides what the layers below hold in it). The end-to-end tests of `check --image` reuse it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path
from typing import Optional

OCI_LAYOUT = b'{"imageLayoutVersion":"1.0.0"}'
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER_TYPES = {
    "gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
    "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
    "none": "application/vnd.oci.image.layer.v1.tar",
}


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def layer_tar(layer: dict) -> bytes:
    """The uncompressed tar of one layer, members in the dict's order (parents first where given)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, content in layer.items():
            rel = path.lstrip("/")
            parent, _, name = rel.rpartition("/")
            info = tarfile.TarInfo(rel)
            info.mtime = 1700000000
            data = None
            if isinstance(content, bytes):
                info.size, data = len(content), io.BytesIO(content)
            elif content[0] == "link":
                info.type, info.linkname = tarfile.SYMTYPE, content[1]
            elif content[0] == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, content[1].lstrip("/")
            elif content[0] == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif content[0] == "whiteout":
                info.name = f"{parent}/.wh.{name}" if parent else f".wh.{name}"
            elif content[0] == "opaque":
                info.name = f"{rel}/.wh..wh..opq"
            else:
                raise ValueError(content)
            tar.addfile(info, data)
    return buf.getvalue()


def compress(data: bytes, compression: str) -> bytes:
    if compression == "gzip":
        return gzip.compress(data, compresslevel=1, mtime=0)
    if compression == "zstd":
        return subprocess.run(
            ["zstd", "-q", "-c"], input=data, capture_output=True, check=True, timeout=60
        ).stdout
    return data


def config_json(
    diff_ids: list,
    *,
    arch: str = "amd64",
    os: str = "linux",
    variant: str = "",
    env: Optional[list] = None,
    entrypoint: Optional[list] = None,
    cmd: Optional[list] = None,
) -> bytes:
    config: dict = {
        "Env": env
        if env is not None
        else ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    }
    if entrypoint is not None:
        config["Entrypoint"] = entrypoint
    if cmd is not None:
        config["Cmd"] = cmd
    data: dict = {
        "architecture": arch,
        "os": os,
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }
    if variant:
        data["variant"] = variant
    return json.dumps(data, indent=2).encode()


class Image:
    """One image's blobs: its config, its layers (compressed as asked) and its manifest."""

    def __init__(self, layers: list, compression: str = "gzip", **config) -> None:
        tars = [layer_tar(layer) for layer in layers]
        self.layers = [compress(t, compression) for t in tars]
        self.media = LAYER_TYPES[compression]
        self.config = config_json([digest(t) for t in tars], **config)
        self.platform = {"architecture": config.get("arch", "amd64"), "os": config.get("os", "linux")}
        if config.get("variant"):
            self.platform["variant"] = config["variant"]
        self.manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST,
                "config": {"mediaType": CONFIG, "digest": digest(self.config), "size": len(self.config)},
                "layers": [
                    {"mediaType": self.media, "digest": digest(x), "size": len(x)} for x in self.layers
                ],
            }
        ).encode()

    def blobs(self) -> dict:
        return {digest(b): b for b in [self.config, self.manifest, *self.layers]}

    def descriptor(self, platform: bool = False, tag: str = "") -> dict:
        d: dict = {"mediaType": MANIFEST, "digest": digest(self.manifest), "size": len(self.manifest)}
        if platform:
            d["platform"] = self.platform
        if tag:
            d["annotations"] = {"org.opencontainers.image.ref.name": tag}
        return d


def oci_files(images: list, *, platforms: bool = False, tag: str = "") -> dict:
    """The files of an OCI image layout holding `images` (several: an index with their platforms)."""
    files = {"oci-layout": OCI_LAYOUT}
    for image in images:
        for d, blob in image.blobs().items():
            files["blobs/sha256/" + d.split(":", 1)[1]] = blob
    manifests = [image.descriptor(platforms or len(images) > 1, tag) for image in images]
    files["index.json"] = json.dumps(
        {"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests}
    ).encode()
    return files


def docker_files(image: Image, tags: tuple = ("gpudoctor/test:1",), legacy: bool = True) -> dict:
    """`docker save`'s files: legacy (<id>/layer.tar, <config hex>.json) or Docker 25+ (an OCI layout with
    manifest.json naming blobs/sha256/...)."""
    if not legacy:
        files = oci_files([image])
        names = ["blobs/sha256/" + digest(x).split(":", 1)[1] for x in image.layers]
        config = "blobs/sha256/" + digest(image.config).split(":", 1)[1]
    else:
        files, names = {}, []
        for i, layer in enumerate(image.layers):
            layer_id = hashlib.sha256(b"layer%d" % i + layer).hexdigest()
            files[f"{layer_id}/VERSION"] = b"1.0"
            files[f"{layer_id}/layer.tar"] = layer
            names.append(f"{layer_id}/layer.tar")
        config = digest(image.config).split(":", 1)[1] + ".json"
        files[config] = image.config
    files["manifest.json"] = json.dumps(
        [{"Config": config, "RepoTags": list(tags), "Layers": names}]
    ).encode()
    return files


def write_dir(root: Path, files: dict) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def write_tar(path: Path, files: dict, extra: Optional[list] = None) -> Path:
    """`files` as a tar archive; `extra` adds raw TarInfo members (links, hostile names) after them."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra or []:
            tar.addfile(info)
    return path


FORMATS = ("oci-dir", "oci-tar", "docker", "docker-oci")


def write_image(dest: Path, layers: list, fmt: str = "oci-dir", compression: str = "gzip", **config) -> Path:
    """One image from `layers` ({path: content} each, lowest first) and config fields (arch, os, variant,
    env, entrypoint, cmd) written at `dest` as `fmt`: an OCI layout directory or tar, a legacy `docker save`
    archive, or Docker 25+'s (an OCI layout with manifest.json). Returns `dest`, the REF to read."""
    image = Image(layers, compression, **config)
    if fmt == "oci-dir":
        return write_dir(dest, oci_files([image]))
    if fmt == "oci-tar":
        return write_tar(dest, oci_files([image]))
    if fmt in ("docker", "docker-oci"):
        return write_tar(dest, docker_files(image, legacy=fmt == "docker"))
    raise ValueError(f"{fmt} is not one of {FORMATS}")


# -- the test image: a CUDA 12.4 base, a torch-like wheel with its nvidia-* wheels, whiteouts -----------
# The texts follow the real ones: torch 2.5.1+cu124's METADATA Requires-Dist lines and torch/version.py
# (as tests/pyenvs.py and tests/probes/test_python_env.py use them), the CUDA toolkit's version.json, the
# NVIDIA_REQUIRE_CUDA / CUDA_VERSION of the nvidia/cuda 12.4.1 base images' config.
SITE = "/usr/local/lib/python3.11/site-packages"
TORCH_METADATA = (
    b"Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu124\n"
    b"Requires-Dist: filelock\n"
    b"Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127; "
    b'platform_system == "Linux" and platform_machine == "x86_64"\n'
    b"Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; "
    b'platform_system == "Linux" and platform_machine == "x86_64"\n'
    b"\nThe long description: Requires-Dist: not-a-header\n"
)
TORCH_VERSION_PY = (
    b"from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
    b"__version__ = '2.5.1+cu124'\ndebug = False\ncuda: Optional[str] = '12.4'\n"
    b"git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\nhip: Optional[str] = None\n"
)
CUDNN_RECORD = (
    b"nvidia/cudnn/lib/libcudnn.so.9,sha256=AAAA,12345\n"
    b"nvidia/cudnn/lib/libcudnn_graph.so.9,sha256=BBBB,2345\n"
    b"nvidia/cudnn/include/cudnn.h,sha256=CCCC,345\n"
    b"nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD,,\n"
)
CUDA_VERSION_JSON = b'{\n   "cuda" : {\n      "name" : "CUDA SDK",\n      "version" : "12.4.1"\n   }\n}\n'
OS_RELEASE = b'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n'
CUDA_ENV = [
    "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla,driver>=470,driver<471",
    "CUDA_VERSION=12.4.1",
    "NVIDIA_VISIBLE_DEVICES=all",
    "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
    "PYTHON_VERSION=3.11.9",
]


def torch_layers() -> list:
    """Four layers: a base (os-release, a CUDA toolkit behind /usr/local/cuda), Python, the wheels, and a
    layer whose whiteouts delete a file and empty a directory of the layers below."""
    base = {
        "/etc/os-release": ("link", "../usr/lib/os-release"),
        "/usr/lib/os-release": OS_RELEASE,
        "/usr/local/cuda-12.4/version.json": CUDA_VERSION_JSON,
        "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127": b"\x7fELF-cudart",
        "/usr/local/cuda-12.4/lib64/libcudart.so.12": ("link", "libcudart.so.12.4.127"),
        "/usr/local/cuda": ("link", "/etc/alternatives/cuda"),
        "/etc/alternatives/cuda": ("link", "/usr/local/cuda-12.4"),
        "/usr/local/cuda-12.4/extras/stale.txt": b"gone after the opaque layer",
        "/opt/old/libnccl.so.2": b"\x7fELF-nccl-old",
    }
    python = {
        "/usr/local/bin/python3.11": b"\x7fELF-python",
        "/usr/local/bin/python3": ("link", "python3.11"),
        "/usr/local/lib/python3.11": ("dir",),
        SITE: ("dir",),
        f"{SITE}/pip-24.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pip\nVersion: 24.0\n",
    }
    wheels = {
        f"{SITE}/torch-2.5.1+cu124.dist-info/METADATA": TORCH_METADATA,
        f"{SITE}/torch-2.5.1+cu124.dist-info/INSTALLER": b"pip\n",
        f"{SITE}/torch-2.5.1+cu124.dist-info/RECORD": b"torch/lib/libtorch_cuda.so,sha256=X,1\n",
        f"{SITE}/torch/version.py": TORCH_VERSION_PY,
        f"{SITE}/torch/lib/libtorch_cuda.so": b"\x7fELF-torch",
        f"{SITE}/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n"
            b"Requires-Dist: nvidia-cublas-cu12\n"
        ),
        f"{SITE}/nvidia_cudnn_cu12-9.1.0.70.dist-info/INSTALLER": b"pip\n",
        f"{SITE}/nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD": CUDNN_RECORD,
        f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF-cudnn",
        f"{SITE}/requests-2.32.3.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: requests\nVersion: 2.32.3\n"
        ),
    }
    cleanup = {
        "/opt/old/libnccl.so.2": ("whiteout",),
        "/usr/local/cuda-12.4/extras": ("opaque",),
        f"{SITE}/requests-2.32.3.dist-info": ("whiteout",),
    }
    return [base, python, wheels, cleanup]


def torch_image(compression: str = "gzip", arch: str = "amd64", **config) -> Image:
    config.setdefault("env", CUDA_ENV)
    config.setdefault("entrypoint", ["/opt/nvidia/nvidia_entrypoint.sh"])
    config.setdefault("cmd", ["python3"])
    return Image(torch_layers(), compression, arch=arch, **config)
