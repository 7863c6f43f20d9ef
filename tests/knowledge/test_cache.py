"""The shipped knowledge tables are cached validated and typed (knowledge/cache.py): what the cache gives is
equal to what parsing gives, and it is never trusted for other tables, other versions, a damaged or foreign
file, or tables with problems."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor import knowledge as kn
from gpudoctor.knowledge import cache, loading

from conftest import ROOT


class Counting:
    """loading.build_knowledge over the shipped directory, counting its calls: a call is a load that did not
    come from the cache."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, files):
        self.calls += 1
        return loading.build_knowledge(files, kn.knowledge_dir())


@pytest.fixture
def cache_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def files() -> dict:
    return loading.read_tables(kn.knowledge_dir())


@pytest.fixture(scope="module")
def parsed():
    return kn.load_knowledge(kn.knowledge_dir())


def cached_file() -> Path:
    (path,) = list(cache.cache_dir().glob("*.json"))
    return path


def test_a_second_load_comes_from_the_cache_and_is_equal(cache_home, files, parsed):
    build = Counting()
    first = cache.load(files, build)
    assert first == parsed and build.calls == 1
    again = cache.load(files, build)
    assert build.calls == 1
    assert again == parsed and repr(again) == repr(parsed)
    assert again.rows() == parsed.rows() and len(again.rows()) > 200
    # The typed details survive: frozen rows, tuples, read-only mappings, dates, torch variants.
    assert again.tables["torch"].checked == parsed.tables["torch"].checked
    assert type(again.tables["torch"].checked).__name__ == "date"
    assert again.torch_releases[-1].variants == parsed.torch_releases[-1].variants
    assert isinstance(again.gpus[0].nvlink_unwired or (), tuple) and isinstance(again.host_compilers, tuple)
    with pytest.raises(TypeError):
        again.tables["x"] = None  # type: ignore[index]
    assert cached_file().name == f"{cache.tables_key(files)}.json"
    assert cache.cache_dir().name == f"tables-{cache.__version__}-{cache.FORMAT}"


def test_what_the_cache_holds_is_what_is_read(cache_home, files, parsed):
    cache.load(files, Counting())
    path = cached_file()
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["knowledge"]["host_compilers"][0]["gcc_max"] = 99
    path.write_text(json.dumps(doc), encoding="utf-8")
    build = Counting()
    assert cache.load(files, build).host_compilers[0].gcc_max == 99 and build.calls == 0


def test_changed_added_or_removed_table_text_misses_the_cache(cache_home, files, parsed):
    cache.load(files, Counting())
    # the same concatenated bytes, with the boundary between two files moved by one byte
    cudnn, gpus = files["cudnn.yaml"], files["gpus.yaml"]
    moved = dict(files, **{"cudnn.yaml": cudnn[:-1], "gpus.yaml": cudnn[-1:] + gpus})
    changed = dict(files, **{"pcie.yaml": files["pcie.yaml"] + b"# a comment: the same rows, other text\n"})
    build = Counting()
    assert cache.load(changed, build) == parsed and build.calls == 1
    assert len(list(cache.cache_dir().glob("*.json"))) == 2  # one per text, each valid
    keys = {
        cache.tables_key(files),
        cache.tables_key(changed),
        cache.tables_key(dict(files, **{"extra.yaml": b""})),
        cache.tables_key({k: v for k, v in files.items() if k != "jax.yaml"}),
        cache.tables_key({("jax2.yaml" if k == "jax.yaml" else k): v for k, v in files.items()}),
        cache.tables_key(moved),
    }
    assert len(keys) == 6


@pytest.mark.parametrize(
    "damage",
    [
        "",
        "{not json",
        "[]",
        '{"format": 1}',
        "truncated",
        "other format",
        "other version",
        "other key",
        "an int as a string",
        "an int as a bool",
        "a bool as an int",
        "a missing field",
        "an extra field",
        "a tuple as a string",
        "a bad date",
        "a mapping as a list",
        "a null row",
    ],
)
def test_a_damaged_or_foreign_cache_file_is_parsed_again(cache_home, files, parsed, damage):
    cache.load(files, Counting())
    path = cached_file()
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    kb = doc["knowledge"]
    edits = {
        "truncated": lambda: text[: len(text) // 2],
        "other format": lambda: doc.update(format=cache.FORMAT + 1),
        "other version": lambda: doc.update(version="0.0.0"),
        "other key": lambda: doc.update(key="0" * 64),
        "an int as a string": lambda: kb["host_compilers"][0].update(gcc_max="13"),
        "an int as a bool": lambda: kb["host_compilers"][0].update(gcc_max=True),
        "a bool as an int": lambda: kb["cuda_toolkits"][0].update(verified=1),
        "a missing field": lambda: kb["pcie"][0].pop("sysfs"),
        "an extra field": lambda: kb["pcie"][0].update(speed="fast"),
        "a tuple as a string": lambda: kb["torch_releases"][-1]["variants"][0].update(arch="9.0"),
        "a bad date": lambda: kb["tables"]["torch"].update(checked="yesterday"),
        "a mapping as a list": lambda: kb["tables"]["torch"].update(sources=[]),
        "a null row": lambda: kb["gpus"].__setitem__(0, None),
    }
    if damage in edits:
        out = edits[damage]()
        path.write_text(out if isinstance(out, str) else json.dumps(doc), encoding="utf-8")
    else:
        path.write_text(damage, encoding="utf-8")
    build = Counting()
    assert cache.load(files, build) == parsed and build.calls == 1
    # ... and the cache file is good again
    build = Counting()
    assert cache.load(files, build) == parsed and build.calls == 0


def test_off_with_gpudoctor_no_cache(cache_home, files, parsed, monkeypatch):
    monkeypatch.setenv("GPUDOCTOR_NO_CACHE", "1")
    assert cache.cache_dir() is None
    build = Counting()
    assert cache.load(files, build) == parsed and cache.load(files, build) == parsed
    assert build.calls == 2
    assert not list(cache_home.rglob("*.json"))


def test_broken_tables_are_never_cached_and_report_every_problem(cache_home, files):
    broken = dict(files, **{"pcie.yaml": files["pcie.yaml"].replace(b"gen: 4,", b"gen: four,", 1)})
    assert broken != files
    with pytest.raises(kn.KnowledgeError) as without_cache:
        loading.build_knowledge(broken, kn.knowledge_dir())
    for _ in range(2):
        with pytest.raises(kn.KnowledgeError) as err:
            cache.load(broken, Counting())
        assert err.value.problems == without_cache.value.problems
    assert [p.where for p in err.value.problems] == ["rows[3].gen"]
    assert not list(cache_home.rglob("*.json"))


def test_an_unwritable_cache_never_fails_a_load(tmp_path, files, parsed, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the directory would go
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    assert cache.load(files, Counting()) == parsed


def test_a_value_json_does_not_keep_is_not_cached(cache_home, files, parsed):
    nan = parsed.gpus[0].__class__(**{**vars(parsed.gpus[0]), "memory_gb": float("nan")})
    odd = parsed.__class__(**{**vars(parsed), "gpus": (nan, *parsed.gpus[1:])})
    assert cache.load(files, lambda _files: odd) is odd  # NaN != NaN: the read-back check refuses it
    assert not list(cache_home.rglob("*.json"))
    with pytest.raises(TypeError):
        cache.encode({1, 2})


def test_crlf_tables_read_as_path_read_text_reads_them(tmp_path, files, parsed):
    crlf = {name: data.replace(b"\n", b"\r\n") for name, data in files.items()}
    assert loading.build_knowledge(crlf, tmp_path) == parsed  # same rows, same lines


def test_knowledge_from_the_cache_does_not_import_yaml(tmp_path, parsed):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("GPUDOCTOR_NO_CACHE", None)
    prog = (
        "import json, sys\nfrom gpudoctor.knowledge import knowledge\nkb = knowledge()\n"
        "print(json.dumps(['yaml' in sys.modules, 'packaging.version' in sys.modules, repr(kb)]))\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=60)
        for _ in range(2)
    ]
    first, second = (json.loads(run.stdout) for run in runs)
    assert first[:2] == [True, True] and second[:2] == [False, False]  # parsed once, then read back
    assert first[2] == second[2] == repr(parsed)
