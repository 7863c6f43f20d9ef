"""Pure parsers for the JSON of an image: OCI index.json / image index, image manifest, `docker save`'s
manifest.json, the image config. Text in, data out; ManifestError says what is malformed.

References: the OCI image-spec (image-index.md, manifest.md, config.md, image-layout.md) and Docker's
image spec v1.2 / `docker save` manifest.json (Config, RepoTags, Layers).
"""

from __future__ import annotations

import json
from typing import NamedTuple, Optional

INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
REF_NAME = "org.opencontainers.image.ref.name"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ManifestError(ValueError):
    """Malformed JSON, or JSON without the fields its kind must have."""


class Descriptor(NamedTuple):
    media_type: str
    digest: str
    size: Optional[int]
    platform: dict  # {"os", "architecture", "variant"} as given, {} when absent
    annotations: dict


class DockerImage(NamedTuple):
    config: str  # the config's member name in the archive
    repo_tags: list
    layers: list  # the layers' member names, lowest first


class ImageConfig(NamedTuple):
    os: str
    arch: str
    variant: str
    env: dict
    entrypoint: list
    cmd: list
    diff_ids: list


def _json(text, what: str):
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ManifestError(f"{what} is not valid JSON ({e})") from None


def _object(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise ManifestError(f"{what} is not a JSON object")
    return value


def _descriptor(raw, what: str) -> Descriptor:
    raw = _object(raw, what)
    digest = raw.get("digest")
    if not isinstance(digest, str) or ":" not in digest:
        raise ManifestError(f"{what} has no digest")
    size = raw.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise ManifestError(f"{what} has a size that is not a count of bytes")
    platform = raw.get("platform") or {}
    annotations = raw.get("annotations") or {}
    if not isinstance(platform, dict) or not isinstance(annotations, dict):
        raise ManifestError(f"{what} has a platform or annotations that are not objects")
    return Descriptor(str(raw.get("mediaType") or ""), digest, size, platform, annotations)


def parse_index(text) -> list[Descriptor]:
    """The manifests an OCI index.json or image index (or Docker manifest list) names, in order."""
    data = _object(_json(text, "the index"), "the index")
    manifests = data.get("manifests")
    if not isinstance(manifests, list):
        raise ManifestError("the index has no manifests list")
    return [_descriptor(m, f"the index's manifest #{i + 1}") for i, m in enumerate(manifests)]


def parse_manifest(text) -> tuple[Descriptor, list[Descriptor]]:
    """An image manifest's (config, layers, lowest first)."""
    data = _object(_json(text, "the manifest"), "the manifest")
    media = data.get("mediaType")
    if media in INDEX_TYPES or "manifests" in data:
        raise ManifestError("an image index where an image manifest was expected")
    layers = data.get("layers")
    if not isinstance(layers, list):
        raise ManifestError("the manifest has no layers list")
    config = _descriptor(data.get("config"), "the manifest's config")
    return config, [_descriptor(x, f"the manifest's layer #{i + 1}") for i, x in enumerate(layers)]


def parse_docker_manifest(text) -> list[DockerImage]:
    """`docker save`'s manifest.json: one entry per image in the archive."""
    data = _json(text, "manifest.json")
    if not isinstance(data, list):
        raise ManifestError("manifest.json is not a JSON list")
    out = []
    for i, raw in enumerate(data):
        raw = _object(raw, f"manifest.json entry #{i + 1}")
        config, layers, tags = raw.get("Config"), raw.get("Layers"), raw.get("RepoTags") or []
        if not isinstance(config, str) or not isinstance(layers, list) or not isinstance(tags, list):
            raise ManifestError(f"manifest.json entry #{i + 1} lacks Config or Layers")
        if not all(isinstance(x, str) for x in [*layers, *tags]):
            raise ManifestError(f"manifest.json entry #{i + 1} has a layer or tag that is not a string")
        out.append(DockerImage(config, list(tags), list(layers)))
    return out


def _strings(value, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ManifestError(f"the config's {what} is not a list of strings")
    return list(value)


def parse_env(lines: list) -> dict:
    """Config.Env ["NAME=VALUE", ...] as a dict; a later entry wins, as the runtime's does."""
    env = {}
    for line in lines:
        name, _, value = line.partition("=")
        env[name] = value
    return env


def parse_config(text) -> ImageConfig:
    """The image config's platform, environment, entrypoint, command and layer diff ids."""
    data = _object(_json(text, "the image config"), "the image config")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise ManifestError("the config's config is not an object")
    rootfs = data.get("rootfs") or {}
    if not isinstance(rootfs, dict):
        raise ManifestError("the config's rootfs is not an object")
    return ImageConfig(
        os=str(data.get("os") or ""),
        arch=str(data.get("architecture") or ""),
        variant=str(data.get("variant") or ""),
        env=parse_env(_strings(config.get("Env"), "Env")),
        entrypoint=_strings(config.get("Entrypoint"), "Entrypoint"),
        cmd=_strings(config.get("Cmd"), "Cmd"),
        diff_ids=_strings(rootfs.get("diff_ids"), "rootfs.diff_ids"),
    )


def platform_name(p: dict) -> str:
    name = f"{p.get('os') or '?'}/{p.get('architecture') or '?'}"
    return name + (f"/{p['variant']}" if p.get("variant") else "")


def select(manifests: list[Descriptor], arch: str, variant: str = "", tag: str = "") -> Descriptor:
    """The manifest for linux/`arch` (and `variant` when given), or the one tagged `tag`; ManifestError
    naming what the index offers when none fits. Attestations (platform unknown/unknown) never fit."""
    if tag:
        tagged = [m for m in manifests if m.annotations.get(REF_NAME) == tag]
        if not tagged:
            raise ManifestError(f"no manifest is tagged {tag!r}")
        manifests = tagged
    images = [m for m in manifests if m.platform.get("os") != "unknown"]
    if len(images) == 1 and not images[0].platform:
        return images[0]
    for m in images:
        p = m.platform
        if p.get("os", "linux") == "linux" and p.get("architecture") == arch:
            if not variant or p.get("variant", "") == variant:
                return m
    if len(images) == 1 and not tag and images[0].media_type not in INDEX_TYPES:
        return images[0]  # a single-platform layout: judged as it is, even for another machine
    offered = ", ".join(platform_name(m.platform) for m in images) or "nothing"
    raise ManifestError(f"no linux/{arch}{'/' + variant if variant else ''} manifest (it has {offered})")
