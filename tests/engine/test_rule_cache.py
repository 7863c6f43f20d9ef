"""The shipped rules are cached built and validated (engine/rule_cache.py): never trusted for other text,
other versions or a damaged file, never for a file with problems, and never in the way of a check."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpudoctor.engine import rule_cache
from gpudoctor.engine.loader import load_rules, parse_rules

from conftest import ROOT

TEXT = """rules:
  - id: X-1
    title: t
    severity: warning
    category: gpu
    when: {fact: gpus.count, gt: 0}
    message: m
    why: w
    fix:
      - {kind: pip, argv: [pip, install, x], text: note}
"""


class Counting:
    """parse_rules, counting its calls: a call is a load that did not come from the cache."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str, name: str):
        self.calls += 1
        return parse_rules(text, name)


def test_a_second_load_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    build = Counting()
    first = rule_cache.load(TEXT, "a/x.yaml", build)
    assert first == parse_rules(TEXT, "a/x.yaml") and build.calls == 1
    assert rule_cache.load(TEXT, "a/x.yaml", build) == first and build.calls == 1
    (cached,) = list(rule_cache.cache_dir().glob("*.json"))
    # What the cache holds is what is read: change it, and the change is what load returns.
    doc = json.loads(cached.read_text())
    doc["rules"][0]["id"] = "X-FROM-CACHE"
    cached.write_text(json.dumps(doc))
    assert rule_cache.load(TEXT, "a/x.yaml", build)[0][0].id == "X-FROM-CACHE"
    # Other text is another file: never the cached answer.
    assert rule_cache.load(TEXT.replace("X-1", "X-2"), "a/x.yaml", build)[0][0].id == "X-2"
    assert build.calls == 2


def test_cached_rules_carry_the_readers_path(tmp_path, monkeypatch):
    """Two installs of one version share the cache; each rule names the file it was read from."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    rule_cache.load(TEXT, "/venv-a/rules/x.yaml", parse_rules)
    (rule,), problems = rule_cache.load(TEXT, "/venv-b/rules/x.yaml", Counting())
    assert problems == [] and rule == parse_rules(TEXT, "/venv-b/rules/x.yaml")[0][0]
    assert (
        rule.file == "/venv-b/rules/x.yaml" and rule.line == 2 and rule.fix[0].argv == ("pip", "install", "x")
    )


def test_a_file_with_problems_is_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    bad = TEXT.replace("severity: warning", "severity: fatal")
    rules, problems = rule_cache.load(bad, "x.yaml", parse_rules)
    assert rules == [] and problems[0].where == "severity"
    assert not list(tmp_path.rglob("*.json"))


def test_a_damaged_cache_file_is_loaded_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    rule_cache.load(TEXT, "x.yaml", parse_rules)
    (cached,) = list(rule_cache.cache_dir().glob("*.json"))
    for damage in ("{not json", '{"rules": [{"id": "X"}]}', '{"rules": 7}', "[]"):
        cached.write_text(damage)
        build = Counting()
        assert rule_cache.load(TEXT, "x.yaml", build) == parse_rules(TEXT, "x.yaml") and build.calls == 1


def test_the_cache_is_per_version_and_format_and_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert rule_cache.cache_dir().name == f"rules-{rule_cache.__version__}-{rule_cache.FORMAT}"
    monkeypatch.setenv("GPUDOCTOR_NO_CACHE", "1")
    assert rule_cache.cache_dir() is None
    rule_cache.load(TEXT, "x.yaml", parse_rules)
    assert not list(tmp_path.rglob("*.json"))


def test_an_unwritable_cache_never_fails_a_load(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the directory would go
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    assert rule_cache.load(TEXT, "x.yaml", parse_rules) == parse_rules(TEXT, "x.yaml")


def test_shipped_rules_from_the_cache_are_the_same_rules_and_yaml_is_not_imported(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("GPUDOCTOR_NO_CACHE", None)
    prog = (
        "import sys, json\nfrom gpudoctor.engine.loader import load_rules\n"
        "rules = load_rules([])\n"
        "print(json.dumps(['yaml' in sys.modules, [repr(r) for r in rules]]))\n"
    )
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=60
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0][0] is True and runs[1][0] is False  # parsed once, then read from the cache
    assert runs[0][1] == runs[1][1] == [repr(r) for r in load_rules([])]


def _shipped_dir(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "a.yaml").write_text(TEXT)
    (rules / "b.yml").write_text(TEXT.replace("X-1", "X-2"))
    return rules


class CountingFiles:
    """loader.load_file for a shipped file, counting its calls: a call is a file not served by the set."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, path):
        from gpudoctor.engine.loader import load_file

        self.calls += 1
        return load_file(path)


def test_the_shipped_set_is_read_whole_until_a_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    rules = _shipped_dir(tmp_path)
    first_load = CountingFiles()
    names, first = rule_cache.load_shipped(str(rules), first_load)
    assert names == [str(rules / "a.yaml"), str(rules / "b.yml")] and first_load.calls == 2
    again = CountingFiles()
    assert rule_cache.load_shipped(str(rules), again) == (names, first) and again.calls == 0
    assert [[r.id for r in f] for f, _p in first] == [["X-1"], ["X-2"]] and first[0][0][0].file == names[0]
    # A file rewritten (its size, times or inode change), added or removed: every file read again.
    (rules / "a.yaml").write_text(TEXT.replace("X-1", "X-10"))
    for change in (lambda: None, lambda: (rules / "c.yaml").write_text(TEXT.replace("X-1", "X-3"))):
        change()
        counting = CountingFiles()
        names, loaded = rule_cache.load_shipped(str(rules), counting)
        assert counting.calls == len(names) and loaded == [CountingFiles()(rules / n) for n in names]
    (rules / "c.yaml").unlink()
    counting = CountingFiles()
    assert rule_cache.load_shipped(str(rules), counting)[0] == [str(rules / "a.yaml"), str(rules / "b.yml")]
    assert counting.calls == 2


def test_the_shipped_set_lists_the_files_as_rule_files_does(tmp_path):
    from pathlib import Path

    from gpudoctor.datafiles import rule_files

    rules = _shipped_dir(tmp_path)
    (rules / "Z.yaml").write_text(TEXT)
    (rules / ".hidden.yaml").write_text(TEXT)
    (rules / "dir.yaml").mkdir()
    (rules / "notes.txt").write_text("")
    (rules / "link.yml").symlink_to(rules / "a.yaml")
    (rules / "dangling.yaml").symlink_to(rules / "missing.yaml")
    listed = [name for name, _stamp in rule_cache.shipped_files(str(rules))]
    assert listed == [str(p) for p in rule_files(Path(rules))]
    assert [Path(n).name for n in listed] == [".hidden.yaml", "Z.yaml", "a.yaml", "b.yml", "link.yml"]


def test_a_damaged_or_foreign_set_is_loaded_again_and_problems_are_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    rules = _shipped_dir(tmp_path)
    _names, expected = rule_cache.load_shipped(str(rules), CountingFiles())
    (cached,) = list(rule_cache.cache_dir().glob("shipped-*.json"))
    doc = json.loads(cached.read_text())
    for damage in (
        "{not json",
        "[]",
        json.dumps({**doc, "directory": "/elsewhere"}),
        json.dumps({**doc, "rules": []}),
    ):
        cached.write_text(damage)
        counting = CountingFiles()
        assert rule_cache.load_shipped(str(rules), counting)[1] == expected and counting.calls == 2
    cached.unlink()
    (rules / "a.yaml").write_text(TEXT.replace("severity: warning", "severity: fatal"))
    _names, loaded = rule_cache.load_shipped(str(rules), CountingFiles())
    assert loaded[0][1][0].where == "severity" and not list(rule_cache.cache_dir().glob("shipped-*.json"))
    monkeypatch.setenv("GPUDOCTOR_NO_CACHE", "1")
    counting = CountingFiles()
    rule_cache.load_shipped(str(rules), counting)
    assert counting.calls == 2


def test_a_shipped_directory_that_cannot_be_listed_loads_as_rule_files_finds_it(tmp_path, monkeypatch):
    """A missing rules directory is a file that cannot be read, as without the set: never no rules at all."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    missing = tmp_path / "gone"
    names, loaded = rule_cache.load_shipped(str(missing), CountingFiles())
    assert names == [str(missing)] and loaded[0][0] == [] and "cannot read" in loaded[0][1][0].message
    assert not (tmp_path / "cache").exists()
