"""docs/rules/*.md, docs/facts.md and docs/errors.md are generated from the rules, the explain-only
entries and the facts SCHEMA: they must match."""

from __future__ import annotations

from pathlib import Path

from gpudoctor.explain.entries import load_entries
from gpudoctor.report.rule_docs import code, documented_rules, render_all

DOCS = Path(__file__).resolve().parents[2] / "docs"
STALE = "docs are stale: run `gpudoctor rules docs docs`"


def test_docs_are_fresh() -> None:
    expected = render_all(documented_rules(), load_entries())
    on_disk = {f"rules/{p.name}": p for p in sorted((DOCS / "rules").glob("*.md"))}
    for name in ("facts.md", "errors.md"):
        if (DOCS / name).is_file():
            on_disk[name] = DOCS / name
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
    pages = render_all(documented_rules(), ())
    pages = {rel: text for rel, text in pages.items() if rel.startswith("rules/GD-")}
    required = ["## What it checks", "## Why it matters", "## Example", "## Fix", "## Sources"]
    for rel, text in pages.items():
        headings = [line for line in text.splitlines() if line.startswith("## ")]
        assert [h for h in headings if h != "## Errors users meet"] == required, rel
        assert text.splitlines()[2].startswith(f"# {rel[len('rules/') : -len('.md')]}: "), rel


def test_the_errors_page_names_every_error_and_what_explains_it() -> None:
    rules, entries = documented_rules(), load_entries()
    page = render_all(rules, entries)["errors.md"]
    rows = [
        line
        for line in page.splitlines()
        if line.startswith("| ") and line.split(" ")[1] not in ("Error", "---")
    ]
    for r in rules:
        for e in (t.text for t in r.errors):
            assert code(e).replace("|", "\\|") in page, (r.id, e)
        if r.errors:
            assert f"[{r.id}](rules/{r.id}.md)" in page
            assert (DOCS / "rules" / f"{r.id}.md").is_file()
    for x in entries:
        for e in (t.text for t in x.errors):
            assert code(e).replace("|", "\\|") in page, (x.id, e)
        assert f"[{x.id}](#{x.id.lower()})" in page
        assert f"\n### {x.id}\n" in page  # the anchor the table links to
        assert x.meaning in page and x.hardware_when.rstrip(".") in page
    pairs = {(e.text, r.id) for r in rules for e in r.errors} | {
        (e.text, x.id) for x in entries for e in x.errors
    }
    assert len(rows) == len(pairs)


def test_the_errors_page_with_an_entry_of_another_engineer() -> None:
    """Whatever rules/explain holds is picked up: an entry's error sorts into the table, and its text is
    written out below it, `<` escaped so that Markdown keeps it."""
    from gpudoctor.engine.model import ErrorText
    from gpudoctor.explain.entries import Entry

    extra = Entry(
        id="GD-EXPLAIN-999",
        title="A test entry",
        errors=(ErrorText("zzz test error", "https://example.org/"),),
        meaning="It means <something>.",
        do=("Do `this <thing>` first; then that.", "Then the other."),
        hardware_when="never",
        references=("https://example.org/",),
    )
    page = render_all(documented_rules(), [*load_entries(), extra])["errors.md"]
    table = [line for line in page.splitlines() if line.startswith("| ")]
    assert (
        table[-1]
        == "| `zzz test error` | [GD-EXPLAIN-999](#gd-explain-999) | Do `this <thing>` first; then that. |"
    )
    assert "**What it means:** It means &lt;something>." in page
    assert "1. Do `this <thing>` first; then that.\n2. Then the other." in page
