"""remedy.inventory through real environments: a venv real pip filled, one uv made and filled, another
Python's own site-packages, and interpreters that fail, hang or answer nonsense."""

from __future__ import annotations

import glob
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudoctor.remedy.inventory import Inventory, InventoryError, diff, freeze_lines, read_inventory

from .remedyenvs import pip_env, remedy_wheels, tree_hash
from pyenvs import site_packages, uv_venv


@pytest.fixture(scope="module")
def envs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inventory")
    wheels = remedy_wheels(root / "wheels")
    python = pip_env(root / "pip", wheels)
    return {"wheels": wheels, "pip": python, "inv": read_inventory(str(python))}


def test_a_pip_venv_is_read_exactly(envs):
    inv, python = envs["inv"], envs["pip"]
    site = site_packages(python)
    assert inv.python == str(python)
    assert os.path.realpath(inv.prefix) == os.path.realpath(python.parent.parent)
    assert [os.path.realpath(s) for s in inv.sites] == [os.path.realpath(site)]  # no user site, no PYTHONPATH
    assert inv.versions() == {
        "filelock": "3.16.1",
        "localpkg": "0.3",
        "nvidia-a": "1.0",
        "torch": "2.5.1+cpu",
    }
    torch = inv.dists["torch"]
    assert (torch.installer, torch.requested, torch.direct_url) == ("pip", True, None)
    assert (inv.dists["filelock"].installer, inv.dists["filelock"].requested) == ("pip", False)
    record = Path(torch.dist_info) / "RECORD"
    assert torch.record_sha256 == hashlib.sha256(record.read_bytes()).hexdigest()
    assert os.path.join(torch.site, "torch", "version.py") in torch.files
    assert str(record) in torch.files and torch.site == inv.sites[0]
    assert all(os.path.isabs(f) and os.path.normpath(f) == f for f in torch.files)
    assert inv.dists["localpkg"].direct_url["url"].startswith("file://")


def test_freeze_lines_put_the_versions_back_by_hand(envs):
    lines = freeze_lines(envs["inv"])
    url = envs["inv"].dists["localpkg"].direct_url
    assert lines == [
        "filelock==3.16.1",
        f"localpkg @ {url['url']}#{url['archive_info']['hash']}",
        "nvidia-a==1.0",
        "torch==2.5.1+cpu",
    ]


def test_json_round_trip(envs):
    inv = envs["inv"]
    assert Inventory.from_json(inv.to_json()) == inv
    with pytest.raises(InventoryError, match="not an inventory"):
        Inventory.from_json({"format": 1, "python": "p"})


def test_a_uv_venv_names_uv_and_diff_sees_every_change(envs, tmp_path):
    python = uv_venv(sys.executable, tmp_path / "uv", envs["wheels"], "torch==2.5.1+cpu", "nvidia-b")
    uv = read_inventory(str(python))
    assert uv.dists["torch"].installer == "uv"
    # The same torch version installed by another installer has another RECORD: a change, (v, v).
    assert diff(envs["inv"], uv) == {
        "filelock": ("3.16.1", "3.16.1"),
        "localpkg": ("0.3", None),
        "nvidia-a": ("1.0", None),
        "nvidia-b": (None, "1.0"),
        "torch": ("2.5.1+cpu", "2.5.1+cpu"),
    }
    assert diff(uv, uv) == {}


def test_reading_writes_nothing_in_the_environment(envs):
    before = tree_hash(envs["pip"])
    read_inventory(str(envs["pip"]))
    assert tree_hash(envs["pip"]) == before


def _python38():
    for exe in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8"))) + ["python3.8"]:
        try:
            done = subprocess.run([exe, "-c", "pass"], capture_output=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0:
            return exe
    return None


def test_the_script_runs_on_python_3_8():
    exe = _python38()
    if exe is None:
        pytest.skip("no Python 3.8 on this machine")
    inv = read_inventory(exe)
    assert inv.sites and inv.dists, "a Python 3.8 installation with nothing in its site-packages"
    for dist in inv.dists.values():
        if dist.record_sha256:
            record = Path(dist.dist_info) / "RECORD"
            assert dist.record_sha256 == hashlib.sha256(record.read_bytes()).hexdigest()


def _script(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_an_interpreter_that_is_not_there(tmp_path):
    with pytest.raises(InventoryError, match="cannot run .*nothing-here"):
        read_inventory(str(tmp_path / "nothing-here"))


@pytest.mark.parametrize(
    "text",
    [
        f"#!{sys.executable}\nimport time\ntime.sleep(30)\n",
        # sh waits for its child sleep, which holds the pipes: only killing the group ends the wait
        "#!/bin/sh\nsleep 30\necho done\n",
    ],
    ids=["python-sleeps", "shell-child-sleeps"],
)
def test_an_interpreter_that_hangs_is_stopped(tmp_path, text):
    started = time.monotonic()
    with pytest.raises(InventoryError, match=r"did not answer within 0.5 s"):
        read_inventory(_script(tmp_path / "python", text), timeout=0.5)
    assert time.monotonic() - started < 5


def test_an_interpreter_that_fails_or_answers_nonsense(tmp_path):
    failing = _script(tmp_path / "failing", "#!/bin/sh\necho 'broken venv: no such file' >&2\nexit 3\n")
    with pytest.raises(InventoryError, match="exited with status 3: broken venv: no such file"):
        read_inventory(failing)
    chatty = _script(tmp_path / "chatty", "#!/bin/sh\necho hello\necho 'GPUDOCTOR-INVENTORY {not json'\n")
    with pytest.raises(InventoryError, match="gave no readable inventory"):
        read_inventory(chatty)
