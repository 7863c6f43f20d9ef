"""remedy.restore through real environments changed by real installers: a restore point, backups, a roll
back that puts every byte of site-packages back, the undo of that roll back, and what must be refused."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from gpudoctor.remedy import backup
from gpudoctor.remedy.inventory import read_inventory
from gpudoctor.remedy.restore import RestoreError, RestorePoint, roll_back

from .remedyenvs import copy_env, pip_env, remedy_wheels, tree_hash
from pyenvs import build_wheel, file_list, make_venv, pip_install, site_packages, unpack_wheel, uv

STUBS = ["nvidia-cuda-runtime-cu12 12.4.127", "nvidia-cudnn-cu12 9.1.0.70", "nvidia-nccl-cu12 2.21.5"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("restore-base")
    wheels = remedy_wheels(root / "wheels")
    return {"wheels": wheels, "python": pip_env(root / "pip", wheels)}


@pytest.fixture(scope="module")
def trip(base, tmp_path_factory):
    """A fix run (run1: restore point, torch backed up, real pip swaps the CPU build for the CUDA build and
    adds the nvidia-* wheels), its undo (run2: roll back to run1) and the undo of that undo (run3: roll back
    to run2's restore point, made after the change), with site-packages' hash at each step."""
    root = tmp_path_factory.mktemp("round-trip")
    python = copy_env(base["python"], root / "env")
    out = {"python": python, "hash0": tree_hash(python)}
    run1 = RestorePoint.create(root / "run1", str(python))
    out["first"] = run1.back_up(["torch", "not-installed"])
    out["again"] = run1.back_up(["Torch"])
    pip_install(python, base["wheels"], "torch==2.5.1+cu124")
    out["hash1"], out["changed"] = tree_hash(python), read_inventory(str(python))
    run2 = RestorePoint.create(root / "run2", str(python))
    out["undo"] = roll_back(run1, [run2.run_dir, run1.run_dir], keep_in=run2)
    out["hash2"] = tree_hash(python)
    run3 = RestorePoint.create(root / "run3", str(python))
    out["redo"] = roll_back(run2, [run3.run_dir, run2.run_dir, run1.run_dir], keep_in=run3)
    out["hash3"] = tree_hash(python)
    out.update(run1=run1, run2=run2, run3=run3)
    return out


def _installs(inv):
    return {(d.name, d.version, d.record_sha256) for d in inv.dists.values()}


def test_the_restore_point_on_disk(trip):
    run1, python = trip["run1"], trip["python"]
    assert RestorePoint.load(run1.run_dir).inventory == run1.inventory
    text = (run1.dir / "requirements.txt").read_text()
    assert f"{python} -m pip install --no-deps -r {run1.dir / 'requirements.txt'}" in text
    assert [line for line in text.splitlines() if not line.startswith("#")][0] == "filelock==3.16.1"
    assert "torch==2.5.1+cpu" in text.splitlines()
    assert not (run1.dir / "pip-inspect.json").exists()  # the venv has no pip of its own
    with pytest.raises(RestoreError, match="already holds a restore point"):
        RestorePoint.create(run1.run_dir, str(python))
    with pytest.raises(RestoreError, match="cannot read the restore point"):
        RestorePoint.load(run1.run_dir / "nowhere")


def test_pip_inspect_is_kept_where_the_target_has_pip(tmp_path):
    point = RestorePoint.create(tmp_path / "run", sys.executable)
    report = json.loads((point.dir / "pip-inspect.json").read_text())
    assert "pip" in {d["metadata"]["name"] for d in report["installed"]}


def test_a_backup_holds_the_install_as_it_is(trip):
    run1 = trip["run1"]
    torch = run1.inventory.dists["torch"]
    assert trip["first"] == [f"torch-2.5.1+cpu-{torch.record_sha256[:12]}.tar"]
    assert trip["again"] == []  # this run has that exact install already
    with tarfile.open(run1.backups()[0]) as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("manifest.json").read())
        site = os.path.relpath(torch.site, run1.inventory.prefix)
        assert b"2.5.1+cpu" in tar.extractfile(f"env/{site}/torch/version.py").read()
    assert names[0] == "manifest.json" and all(n.startswith("env/") for n in names[1:])
    assert (manifest["name"], manifest["record_sha256"]) == ("torch", torch.record_sha256)
    assert manifest["skipped"] == []
    pyc = "__pycache__/version.cpython-{}{}.pyc".format(*sys.version_info[:2])
    assert any(f.endswith(pyc) for f in manifest["files"])


def test_rolling_back_puts_every_byte_back(trip):
    undo, run1 = trip["undo"], trip["run1"]
    assert trip["changed"].versions()["torch"] == "2.5.1+cu124" and trip["hash1"] != trip["hash0"]
    assert (undo.ok, undo.problems, undo.missing) == (True, [], [])
    assert undo.removed == sorted(STUBS + ["torch 2.5.1+cu124"])
    assert undo.restored == ["torch 2.5.1+cpu"]
    assert _installs(undo.after) == _installs(run1.inventory)
    # Nothing excluded: pip compiled the bytecode at install and listed it in RECORD, so the backup holds
    # it, the CUDA build's own goes with its RECORD, and reading an inventory writes none (-B).
    assert trip["hash2"] == trip["hash0"]


def test_what_the_roll_back_removed_was_kept_and_can_be_put_back(trip):
    run2, run3, redo = trip["run2"], trip["run3"], trip["redo"]
    kept = {p.name.rsplit("-", 1)[0] for p in run2.backups()}
    assert kept == {"torch-2.5.1+cu124"} | {stub.replace(" ", "-") for stub in STUBS}
    assert (redo.ok, redo.problems, redo.missing) == (True, [], [])
    assert redo.removed == ["torch 2.5.1+cpu"]
    assert redo.restored == sorted(STUBS + ["torch 2.5.1+cu124"])
    assert _installs(redo.after) == _installs(trip["changed"])
    assert trip["hash3"] == trip["hash1"]
    assert [p.name.rsplit("-", 1)[0] for p in run3.backups()] == ["torch-2.5.1+cpu"]


def test_a_namespace_file_two_dists_list_survives(base, tmp_path):
    python = copy_env(base["python"], tmp_path / "env")
    site = site_packages(python)
    before = file_list(site)
    run1 = RestorePoint.create(tmp_path / "run1", str(python))
    pip_install(python, base["wheels"], "nvidia-b")  # lists nvidia/__init__.py, as nvidia-a does
    assert os.path.join(site, "nvidia", "__init__.py") in read_inventory(str(python)).dists["nvidia-b"].files
    run2 = RestorePoint.create(tmp_path / "run2", str(python))
    result = roll_back(run1, [run2.run_dir, run1.run_dir], keep_in=run2)
    assert (result.ok, result.removed, result.restored, result.problems) == (True, ["nvidia-b 1.0"], [], [])
    assert (site / "nvidia" / "__init__.py").is_file() and (site / "nvidia" / "a" / "__init__.py").is_file()
    assert not (site / "nvidia" / "b").exists()
    # The same paths as before, not every byte: pip rewrote the shared nvidia/__init__.py when it installed
    # nvidia-b and recompiled its bytecode, whose header holds the source's new mtime. nvidia-a's RECORD
    # is unchanged, so it is not reinstalled; only that .pyc's header can differ.
    assert file_list(site) == before


def test_without_a_backup_the_present_version_stays_and_is_reported(base, tmp_path):
    python = copy_env(base["python"], tmp_path / "env")
    run1 = RestorePoint.create(tmp_path / "run1", str(python))  # no backup made
    argv = [uv(), "pip", "install", "--quiet", "--python", str(python), "--no-index", "--find-links"]
    subprocess.run([*argv, str(base["wheels"]), "torch==2.5.1+cu124"], check=True, timeout=120)
    run2 = RestorePoint.create(tmp_path / "run2", str(python))
    result = roll_back(run1, [run2.run_dir, run1.run_dir], keep_in=run2)
    assert (result.ok, result.missing, result.restored) == (False, ["torch==2.5.1+cpu"], [])
    assert result.removed == STUBS
    assert result.problems == ["kept torch 2.5.1+cu124: no backup of 2.5.1+cpu to put in its place"]
    torch = result.after.dists["torch"]
    assert (torch.version, torch.installer) == ("2.5.1+cu124", "uv")


def test_links_modes_mtimes_and_a_file_outside_the_prefix(base, tmp_path):
    python = copy_env(base["python"], tmp_path / "env")
    site = site_packages(python)
    run1 = RestorePoint.create(tmp_path / "run1", str(python))
    files = {"oddity/__init__.py": "", "oddity/data.txt": "data\n", "oddity/tool.sh": "#!/bin/sh\n"}
    unpack_wheel(build_wheel(tmp_path / "w", "oddity", "1.0", files), site, installer="by-hand")
    (site / "oddity" / "tool.sh").chmod(0o750)
    os.utime(site / "oddity" / "data.txt", (1_000_000_000, 1_000_000_000))
    (site / "oddity" / "link.txt").symlink_to("data.txt")
    outside = tmp_path / "outside.txt"  # beside the environment, not in it
    outside.write_text("not the environment's\n")
    with open(site / "oddity-1.0.dist-info" / "RECORD", "a") as record:
        record.write(f"oddity/link.txt,,\n{os.path.relpath(outside, site)},,\n")
    run2 = RestorePoint.create(tmp_path / "run2", str(python))
    assert str(outside) in run2.inventory.dists["oddity"].files
    result = roll_back(run1, [run2.run_dir, run1.run_dir], keep_in=run2)
    assert (result.ok, result.removed) == (True, ["oddity 1.0"])
    assert result.problems == [f"oddity: not removed, outside the environment's prefix: {outside}"]
    assert outside.read_text() == "not the environment's\n" and not (site / "oddity").exists()
    manifest = backup.read_manifest(run2.backups()[0])
    assert manifest["skipped"] == [{"path": str(outside), "why": "outside the environment's prefix"}]

    run3 = RestorePoint.create(tmp_path / "run3", str(python))
    forward = roll_back(run2, [run3.run_dir, run2.run_dir], keep_in=run3)
    assert (forward.ok, forward.restored, forward.problems) == (True, ["oddity 1.0"], [])
    assert os.readlink(site / "oddity" / "link.txt") == "data.txt"
    assert (site / "oddity" / "tool.sh").stat().st_mode & 0o777 == 0o750
    assert (site / "oddity" / "data.txt").stat().st_mtime == 1_000_000_000
    assert (site / "oddity-1.0.dist-info" / "INSTALLER").read_text() == "by-hand\n"  # not in RECORD, kept


def _member(name: str, **attrs) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    for key, value in attrs.items():
        setattr(info, key, value)
    data = b"evil\n" if info.isreg() else b""
    info.size = len(data)
    return info, data


def test_a_malicious_backup_is_refused_whole(base, tmp_path):
    python = copy_env(base["python"], tmp_path / "env")
    site = site_packages(python)
    unpack_wheel(build_wheel(tmp_path / "w", "victim", "1.0", {"victim/__init__.py": "V = 1\n"}), site)
    run1 = RestorePoint.create(tmp_path / "run1", str(python))
    assert run1.back_up(["victim"])  # the genuine backup, in the older run
    shutil.rmtree(site / "victim")
    shutil.rmtree(site / "victim-1.0.dist-info")
    run2 = RestorePoint.create(tmp_path / "run2", str(python))
    victim = run1.inventory.dists["victim"]
    manifest = {"format": 1, "name": "victim", "version": "1.0", "record_sha256": victim.record_sha256}
    prefix = run1.inventory.prefix
    members = [
        _member("env/../../escape.txt"),
        _member("/absolute.txt"),
        _member("env//tmp/absolute.txt"),
        _member("env/lib/passwd", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
        _member("env/lib/up", type=tarfile.SYMTYPE, linkname="../../.."),
        _member("env/lib/hard", type=tarfile.LNKTYPE, linkname="env/lib/x"),
        _member("env/lib/null", type=tarfile.CHRTYPE, devmajor=1, devminor=3),
        _member("env/lib/suid", mode=0o4755),
        _member("env/lib/fine.txt"),  # harmless, but the tar is refused whole: not written either
    ]
    planted = run2.dists_dir / backup.file_name("victim", "1.0", victim.record_sha256)
    planted.parent.mkdir(parents=True)
    with tarfile.open(planted, "w", format=tarfile.PAX_FORMAT) as tar:
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for info, data in members:
            tar.addfile(info, io.BytesIO(data))

    refused = backup.extract(planted, prefix)  # asked directly, as roll_back asks before choosing it
    assert len(refused) == 8 and all("refused" in p for p in refused)
    alone = roll_back(run1, [run2.run_dir], keep_in=run2)
    assert (alone.ok, alone.missing, alone.restored) == (False, ["victim==1.0"], [])
    assert len(alone.problems) == 8 and all("refused" in p for p in alone.problems)
    assert not os.path.lexists(os.path.normpath(os.path.join(prefix, "../../escape.txt")))
    assert not os.path.lexists(os.path.join(prefix, "lib", "fine.txt"))
    assert not os.path.lexists(os.path.join(prefix, "lib", "passwd"))

    # Searching on, the genuine backup of the older run is found and used.
    both = roll_back(run1, [run2.run_dir, run1.run_dir], keep_in=run2)
    assert (both.ok, both.restored, len(both.problems)) == (True, ["victim 1.0"], 8)
    assert (site / "victim" / "__init__.py").read_text() == "V = 1\n"


def _flip_a_byte(tar_path, member_suffix: str) -> None:
    """One bit of one file's data changed in place, as a bad disk or a careless edit would leave it (a tar
    has a checksum over each header, none over the data)."""
    with tarfile.open(tar_path) as tar:
        offset = next(m for m in tar.getmembers() if m.name.endswith(member_suffix)).offset_data
    with open(tar_path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 1]))


def test_a_backup_with_one_flipped_byte_is_not_put_back(base, tmp_path):
    python = copy_env(base["python"], tmp_path / "env")
    run1 = RestorePoint.create(tmp_path / "run1", str(python))
    (made,) = run1.back_up(["torch"])
    pip_install(python, base["wheels"], "torch==2.5.1+cu124")
    _flip_a_byte(run1.dists_dir / made, "torch/version.py")
    run2 = RestorePoint.create(tmp_path / "run2", str(python))
    result = roll_back(run1, [run2.run_dir, run1.run_dir], keep_in=run2)
    assert (result.ok, result.restored, result.missing) == (False, [], ["torch==2.5.1+cpu"])
    refused = [p for p in result.problems if "torch/version.py' refused: sha256 " in p]
    assert refused and "the restore point says" in refused[0], result.problems
    assert result.problems[-1] == "kept torch 2.5.1+cu124: no backup of 2.5.1+cpu to put in its place"
    assert result.after.dists["torch"].version == "2.5.1+cu124"  # the present build, not a corrupt one


def test_a_backup_that_differs_from_its_record_is_not_put_back(base, tmp_path):
    """A backup whose file and manifest agree, but not with the RECORD the backup holds: refused too."""
    python = copy_env(base["python"], tmp_path / "env")
    run1 = RestorePoint.create(tmp_path / "run1", str(python))
    (made,) = run1.back_up(["filelock"])
    tar_path = run1.dists_dir / made
    with tarfile.open(tar_path) as tar:
        members = [(m, tar.extractfile(m).read() if m.isreg() else None) for m in tar.getmembers()]
    manifest = json.loads(members[0][1])
    target = next(m.name for m, _ in members if m.name.endswith("filelock_stub/__init__.py"))
    forged = b"print('not the file RECORD lists')\n"
    manifest["sha256"][target[len("env/") :]] = hashlib.sha256(forged).hexdigest()
    with tarfile.open(tar_path, "w", format=tarfile.PAX_FORMAT) as tar:
        for m, data in members:
            data = json.dumps(manifest).encode() if m.name == "manifest.json" else data
            data = forged if m.name == target else data
            m.size = len(data) if data is not None else m.size
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
    problems = backup.refusals(tar_path, run1.inventory.prefix)
    assert len(problems) == 1 and "filelock_stub/__init__.py' refused: sha256 " in problems[0]
    assert "its RECORD says" in problems[0]


def test_undo_of_a_swap_without_a_backup_keeps_the_one_installed(base, tmp_path):
    """onnxruntime replaced by onnxruntime-gpu (the plan's uninstall, then install): both install the
    `onnxruntime` package. When no copy of onnxruntime can be put back, the undo must not remove
    onnxruntime-gpu (issue 24: "one undo left neither package installed")."""
    wheels = tmp_path / "wheels"
    for name in ("onnxruntime", "onnxruntime-gpu"):
        files = {"onnxruntime/__init__.py": f"# {name}\n", "onnxruntime/capi/_pybind_state.py": f"# {name}\n"}
        build_wheel(wheels, name, "1.20.1", files)
    python = make_venv(sys.executable, tmp_path / "env")
    pip_install(python, wheels, "onnxruntime")
    run1 = RestorePoint.create(tmp_path / "run1", str(python))
    (made,) = run1.back_up(["onnxruntime"])
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    subprocess.run([*pip, "uninstall", "-q", "-y", "onnxruntime"], check=True, timeout=120)
    pip_install(python, wheels, "onnxruntime-gpu")
    (run1.dists_dir / made).unlink()  # gone: pruned, or a copy never made
    run2 = RestorePoint.create(tmp_path / "run2", str(python))
    result = roll_back(run1, [run2.run_dir, run1.run_dir], keep_in=run2)
    assert (result.ok, result.removed, result.missing) == (False, [], ["onnxruntime==1.20.1"])
    assert result.problems == [
        "kept onnxruntime-gpu 1.20.1: it holds the files of onnxruntime 1.20.1, of which there is no backup "
        "to put in its place"
    ]
    assert sorted(result.after.dists) == ["onnxruntime-gpu"]


def test_an_install_stopped_by_sigterm_is_rolled_back_to_the_same_files(base, tmp_path):
    """Real pip, stopped with SIGTERM while it writes a wheel's files: pip rolls back only on an Exception
    (pip 23.2.1 src/pip/_internal/req/__init__.py:79-84), so it leaves what it stashed of the old torch
    under `~orch` names beside the originals (AdjacentTempDirectory) and a partly written new torch."""
    wheels = tmp_path / "wheels"
    size = 256 << 20
    files = {
        "torch/__init__.py": "__version__ = '2.5.1+cu124'\n",
        "torch/lib/libtorch_cuda.so": "\0" * size,  # long enough to be stopped in the middle of
    }
    build_wheel(wheels, "torch", "2.5.1+cu124", files)
    python = copy_env(base["python"], tmp_path / "env")
    before_tree = tree_hash(python)
    run1 = RestorePoint.create(tmp_path / "run1", str(python))
    run1.back_up(["torch"])
    lib = site_packages(python) / "torch" / "lib" / "libtorch_cuda.so"
    argv = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", "--no-deps"]
    proc = subprocess.Popen(
        [*argv, "--find-links", str(wheels), "torch==2.5.1+cu124"], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while not lib.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        os.killpg(proc.pid, signal.SIGTERM)
    finally:
        proc.wait(timeout=60)
    assert lib.exists() and lib.stat().st_size < size, "pip was not stopped while it wrote the library"
    assert any(p.name.startswith("~") for p in site_packages(python).iterdir())  # pip's stash
    result = roll_back(run1, [run1.run_dir], keep_in=run1)
    assert (result.ok, result.problems, result.missing) == (True, [], []), result
    assert str(lib) in result.leftovers
    assert tree_hash(python) == before_tree
