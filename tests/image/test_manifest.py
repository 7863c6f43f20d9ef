"""The JSON parsers on the real documented texts (tests/image/data/SOURCES.md): the OCI image-spec's own
examples and the `docker save` manifest.json shown in go-containerregistry's tarball README."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.image.manifest import (
    ManifestError,
    parse_config,
    parse_docker_manifest,
    parse_index,
    parse_manifest,
    select,
)

DATA = Path(__file__).parent / "data"


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_the_spec_index_names_two_platforms_and_select_picks_by_architecture():
    manifests = parse_index(text("oci-image-index.json"))
    assert [(m.platform["architecture"], m.size) for m in manifests] == [("ppc64le", 7143), ("amd64", 7682)]
    assert select(manifests, "amd64").digest == (
        "sha256:5b0bcabd1ed22e9fb1310cf6c2dec7cdef19f0ad69efa1f392e94a4333501270"
    )
    with pytest.raises(ManifestError, match=r"no linux/arm64 manifest \(it has linux/ppc64le, linux/amd64\)"):
        select(manifests, "arm64")


def test_a_nested_index_is_named_by_its_media_type():
    manifests = parse_index(text("oci-image-index-nested.json"))
    assert manifests[1].media_type == "application/vnd.oci.image.index.v1+json"
    assert manifests[1].platform == {}


def test_the_spec_manifest_gives_its_config_and_layers_in_order():
    config, layers = parse_manifest(text("oci-manifest.json"))
    assert config.digest == "sha256:b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9bce1f432a537bc7"
    assert [x.size for x in layers] == [32654, 16724, 73109]
    assert {x.media_type for x in layers} == {"application/vnd.oci.image.layer.v1.tar+gzip"}


def test_an_index_is_not_a_manifest():
    with pytest.raises(ManifestError, match="an image index where an image manifest was expected"):
        parse_manifest(text("oci-image-index.json"))


def test_the_spec_config():
    config = parse_config(text("oci-config.json"))
    assert (config.os, config.arch, config.variant) == ("linux", "amd64", "")
    assert config.env == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "FOO": "oci_is_a",
        "BAR": "well_written_spec",
    }
    assert config.entrypoint == ["/bin/my-app-binary"]
    assert config.cmd == ["--foreground", "--config", "/etc/my-app.d/default.cfg"]
    assert len(config.diff_ids) == 2


def test_docker_save_manifests():
    ubuntu = parse_docker_manifest(text("docker-manifest-ubuntu.json"))
    assert ubuntu[0].repo_tags == ["ubuntu"]
    assert ubuntu[0].config.startswith("sha256:72300a87")
    assert len(ubuntu[0].layers) == 4
    nano = parse_docker_manifest(text("docker-manifest-nanoserver.json"))
    assert nano[0].repo_tags == []  # "RepoTags": null


@pytest.mark.parametrize(
    "parse, bad",
    [
        (parse_index, "{"),
        (parse_index, "[]"),
        (parse_index, '{"manifests": [{"mediaType": "x"}]}'),
        (parse_manifest, '{"config": {"digest": "sha256:00"}}'),
        (parse_docker_manifest, '{"Config": "x"}'),
        (parse_docker_manifest, '[{"Config": "x", "Layers": [1]}]'),
        (parse_config, '{"config": {"Env": "PATH=/bin"}}'),
        (parse_config, "\xff\xfe"),
    ],
)
def test_malformed_json_is_refused_with_what_is_wrong(parse, bad):
    with pytest.raises(ManifestError):
        parse(bad)


def test_later_env_entries_win():
    assert parse_config('{"config": {"Env": ["A=1", "B=2", "A=3=4"]}}').env == {"A": "3=4", "B": "2"}
