"""remedy.backup on a distribution that real pip installed into a real venv: the tar and its manifest, finding
it again, the RECORD hashes it is checked against, where a path may be written, and extraction (refused
whole, or every byte put back). tests/remedy/test_restore.py goes through restore points end to end."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import shutil
import sys
import tarfile

import pytest

from gpudoctor.remedy import backup
from gpudoctor.remedy.inventory import read_inventory

from pyenvs import build_wheel, make_venv, pip_install, site_packages

FILES = {"demo/__init__.py": "VALUE = 1\n", "demo/data/table.txt": "a,b\n1,2\n"}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A venv with `demo 1.0` installed by real pip from a wheel; its inventory's Dist and prefix."""
    root = tmp_path_factory.mktemp("backup")
    build_wheel(root / "wheels", "demo", "1.0", FILES)
    python = make_venv(sys.executable, root / "env")
    pip_install(python, root / "wheels", "demo")
    inv = read_inventory(str(python))
    return {"python": python, "dist": inv.dists["demo"], "prefix": inv.prefix, "site": site_packages(python)}


@pytest.fixture
def made(env, tmp_path):
    return backup.write(env["dist"], env["prefix"], tmp_path / "run" / "restore" / "dists")


def test_file_name_keeps_a_version_readable_and_a_path_out():
    sha = "0123456789abcdef" * 4
    assert backup.file_name("torch", "2.5.1+cu124", sha) == "torch-2.5.1+cu124-0123456789ab.tar"
    assert backup.file_name("x", "1.0/../../etc", sha) == "x-1.0_.._.._etc-0123456789ab.tar"


def test_parse_record_reads_the_hashes_pip_wrote(env):
    """RECORD as pip wrote it: each file's urlsafe-base64 sha256, RECORD itself without one."""
    dist, site = env["dist"], env["site"]
    text = (site / "demo-1.0.dist-info" / "RECORD").read_text()
    site_rel = os.path.relpath(dist.site, env["prefix"])
    hashes = backup.parse_record(text, site_rel)
    want = hashlib.sha256(FILES["demo/__init__.py"].encode()).hexdigest()
    assert hashes[os.path.join(site_rel, "demo", "__init__.py")] == want
    assert os.path.join(site_rel, "demo-1.0.dist-info", "RECORD") not in hashes
    assert backup.record_hashes(dist, env["prefix"]) == hashes


def test_parse_record_skips_what_is_not_a_sha256():
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"x").digest()).rstrip(b"=").decode()
    text = f"a.py,sha256={digest},1\nb.py,md5=abc,1\nc.py,sha256=***,1\nd.py,,\n"
    assert backup.parse_record(text, "lib") == {"lib/a.py": hashlib.sha256(b"x").hexdigest()}


def test_inside_is_by_name_and_by_where_a_directory_really_is(tmp_path):
    prefix = tmp_path / "env"
    (prefix / "lib").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", prefix / "out")
    assert backup.inside(str(prefix / "lib" / "x.py"), str(prefix))
    assert backup.inside(str(prefix / "lib" / "new" / "deeper" / "x.py"), str(prefix))  # not made yet
    assert not backup.inside(str(prefix), str(prefix))
    assert not backup.inside(str(prefix / ".." / "x.py"), str(prefix))
    assert not backup.inside(str(tmp_path / "env2" / "x.py"), str(prefix))  # a shared prefix of letters
    assert not backup.inside(str(prefix / "out" / "x.py"), str(prefix))  # a link leading out


def test_a_backup_holds_every_file_with_its_manifest(env, made):
    dist, prefix = env["dist"], env["prefix"]
    assert made.name == backup.file_name("demo", "1.0", dist.record_sha256)
    assert not list(made.parent.glob("*.part"))
    manifest = backup.read_manifest(made)
    assert (manifest["format"], manifest["name"], manifest["version"]) == (2, "demo", "1.0")
    assert (manifest["record_sha256"], manifest["prefix"], manifest["skipped"]) == (
        dist.record_sha256,
        prefix,
        [],
    )
    rels = sorted(os.path.relpath(p, prefix) for p in backup.dist_paths(dist))
    assert sorted(manifest["files"]) == rels
    init = os.path.relpath(os.path.join(dist.site, "demo", "__init__.py"), prefix)
    assert manifest["sha256"][init] == hashlib.sha256(b"VALUE = 1\n").hexdigest()
    assert manifest["not_as_recorded"] == []
    with tarfile.open(made) as tar:
        assert tar.getnames()[0] == "manifest.json"
        assert tar.extractfile("env/" + init).read() == b"VALUE = 1\n"


def test_a_file_edited_after_install_is_backed_up_as_it_is_and_said_so(env, tmp_path):
    env2 = tmp_path / "env"
    shutil.copytree(env["prefix"], env2, symlinks=True)
    dist = read_inventory(str(env2 / "bin" / "python")).dists["demo"]
    init = os.path.join(dist.site, "demo", "__init__.py")
    with open(init, "a") as f:
        f.write("EDITED = True\n")
    manifest = backup.read_manifest(backup.write(dist, str(env2), tmp_path / "dists"))
    assert manifest["not_as_recorded"] == [os.path.relpath(init, env2)]


def test_what_lies_outside_the_prefix_or_is_gone_is_skipped_with_why(env, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not the environment's\n")
    gone = os.path.join(env["dist"].site, "demo", "removed_by_hand.py")
    dist = dataclasses.replace(env["dist"], files=(*env["dist"].files, str(outside), gone))
    manifest = backup.read_manifest(backup.write(dist, env["prefix"], tmp_path / "dists"))
    assert manifest["skipped"] == [
        {"path": p, "why": w}
        for p, w in sorted(
            [(str(outside), "outside the environment's prefix"), (gone, "listed in RECORD but not there")]
        )
    ]
    assert os.path.relpath(str(outside), env["prefix"]) not in manifest["files"]


def test_a_backup_that_cannot_be_written_is_a_backup_error(env, tmp_path):
    """The restore directory is a file (a clobbered run directory): an error that names the distribution,
    not a raw OSError the caller does not expect."""
    dest = tmp_path / "dists"
    dest.write_text("")
    with pytest.raises(backup.BackupError, match=r"^cannot back up demo 1\.0: .*File exists"):
        backup.write(env["dist"], env["prefix"], dest)
    under = dest / "restore"
    with pytest.raises(backup.BackupError, match=r"^cannot back up demo 1\.0: .*Not a directory"):
        backup.write(env["dist"], env["prefix"], under)


def test_find_looks_in_run_and_backup_directories_and_checks_the_manifest(env, made, tmp_path):
    dist = env["dist"]
    run_dir = made.parent.parent.parent
    hits = backup.find([tmp_path / "nowhere", run_dir, made.parent], "demo", "1.0", dist.record_sha256)
    assert hits == [made]  # each directory once, whichever way it was named
    assert backup.find([run_dir], "demo", "1.0", "") == []  # no RECORD: nothing to trust
    other = "f" * 64
    assert backup.find([run_dir], "demo", "1.0", other) == []
    # A tar under the right name whose manifest names another install is not that install's backup.
    shutil.copy(made, made.parent / backup.file_name("demo", "1.0", other))
    assert backup.find([run_dir], "demo", "1.0", other) == []


def test_read_manifest_refuses_what_gpudoctor_did_not_write(tmp_path, made):
    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w") as tar:
        tar.add(made, arcname="something.txt")
    (tmp_path / "garbage.tar").write_bytes(b"not a tar at all")
    assert backup.read_manifest(plain) is None
    assert backup.read_manifest(tmp_path / "garbage.tar") is None
    assert backup.refusals(plain, "/tmp") == ["plain.tar: no manifest gpudoctor can read"]


def test_an_intact_backup_is_put_back_byte_for_byte_into_an_emptied_environment(env, made, tmp_path):
    prefix = tmp_path / "env"
    shutil.copytree(env["prefix"], prefix, symlinks=True)
    site = site_packages(prefix / "bin" / "python")
    init = site / "demo" / "__init__.py"
    mtime = init.stat().st_mtime
    shutil.rmtree(site / "demo")
    shutil.rmtree(site / "demo-1.0.dist-info")
    assert backup.refusals(made, str(prefix)) == []
    assert backup.extract(made, str(prefix)) == []
    assert init.read_text() == "VALUE = 1\n"
    assert (site / "demo" / "data" / "table.txt").read_text() == FILES["demo/data/table.txt"]
    assert int(init.stat().st_mtime) == int(mtime)
    assert (
        read_inventory(str(prefix / "bin" / "python")).dists["demo"].record_sha256
        == env["dist"].record_sha256
    )
    assert not list(site.rglob("*.gpudoctor-part"))


def test_a_changed_byte_refuses_the_whole_backup_and_writes_nothing(env, made, tmp_path):
    with tarfile.open(made) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("demo/data/table.txt"))
    with open(made, "r+b") as f:
        f.seek(member.offset_data)
        f.write(b"A")  # "a,b" becomes "A,b"
    prefix = tmp_path / "env"
    prefix.mkdir()
    problems = backup.extract(made, str(prefix))
    assert len(problems) == 1
    assert problems[0].startswith(f"{made.name}: member '{member.name}' refused: sha256 ")
    assert "the restore point says" in problems[0]
    assert list(prefix.iterdir()) == []


def test_a_file_listed_in_the_manifest_but_missing_from_the_tar_is_named(env, made, tmp_path):
    manifest = backup.read_manifest(made)
    short = tmp_path / made.name
    with tarfile.open(made) as src, tarfile.open(short, "w", format=tarfile.PAX_FORMAT) as out:
        dropped = next(m.name for m in src.getmembers() if m.name.endswith("table.txt"))
        for m in src.getmembers():
            if m.name != dropped:
                out.addfile(m, src.extractfile(m) if m.isreg() else None)
    rel = dropped[len(backup.ROOT) :]
    assert rel in manifest["files"]
    assert backup.refusals(short, env["prefix"]) == [
        f"{made.name}: {rel} is in its manifest but not in the backup"
    ]
