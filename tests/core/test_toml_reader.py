"""The TOML reader (toml_reader.py): tomllib, whose errors are ValueErrors, read on the project's own
pyproject.toml."""

from __future__ import annotations

import pytest

from gpudoctor.toml_reader import toml

from conftest import ROOT


def test_it_reads_a_real_pyproject():
    data = toml().loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["name"] == "gpudoctor"
    assert data["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]


def test_a_broken_file_is_a_value_error():
    # what a reader catches (host/command_uv.py reads a workspace's pyproject.toml this way)
    with pytest.raises(ValueError):
        toml().loads('[tool.uv.workspace]\nmembers = ["packages/*"\n')
