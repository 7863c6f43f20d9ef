"""The host compiler digest: the same answer as the knowledge lookup, cached, and never trusted blindly."""

from __future__ import annotations

import json
import os

import pytest

from gpudoctor import knowledge as kn
from gpudoctor import table_digest


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def expected() -> dict:
    return {
        row.cuda: {"gcc": kn.newest_host_compiler(row.cuda, "gcc"), "clang": row.clang_max}
        for row in kn.knowledge().host_compilers
    }


def test_the_digest_is_the_lookups_answer(cache):
    limits = table_digest.host_compiler_limits()
    assert limits == expected()
    assert limits["12.4"] == {"gcc": 13, "clang": 17}
    assert limits["12.2"] == {"gcc": 12, "clang": None}  # no clang limit recorded for 12.2


def test_written_once_then_read_back(cache, monkeypatch):
    table_digest.host_compiler_limits()
    (written,) = list(cache.glob("gpudoctor/knowledge-*/host_compilers-*.json"))
    doc = json.loads(written.read_text())
    doc["answer"]["12.4"]["gcc"] = 99  # the cache is what a hit returns: the tables are not consulted
    written.write_text(json.dumps(doc))

    def no_tables():
        raise AssertionError("loaded the tables on a cache hit")

    monkeypatch.setattr(kn, "knowledge", no_tables)
    assert table_digest.host_compiler_limits()["12.4"]["gcc"] == 99


def test_a_broken_cache_file_is_computed_again(cache):
    table_digest.host_compiler_limits()
    (written,) = list(cache.glob("gpudoctor/knowledge-*/host_compilers-*.json"))
    written.write_text("{not json")
    assert table_digest.host_compiler_limits() == expected()
    assert json.loads(written.read_text())["answer"] == expected()


def test_off_with_gpudoctor_no_cache(cache, monkeypatch):
    monkeypatch.setenv("GPUDOCTOR_NO_CACHE", "1")
    assert table_digest.host_compiler_limits() == expected()
    assert not list(cache.glob("gpudoctor/knowledge-*/*"))


def test_broken_tables_are_a_table_error_and_nothing_is_cached(cache, monkeypatch):
    def broken():
        raise kn.KnowledgeError([])

    monkeypatch.setattr(kn, "knowledge", broken)
    with pytest.raises(table_digest.TableError):
        table_digest.host_compiler_limits()
    assert not list(cache.glob("gpudoctor/knowledge-*/*"))


def test_the_newest_rows_are_cached_apart_from_other_answers_of_a_table(cache, monkeypatch):
    kb = kn.knowledge()
    assert table_digest.newest_row("torch") == max(
        (r.version for r in kb.torch_releases), key=lambda v: tuple(int(p) for p in v.split("."))
    )
    assert table_digest.newest_row("cuda_drivers") == str(max(r.branch for r in kb.driver_branches))
    (written,) = list(cache.glob("gpudoctor/knowledge-*/torch-newest-*.json"))
    written.write_text(json.dumps({"answer": "9.99"}))
    monkeypatch.setattr(kn, "knowledge", lambda: pytest.fail("loaded the tables on a cache hit"))
    assert table_digest.newest_row("torch") == "9.99"
    # Another question of the same table has a file of its own.
    monkeypatch.setattr(kn, "knowledge", lambda: kb)
    assert table_digest.digest("torch", lambda kb: "other", "oldest") == "other"
    assert table_digest.newest_row("torch") == "9.99"


def test_a_table_file_that_changed_is_answered_again(cache, monkeypatch, tmp_path):
    # Keyed by the table file's size, times and inode (not its text's sha256): a changed file is a new key.
    from gpudoctor.datafiles import shipped_rules_dir

    shipped = tmp_path / "shipped"
    (shipped / "knowledge").mkdir(parents=True)
    table = shipped / "knowledge" / "host_compilers.yaml"
    table.write_bytes((shipped_rules_dir() / "knowledge" / "host_compilers.yaml").read_bytes())
    monkeypatch.setattr(table_digest, "shipped_rules_dir", lambda: shipped)
    assert table_digest.host_compiler_limits() == expected()
    (first,) = list(cache.glob("gpudoctor/knowledge-*/host_compilers-*.json"))
    first.write_text(json.dumps({"answer": "stale"}))
    assert table_digest.host_compiler_limits() == "stale"
    st = table.stat()
    os.utime(table, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert table_digest.host_compiler_limits() == expected()
    assert len(list(cache.glob("gpudoctor/knowledge-*/host_compilers-*.json"))) == 2
