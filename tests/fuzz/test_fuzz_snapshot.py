"""Snapshots from strangers are data: any archive, directory or JSON part either loads or is refused with a
SnapshotError, and whatever loads is replayed through every probe and every shipped rule without a crash."""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import Fact, Facts
from gpudoctor.host import snapshot
from gpudoctor.host.snapshot import SnapshotError, SnapshotHost
from gpudoctor.probes import registry

from .strategies import json_values, mutated_members, snapshot_members, text

SHIPPED = load_rules([])
MANIFEST = json.dumps({"format": snapshot.FORMAT, "version": snapshot.VERSION}).encode()


def replay(rec: snapshot.Recording) -> Facts:
    """Every probe over the recording, then every shipped rule over the facts; nothing may raise."""
    host = SnapshotHost(rec, source="fuzz")
    items: dict[str, Fact] = {}
    for _name, prefixes, probe in registry(deep=True):  # the runtime probe replays runtime.json
        facts = probe(host)
        for key, fact in facts.items():
            assert isinstance(fact, Fact) and key.split(".")[0].split("[")[0] in prefixes
        items.update(facts)
    facts = Facts(items)
    for result in evaluate(SHIPPED, facts):
        assert result.status in ("fired", "passed", "unknown", "not_applicable")
        for finding in result.findings:
            assert isinstance(finding.message, str) and all(
                isinstance(a, str) for s in finding.fix for a in s.argv
            )
    return facts


def write_tar(members: list[tuple[str, bytes, bytes]], path: Path, mode: str = "w:gz") -> None:
    """members: (name, data, tar type). Written as given: no name is cleaned up."""
    with tarfile.open(path, mode) as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.REGTYPE:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
                tar.addfile(info)


# --- the fixtures themselves, mutated ----------------------------------------------------------------------


@given(mutated_members())
def test_mutated_snapshot_loads_or_is_refused_and_replays_without_a_crash(members):
    try:
        rec = snapshot._from_members(members, "fuzz")
    except SnapshotError:
        return
    replay(rec)


@pytest.mark.parametrize("index", [0, 1], ids=["h200", "nogpu"])
def test_fixture_snapshots_replay(index):
    facts = replay(snapshot._from_members(snapshot_members(index), "fixture"))
    assert facts.get("host.hostname").known


@given(
    st.dictionaries(
        st.sampled_from(
            ["manifest.json", *snapshot.JSON_PARTS, "files/etc/os-release", "files/proc/meminfo"]
        ),
        st.one_of(json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40)),
    )
)
def test_random_json_parts(members):
    members.setdefault("manifest.json", MANIFEST)
    try:
        rec = snapshot._from_members(members, "fuzz")
    except SnapshotError as e:
        assert str(e).startswith("fuzz: ")
        return
    replay(rec)


# --- archives and directories ----------------------------------------------------------------------------

member_names = st.one_of(
    st.sampled_from(
        [
            "manifest.json", "./manifest.json", "reads.json", "files/etc/os-release", "files/proc/meminfo",
            "/etc/passwd", "../evil", "files/../../evil", "./../evil", "a\\b", "", ".", "files/", "files//x",
        ]
    ),
    st.lists(st.sampled_from(["files", "proc", "..", ".", "x", "", "é"]), min_size=1, max_size=4).map(
        "/".join
    ),
    text,
)  # fmt: skip
member_types = st.sampled_from(
    [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE]
)
tar_members = st.lists(
    st.tuples(member_names, st.one_of(st.just(MANIFEST), st.binary(max_size=64)), member_types), max_size=8
)


@given(tar_members, st.sampled_from(["w:gz", "w", "w:bz2", "w:xz"]))
def test_random_tar_archives(members, mode):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.tar.gz"
        try:
            write_tar(members, path, mode)
        except (ValueError, UnicodeError):
            return  # a name tarfile itself cannot write
        try:
            rec = snapshot.load(str(path))
        except SnapshotError:
            return
        unsafe = [n for n, d, k in members if k == tarfile.REGTYPE and n and not snapshot._safe_name(n)]
        assert not [n for n in unsafe if not n.startswith("./") or not snapshot._safe_name(n[2:])]
        assert all(".." not in p.split("/") for p in rec.files)
        replay(rec)


@given(st.binary(max_size=300))
def test_junk_archives_are_refused(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "junk.tar.gz"
        path.write_bytes(data)
        with pytest.raises(SnapshotError):
            snapshot.load(str(path))


@given(
    st.dictionaries(
        st.lists(
            st.sampled_from(["files", "proc", "etc", "x.json", "reads.json", "dirs.json"]),
            min_size=1,
            max_size=3,
        ).map("/".join),
        st.one_of(
            st.just(MANIFEST), json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40)
        ),
        max_size=6,
    )
)
def test_random_directories(tree):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "manifest.json").write_bytes(MANIFEST)
        for rel, data in tree.items():
            target = root / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except (IsADirectoryError, NotADirectoryError, FileExistsError):
                continue  # "files" both a file and a directory: the first one wins
        try:
            rec = snapshot.load(str(root))
        except SnapshotError:
            return
        replay(rec)


# --- hostile snapshots: refused fast, with a clear reason -------------------------------------------------


def fixture_members() -> list[tuple[str, bytes, bytes]]:
    return [(n, d, tarfile.REGTYPE) for n, d in sorted(snapshot_members(1).items())]


@pytest.mark.parametrize(
    "name", ["/etc/passwd", "../evil", "files/../../evil", "./../evil", "files/x/../../../y"]
)
def test_absolute_and_dotdot_member_names_are_refused(tmp_path, name):
    path = tmp_path / "s.tar.gz"
    write_tar([*fixture_members(), (name, b"x", tarfile.REGTYPE)], path)
    with pytest.raises(SnapshotError, match="unsafe member name"):
        snapshot.load(str(path))
    assert not (tmp_path / "evil").exists()


def test_links_and_special_members_are_never_followed(tmp_path):
    path = tmp_path / "s.tar.gz"
    members = [m for m in fixture_members() if m[0] != "files/etc/os-release"]
    write_tar(members + [("files/etc/os-release", b"", tarfile.SYMTYPE), ("x", b"", tarfile.FIFOTYPE)], path)
    rec = snapshot.load(str(path))
    assert "/etc/os-release" not in rec.files


def test_directory_snapshot_symlinks_are_not_followed(tmp_path):
    for name, data in snapshot_members(1).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "files/etc/passwd").symlink_to("/etc/passwd")
    (tmp_path / "files/host-root").symlink_to("/", target_is_directory=True)
    rec = snapshot.load(str(tmp_path))
    assert "/etc/passwd" not in rec.files
    assert not any(p.startswith("/host-root") for p in rec.files)


def test_unreadable_file_in_a_directory_snapshot_is_a_snapshot_error(tmp_path, monkeypatch):
    (tmp_path / "manifest.json").write_bytes(MANIFEST)
    (tmp_path / "reads.json").write_bytes(b"{}")

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(SnapshotError, match="cannot read"):
        snapshot.load(str(tmp_path))


def test_tar_bomb_with_too_many_members_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MAX_MEMBERS", 50)
    path = tmp_path / "s.tar.gz"
    write_tar(fixture_members() + [(f"files/x/{i}", b"", tarfile.REGTYPE) for i in range(60)], path)
    with pytest.raises(SnapshotError, match="too many members"):
        snapshot.load(str(path))


def test_tar_bomb_of_directory_entries_is_refused(tmp_path, monkeypatch):
    # Entries that are not files are not read, but each one is still a header to parse and keep.
    monkeypatch.setattr(snapshot, "MAX_MEMBERS", 50)
    path = tmp_path / "s.tar.gz"
    write_tar(fixture_members()[:1] + [(f"d{i}", b"", tarfile.DIRTYPE) for i in range(60)], path)
    with pytest.raises(SnapshotError, match="too many members"):
        snapshot.load(str(path))


def test_member_over_the_size_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MAX_MEMBER", 64 * 1024)
    path = tmp_path / "s.tar.gz"
    write_tar(fixture_members() + [("files/zeros", b"\0" * (1024 * 1024), tarfile.REGTYPE)], path)
    assert path.stat().st_size < 64 * 1024  # a gzip bomb: small on disk, large unpacked
    with pytest.raises(SnapshotError, match="larger than"):
        snapshot.load(str(path))


def test_snapshot_over_the_total_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MAX_TOTAL", 200 * 1024)
    path = tmp_path / "s.tar.gz"
    write_tar(fixture_members() + [(f"files/z{i}", b"\0" * 50_000, tarfile.REGTYPE) for i in range(6)], path)
    with pytest.raises(SnapshotError, match="more than"):
        snapshot.load(str(path))


def test_directory_snapshot_over_the_caps_is_refused(tmp_path, monkeypatch):
    (tmp_path / "manifest.json").write_bytes(MANIFEST)
    (tmp_path / "big").write_bytes(b"\0" * 5000)
    monkeypatch.setattr(snapshot, "MAX_MEMBER", 1000)
    with pytest.raises(SnapshotError, match="larger than"):
        snapshot.load(str(tmp_path))


@pytest.mark.parametrize("part", snapshot.JSON_PARTS + ("manifest.json",))
@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_deeply_nested_json_parts_are_refused(part, depth):
    members = dict(snapshot_members(1))
    members[part] = b"[" * depth + b"]" * depth
    started = time.monotonic()
    with pytest.raises(
        SnapshotError, match=f"{part} (is not valid JSON|has the wrong shape)|not a gpudoctor"
    ):
        snapshot._from_members(members, "fuzz")
    assert time.monotonic() - started < 5


def test_deeply_nested_json_part_end_to_end(tmp_path):
    path = tmp_path / "s.tar.gz"
    write_tar(
        [m for m in fixture_members() if m[0] != "nvml.json"]
        + [("nvml.json", b'{"system": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", tarfile.REGTYPE)],
        path,
    )
    with pytest.raises(SnapshotError, match="nvml.json is not valid JSON"):
        snapshot.load(str(path))
