"""The reader gpudoctor/envs/ finds environments through: plain answers, None for what cannot be read."""

from __future__ import annotations

import os

from gpudoctor.host.env_files import EnvFiles
from gpudoctor.host.live import LiveHost


def test_text_head_and_listdir(tmp_path):
    (tmp_path / "b.txt").write_text("héllo\n")
    (tmp_path / "a").mkdir()
    files = LiveHost().env_files()
    assert isinstance(files, EnvFiles)
    assert files.text(str(tmp_path / "b.txt")) == "héllo\n"
    assert files.text(str(tmp_path / "b.txt"), 2) == "h\ufffd"  # cut inside a character: replaced
    assert files.head(str(tmp_path / "b.txt"), 3) == "hé".encode()
    assert files.listdir(str(tmp_path)) == ["a", "b.txt"]
    assert files.listdir(str(tmp_path / "b.txt")) is None
    assert files.text(str(tmp_path / "a")) is None
    assert files.text(str(tmp_path / "missing")) is None
    assert (files.is_dir(str(tmp_path / "a")), files.is_file(str(tmp_path / "a"))) == (True, False)


def test_a_dangling_link_exists_only_as_a_link(tmp_path):
    link = tmp_path / "python"
    link.symlink_to(tmp_path / "gone" / "python3.12")
    files = EnvFiles()
    assert files.lexists(str(link)) and not files.is_file(str(link))
    assert files.readlink(str(link)) == str(tmp_path / "gone" / "python3.12")
    assert files.real(str(link)) == str(tmp_path / "gone" / "python3.12")
    assert files.readlink(str(tmp_path)) is None


def test_a_fifo_is_not_read(tmp_path):
    fifo = tmp_path / "kernel.json"
    os.mkfifo(fifo)
    assert EnvFiles().text(str(fifo)) is None  # opened without blocking, refused as not a regular file
