"""The index of the shipped error texts: the same causes from the cache as from the files, and a message no
rule explains answered without loading the rules, the entries' YAML or the engine (issue 24)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpudoctor.engine.loader import load_rules
from gpudoctor.explain import index
from gpudoctor.explain.answer import knowns
from gpudoctor.explain.entries import load_entries

from conftest import ROOT


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    return tmp_path / "gpudoctor"


def test_the_cached_index_holds_what_the_files_say(cache, monkeypatch):
    entries = load_entries()
    want = knowns(load_rules([]), entries)
    built, built_entries = index.shipped()
    assert list(cache.glob("explain-*/*.json"))  # written
    monkeypatch.setattr(index, "_build", lambda: pytest.fail("the cache was not read"))
    cached, cached_entries = index.shipped()
    assert built == cached == want
    assert dict(built_entries) == dict(cached_entries) == {e.id: e for e in entries}


def test_a_broken_cache_file_is_rebuilt(cache):
    index.shipped()
    (path,) = cache.glob("explain-*/*.json")
    path.write_text('{"knowns": [[1]]')
    assert index.shipped()[0] == knowns(load_rules([]), load_entries())


def test_no_cache_when_turned_off(cache, monkeypatch):
    monkeypatch.setenv("GPUDOCTOR_NO_CACHE", "1")
    index.shipped()
    assert not cache.exists()


def test_a_message_no_rule_explains_loads_no_rules(tmp_path):
    code = (
        "import sys\n"
        "from gpudoctor.commands import explain\n"
        "for _ in range(2):\n"  # the first run writes the index, the second reads it
        "    explain.run(message=\"ModuleNotFoundError: No module named 'foo'\")\n"
        "heavy = ('yaml', 'gpudoctor.engine.loader', 'gpudoctor.check')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("GPUDOCTOR_NO_CACHE", None)
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert second.stdout.splitlines()[-1] == "[]", second.stdout
