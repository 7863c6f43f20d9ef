"""What every loader of shipped data shares (datafiles.py): how a problem is named, where the shipped files
are, where the cache is, and a write no reader sees half of."""

from __future__ import annotations

import os
import threading

import pytest

from gpudoctor.datafiles import Problem, cache_dir, shipped_rules_dir, write_atomically
from gpudoctor.engine.loader import RuleLoadError, load_rules

from conftest import ROOT


def test_a_problem_names_file_line_rule_place_and_what_is_wrong(tmp_path):
    # the shipped rules/gpu.yaml with one fact name misspelt in GD-PCIE-002, as a rule pack's author might
    text = (ROOT / "rules" / "gpu.yaml").read_text(encoding="utf-8")
    at = text.index(".pcie.gen_max", text.index("id: GD-PCIE-002"))
    path = tmp_path / "gpu.yaml"
    path.write_text(text[:at] + ".pcie.gen_maks" + text[at + len(".pcie.gen_max") :], encoding="utf-8")
    with pytest.raises(RuleLoadError) as e:
        load_rules([str(path)], include_shipped=False)
    (problem,) = e.value.problems
    line = text[:at].count("\n") + 1
    assert (problem.file, problem.line, problem.rule_id) == (str(path), line, "GD-PCIE-002")
    assert str(problem) == (
        f"{path}:{line}: GD-PCIE-002: at when.all[0].lt.fact: unknown fact 'gpus[i].pcie.gen_maks' "
        "(see docs/facts.md for the names facts have)"
    )
    # a problem of a whole file names neither rule nor place (knowledge/loading.py, a table file missing)
    assert str(Problem("pcie.yaml", 0, "", "", "missing table file in rules/knowledge")) == (
        "pcie.yaml:0: missing table file in rules/knowledge"
    )


def test_the_shipped_rules_of_a_source_checkout():
    assert shipped_rules_dir() == ROOT / "rules"
    assert (shipped_rules_dir() / "knowledge" / "torch.yaml").is_file()


def test_the_cache_follows_xdg_and_can_be_turned_off(monkeypatch, tmp_path):
    monkeypatch.delenv("GPUDOCTOR_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir("rules") == tmp_path / "gpudoctor" / "rules"
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # empty counts as unset (XDG Base Directory spec)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir("tables") == tmp_path / "home" / ".cache" / "gpudoctor" / "tables"
    monkeypatch.setenv("GPUDOCTOR_NO_CACHE", "1")
    assert cache_dir("rules") is None


def test_a_reader_never_sees_half_a_file(tmp_path):
    path = tmp_path / "deep" / "cache.json"
    old, new = "[" + "1," * 200_000 + "1]", "[" + "2," * 200_000 + "2]"
    write_atomically(path, old)
    seen: set = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(path.read_text(encoding="utf-8"))

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(20):
        write_atomically(path, new)
        write_atomically(path, old)
    stop.set()
    reader.join()
    assert seen <= {old, new}
    assert os.listdir(path.parent) == ["cache.json"]  # no temporary file left behind
