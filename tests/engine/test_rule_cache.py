"""The parsed shipped rules are cached (engine/rule_cache.py): never trusted for other text, other
versions or a damaged file, and never in the way of a check."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpudoctor.engine import rule_cache, yamlsafe
from gpudoctor.engine.loader import load_rules

from conftest import ROOT

TEXT = "rules:\n  - id: X-1\n    when: {fact: gpus.count, gt: 0}\n"


def test_a_second_load_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    first = rule_cache.load(TEXT)
    (cached,) = list(rule_cache.cache_dir().glob("*.json"))
    assert first == yamlsafe.load(TEXT)
    # What the cache holds is what is read: change it, and the change is what load returns.
    doc = json.loads(cached.read_text())
    doc["data"]["rules"][0]["id"] = "X-FROM-CACHE"
    cached.write_text(json.dumps(doc))
    assert rule_cache.load(TEXT)[0]["rules"][0]["id"] == "X-FROM-CACHE"
    # Other text is another file: never the cached answer.
    assert rule_cache.load(TEXT.replace("X-1", "X-2"))[0]["rules"][0]["id"] == "X-2"


def test_a_damaged_cache_file_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    rule_cache.load(TEXT)
    (cached,) = list(rule_cache.cache_dir().glob("*.json"))
    cached.write_text("{not json")
    assert rule_cache.load(TEXT) == yamlsafe.load(TEXT)


def test_the_cache_is_per_version_and_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert rule_cache.__version__ in rule_cache.cache_dir().name
    monkeypatch.setenv("GPUDOCTOR_NO_CACHE", "1")
    assert rule_cache.cache_dir() is None
    rule_cache.load(TEXT)
    assert not list(tmp_path.rglob("*.json"))


def test_an_unwritable_cache_never_fails_a_load(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the directory would go
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    assert rule_cache.load(TEXT) == yamlsafe.load(TEXT)


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
