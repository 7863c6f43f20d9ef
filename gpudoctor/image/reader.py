"""read_image(REF): an OCI layout directory, an OCI archive, a `docker save` archive, or a local image name
(through docker/podman) turned into one ImageView. Each layer is streamed once; nothing is extracted."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from typing import Optional

from gpudoctor.image import local
from gpudoctor.image.ldcache import CacheError, parse_ld_so_cache
from gpudoctor.image.manifest import (
    INDEX_TYPES,
    Descriptor,
    ManifestError,
    parse_config,
    parse_docker_manifest,
    parse_index,
    parse_manifest,
    select,
)
from gpudoctor.image.pythons import environments
from gpudoctor.image.store import MAX_JSON, DirStore, Store, TarStore, sha256_of
from gpudoctor.image.streams import GZIP_MAGIC, ZSTD_MAGIC, Checked, ChunkStream, gunzip, new_hash, unzstd
from gpudoctor.image.tarwalk import TarError, TarWalker
from gpudoctor.image.tree import LD_CACHE, Tree
from gpudoctor.image.view import FILES, ImageError, ImageView

# os.uname().machine -> the OCI/Go architecture name
OCI_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x",
            "riscv64": "riscv64", "i686": "386", "armv7l": "arm"}  # fmt: skip
MAX_NESTING = 4  # an index inside an index inside ...
HEX_NAME = re.compile(r"(?:^|/)(?:sha256[:/])?([0-9a-f]{64})(?:\.json|\.tar(?:\.gz)?)?$")


def host_arch() -> str:
    machine = os.uname().machine
    return OCI_ARCH.get(machine, machine)


def _split(ref: str) -> tuple[str, str]:
    """(path, tag) for "PATH" or "PATH:TAG" when PATH exists; (ref, "") otherwise."""
    if os.path.exists(ref):
        return ref, ""
    at = ref.rfind(":")
    while at > 0:  # the longest PATH that exists; the tag may hold colons ("FILE:nvcr.io/x/y:24.01")
        if os.path.exists(ref[:at]):
            return ref[:at], ref[at + 1 :]
        at = ref.rfind(":", 0, at)
    return ref, ""


def read_image(ref: str, *, arch: Optional[str] = None, timeout: float = 120.0) -> ImageView:
    """The image REF names, read whole within `timeout` seconds; ImageError says why it cannot be."""
    deadline = time.monotonic() + timeout
    path, tag = _split(ref)
    tmp = None
    try:
        if os.path.isdir(path):
            store: Store = DirStore(path, ref)
        elif os.path.isfile(path):
            store = TarStore(path, ref)
        else:
            tmp = tempfile.mkdtemp(prefix="gpudoctor-image-")  # mode 0700: private to this user
            store = TarStore(local.save(ref, tmp, timeout), ref)
        try:
            return _read(store, ref, tag, arch or host_arch(), deadline)
        finally:
            store.close()
    except OSError as e:
        raise ImageError(f"{ref}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _blob_name(digest: str, where: str) -> str:
    new_hash(digest, where)  # refuses anything but sha256:/sha512:<hex>: a name cannot leave blobs/
    algorithm, _, hexa = digest.partition(":")
    return f"blobs/{algorithm}/{hexa}"


def _blob(store: Store, d: Descriptor, where: str) -> bytes:
    name = _blob_name(d.digest, where)
    size = store.size(name)
    if size is None:
        raise ImageError(f"{where}: the blob {d.digest} it names is missing")
    if d.size is not None and size != d.size:
        raise ImageError(f"{where}: the blob {d.digest} is {size} bytes, its descriptor says {d.size}")
    return store.read(name, MAX_JSON, d.digest)


def _read(store: Store, ref: str, tag: str, arch: str, deadline: float) -> ImageView:
    try:
        if store.has("index.json"):
            config_text, digest, layers = _oci(store, ref, tag, arch)
        elif store.has("manifest.json"):
            config_text, digest, layers = _docker(store, ref, tag)
        else:
            raise ImageError(
                f"{ref}: neither an OCI image layout (index.json) nor a docker save archive (manifest.json)"
            )
        config = parse_config(config_text)
    except ManifestError as e:
        raise ImageError(f"{ref}: {e}") from None
    tree = Tree()
    for i, (name, layer_digest, size, media) in enumerate(layers):
        if time.monotonic() > deadline:
            raise ImageError(f"{ref}: not read within the time allowed (at layer {i + 1} of {len(layers)})")
        _layer(store, tree, name, layer_digest, size, media, f"{ref}: layer {i + 1}", deadline)
    files = {}
    for path in FILES:
        data = tree.content(path, ref)
        if data is not None:
            files[path] = data.decode("utf-8", "replace")
    cache = tree.content(LD_CACHE, ref)
    try:
        ld_cache = None if cache is None else (parse_ld_so_cache(cache) if cache else [])
    except CacheError as e:
        raise ImageError(f"{ref}: its {LD_CACHE} is not a cache the dynamic linker reads ({e})") from None
    return ImageView(
        ref=ref,
        digest=digest,
        os=config.os,
        arch=config.arch,
        variant=config.variant,
        env=config.env,
        entrypoint=config.entrypoint,
        cmd=config.cmd,
        files=files,
        links=tree.links(),
        libraries=tree.libraries(),
        ld_cache=ld_cache,
        pythons=environments(tree, config.arch, config.env, ref),
        layers=len(layers),
    )


def _oci(store: Store, ref: str, tag: str, arch: str) -> tuple:
    d = select(parse_index(store.read("index.json")), arch, tag=tag)
    for _ in range(MAX_NESTING):
        if d.media_type not in INDEX_TYPES:
            break
        d = select(parse_index(_blob(store, d, ref)), arch)
    else:
        raise ImageError(f"{ref}: image indexes nest deeper than {MAX_NESTING}")
    config, layers = parse_manifest(_blob(store, d, ref))
    text = _blob(store, config, ref)
    return text, config.digest, [(_blob_name(x.digest, ref), x.digest, x.size, x.media_type) for x in layers]


def _named_digest(name: str) -> Optional[str]:
    """The digest a docker archive's member name carries (blobs/sha256/<hex>, <hex>.json, sha256:<hex>)."""
    m = HEX_NAME.search(name)
    return f"sha256:{m.group(1)}" if m and "layer.tar" not in name else None


def _docker(store: Store, ref: str, tag: str) -> tuple:
    every = parse_docker_manifest(store.read("manifest.json"))
    images = every
    if tag:
        images = [i for i in every if any(t == tag or t.endswith(":" + tag) for t in i.repo_tags)]
    if len(images) != 1:
        tags = sorted(t for i in every for t in i.repo_tags)
        if not images:
            raise ImageError(f"{ref}: no image in the archive is tagged {tag} (it has {tags})")
        raise ImageError(f"{ref}: the archive holds {len(images)} images: name one as {ref}:TAG ({tags})")
    image = images[0]
    expected = _named_digest(image.config)
    text = store.read(image.config, MAX_JSON, expected)
    layers = [(name, _named_digest(name), None, "") for name in image.layers]
    for name, _, _, _ in layers:
        if not store.has(name):
            raise ImageError(f"{ref}: the layer {name} that manifest.json names is missing")
    return text, expected or sha256_of(text), layers


def _layer(store: Store, tree: Tree, name: str, digest, size, media: str, where: str, deadline: float):
    if not store.has(name):
        raise ImageError(f"{where}: the blob {digest or name} it names is missing")
    region = store.region(name)
    if size is not None and region.size != size:
        raise ImageError(f"{where}: the blob {digest} is {region.size} bytes, its descriptor says {size}")
    head = region.read(4)
    region.pos = 0
    try:
        if head.startswith(GZIP_MAGIC) or head.startswith(ZSTD_MAGIC) or media.endswith("+zstd"):
            src = Checked(region, digest, where)
            chunks = gunzip(src, deadline) if head.startswith(GZIP_MAGIC) else unzstd(src, deadline)
            stream = ChunkStream(chunks)
            tree.add_layer(TarWalker(stream), where)
            stream.drain()
            src.verify()
        else:
            # An uncompressed layer: headers only, seeking past every member's data (not hashed: that
            # would read every byte the seeks avoid).
            tree.add_layer(TarWalker(region), where)
    except TarError as e:
        raise ImageError(f"{where}: not a readable tar ({e})") from None
