"""A local image name goes through the engine's CLI; its failure is the tool's own first stderr line."""

from __future__ import annotations

import shutil
import tempfile

import pytest

from gpudoctor.image import local, read_image
from gpudoctor.image.view import ImageError


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker CLI on this machine")
def test_docker_without_a_daemon_says_so(monkeypatch, tmp_path):
    """This machine has the docker CLI and no daemon: the real message comes back as the reason."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(ImageError) as err:
        read_image("gpudoctor-no-such-image:1", timeout=30)
    assert err.value.reason.startswith("gpudoctor-no-such-image:1: docker image save failed: ")
    assert "Cannot connect to the Docker daemon" in err.value.reason
    assert not list(scratch.iterdir())  # the private directory for the archive is gone


def test_without_an_engine_the_reason_says_so(monkeypatch):
    monkeypatch.setattr(local.shutil, "which", lambda name: None)
    with pytest.raises(ImageError, match="neither docker nor podman is on PATH"):
        read_image("some/image:tag")
