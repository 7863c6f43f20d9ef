"""The bench rules (bench/rules.py): rules/bench/bench.yaml always, dcgm.yaml with `bench --dcgm`, loaded and
validated as every rule is, and never part of the rules `check` loads."""

from __future__ import annotations

import re

from gpudoctor.bench.rules import bench_rule_files, load_bench_rules
from gpudoctor.datafiles import shipped_rules_dir
from gpudoctor.engine.loader import rule_files


def test_bench_rules_without_and_with_dcgm():
    here = shipped_rules_dir() / "bench"
    assert bench_rule_files(dcgm=False) == [here / "bench.yaml"]
    assert bench_rule_files() == [here / "bench.yaml", here / "dcgm.yaml"]
    plain = [r.id for r in load_bench_rules(dcgm=False)]
    every = [r.id for r in load_bench_rules()]
    assert plain and all(re.fullmatch(r"GD-BENCH-\d{3}", i) for i in every)
    assert every[: len(plain)] == plain and len(every) > len(plain)
    assert len(set(every)) == len(every)


def test_check_never_loads_the_bench_rules():
    loaded = [str(p) for p in rule_files(shipped_rules_dir())]
    assert loaded and not any("/bench/" in p for p in loaded)
