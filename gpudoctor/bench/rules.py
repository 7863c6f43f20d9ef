"""The bench rules (rules/bench/): loaded by `gpudoctor bench`, listed, shown and documented with the others,
never by `gpudoctor check` (their facts come only from a bench run)."""

from __future__ import annotations

from pathlib import Path

from ..datafiles import shipped_rules_dir


def bench_rule_files(dcgm: bool = True) -> list[Path]:
    """rules/bench/bench.yaml, and dcgm.yaml with `dcgm` (the rules of `bench --dcgm`)."""
    here = shipped_rules_dir() / "bench"
    return [here / "bench.yaml"] + ([here / "dcgm.yaml"] if dcgm else [])


def load_bench_rules(dcgm: bool = True) -> list:
    """The bench rules, validated as every rule is; RuleLoadError lists every problem."""
    from ..engine.loader import load_rules

    return load_rules([str(f) for f in bench_rule_files(dcgm)], include_shipped=False)
