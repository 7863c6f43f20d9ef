"""One environment described from its files as pyinspect describes a live one: real venvs, real wheels."""

from __future__ import annotations

import os
import subprocess
import sys

from gpudoctor.envs import layout
from gpudoctor.host import pyinspect
from gpudoctor.host.env_files import EnvFiles
from gpudoctor.probes import python_env

from pyenvs import make_venv, site_packages, torch_wheel, unpack_wheel

XY = f"{sys.version_info[0]}.{sys.version_info[1]}"


class RootedFiles(EnvFiles):
    """The reader with every absolute path taken under `root`: a system layout (/usr) in a temporary
    directory."""

    def __init__(self, root) -> None:
        self.root = str(root)

    def _at(self, path: str) -> str:
        return self.root + path

    def is_dir(self, path):
        return super().is_dir(self._at(path))

    def listdir(self, path):
        return super().listdir(self._at(path))

    def text(self, path, limit=pyinspect.MAX_PYVENV_CFG):
        return super().text(self._at(path), limit)

    def real(self, path):
        return path


def test_the_machine_is_read_from_the_interpreters_elf_header(tmp_path):
    files = EnvFiles()
    assert layout.machine(files, sys.executable) == os.uname().machine
    script = tmp_path / "python3"
    script.write_text('#!/bin/sh\nexec python3.12 "$@"\n')
    assert layout.machine(files, str(script)) == ""
    assert layout.machine(files, str(tmp_path / "missing")) == ""


def test_a_venv_is_described_as_the_interpreter_would_describe_itself(tmp_path):
    python = make_venv(sys.executable, tmp_path / "venv")
    unpack_wheel(torch_wheel(tmp_path / "wheels", "2.5.1+cu124", "12.4"), site_packages(python))
    prefix = str(tmp_path / "venv")
    dump = layout.describe(EnvFiles(), prefix, XY, str(python), home=str(tmp_path))
    live = pyinspect.parse_output(
        subprocess.run([str(python), *pyinspect.argv(str(python), {})[1:]], capture_output=True, text=True,
                       timeout=60, check=True).stdout
    )  # fmt: skip
    for key in ("prefix", "base_prefix", "implementation", "machine", "conda_meta", "pyvenv_cfg", "all"):
        assert dump[key] == live[key], key
    assert dump["path"] == [p for p in live["path"] if p.endswith("site-packages")]
    assert dump["distributions"] == live["distributions"]
    (torch,) = python_env.frameworks(dump)
    assert (torch["version"], torch["build"], torch["cuda"]) == ("2.5.1", "cuda", "12.4")


def test_a_venv_with_system_site_packages_sees_its_bases(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(tmp_path / "v")],
        check=True,
        timeout=120,
    )
    dump = layout.describe(EnvFiles(), str(tmp_path / "v"), XY, str(tmp_path / "v" / "bin" / "python"))
    base = dump["base_prefix"]
    assert base == sys.base_prefix  # pyvenv.cfg's home is the base's bin/
    assert dump["path"][0] == str(tmp_path / "v" / "lib" / f"python{XY}" / "site-packages")
    assert f"{base}/lib/python{XY}/site-packages" in dump["path"][1:]


def test_debians_usr_reads_its_dist_packages_in_sites_order(tmp_path):
    for d in (
        "usr/lib/python3/dist-packages",
        "usr/local/lib/python3.11/dist-packages",
        "usr/lib/python3.11/dist-packages",
    ):
        (tmp_path / d).mkdir(parents=True)
    assert layout.site_dirs(RootedFiles(tmp_path), "/usr", "3.11") == [
        "/usr/local/lib/python3.11/dist-packages",
        "/usr/lib/python3/dist-packages",
        "/usr/lib/python3.11/dist-packages",
    ]


def test_the_user_site_comes_first_outside_a_venv(tmp_path):
    prefix = tmp_path / "py"
    (prefix / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    user = tmp_path / "home" / ".local" / "lib" / "python3.12" / "site-packages"
    user.mkdir(parents=True)
    dump = layout.describe(EnvFiles(), str(prefix), "3.12", "", home=str(tmp_path / "home"))
    assert dump["path"] == [str(user), str(prefix / "lib" / "python3.12" / "site-packages")]
    assert (dump["user_site"], dump["machine"], dump["version"]) == (str(user), "", "3.12")
