"""docs/rules/*.md and docs/facts.md are generated from the rules and the facts SCHEMA: they must match."""

from __future__ import annotations

from pathlib import Path

from gpudoctor.engine.loader import load_rules
from gpudoctor.report.rule_docs import render_all

DOCS = Path(__file__).resolve().parent.parent / "docs"
STALE = "docs are stale: run `gpudoctor rules docs docs`"


def test_docs_are_fresh() -> None:
    expected = render_all(load_rules([]))
    on_disk = {f"rules/{p.name}": p for p in sorted((DOCS / "rules").glob("*.md"))}
    if (DOCS / "facts.md").is_file():
        on_disk["facts.md"] = DOCS / "facts.md"
    missing = sorted(set(expected) - set(on_disk))
    extra = sorted(set(on_disk) - set(expected))
    differ = sorted(
        rel
        for rel in set(expected) & set(on_disk)
        if on_disk[rel].read_text(encoding="utf-8") != expected[rel]
    )
    problems = [f"missing: docs/{r}" for r in missing]
    problems += [f"extra (no such rule): docs/{r}" for r in extra]
    problems += [f"differs: docs/{r}" for r in differ]
    assert not problems, STALE + "\n  " + "\n  ".join(problems)


def test_every_rule_page_has_the_same_headings() -> None:
    pages = {rel: text for rel, text in render_all(load_rules([])).items() if rel.startswith("rules/GD-")}
    required = ["## What it checks", "## Why it matters", "## Example", "## Fix", "## Sources"]
    for rel, text in pages.items():
        headings = [line for line in text.splitlines() if line.startswith("## ")]
        assert [h for h in headings if h != "## Errors users meet"] == required, rel
        assert text.splitlines()[2].startswith(f"# {rel[len('rules/') : -len('.md')]}: "), rel
