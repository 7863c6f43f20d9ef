"""The bench HTML page (report/bench_html.py): golden files of the same four benches as the text report,
and what must hold whatever the data: one self-contained page, everything escaped. Regenerate the golden
files after an intended change with:

GPUDOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/report/test_bench_html.py
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from gpudoctor.report import bench_html

from .reportkit import BENCH_CASES, compare, hostile_bench, unhealthy_bench
from conftest import FIXTURES

GOLDEN = FIXTURES / "golden"
VOID = {"meta", "rect", "line", "br"}


class Tags(HTMLParser):
    """Every tag, and whether they nest properly."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.seen: list[tuple[str, dict]] = []
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.seen.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.seen.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.problems.append(f"unbalanced </{tag}>")

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    tags.close()
    return tags


def rows_of(page: str) -> list[str]:
    return re.findall(r"<tr[ >].*?</tr>", page)


@pytest.mark.parametrize("name", sorted(BENCH_CASES))
def test_golden(name):
    compare(bench_html.render(BENCH_CASES[name]()), GOLDEN / f"bench-{name}.html")


@pytest.mark.parametrize("name", sorted(BENCH_CASES))
def test_one_self_contained_well_formed_page(name):
    page = bench_html.render(BENCH_CASES[name]())
    assert page == bench_html.render(BENCH_CASES[name]())  # deterministic
    lower = page.lower()
    # Nothing that loads or links anything: no URL (the only "http" is the CSP's http-equiv), no script.
    assert "http:" not in lower and "https:" not in lower and lower.count("http") == 1
    for bad in ("src=", "href", "<script", "url(", "@import", "<link", "<img", "<iframe", "<object", "//"):
        assert bad not in lower, bad
    tags = parse(page)
    assert tags.problems == [] and tags.stack == []
    assert f'content="{bench_html.CSP}"' in page and "prefers-color-scheme: dark" in page
    assert all(ord(c) >= 0x20 or c == "\n" for c in page)


def test_machine_text_is_escaped():
    page = bench_html.render(hostile_bench())
    assert "<script" not in page and "\x1b" not in page and "\x07" not in page
    assert "evil&lt;script&gt;alert(1)&lt;/script&gt;?]0;owned??[2J?" in page
    tags = parse(page)
    assert tags.problems == [] and {t for t, _ in tags.seen} <= {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "table", "thead", "tbody",
        "tr", "th", "td", "svg", "rect", "line", "span", "strong", "ol", "ul", "li", "code", "pre",
    }  # fmt: skip


def test_each_result_is_a_bar_against_its_expectation():
    page = bench_html.render(unhealthy_bench())
    rows = [r for r in rows_of(page) if "<svg" in r]
    assert len(rows) == 9  # every row that was measured against an expectation
    for row in rows:
        x = bench_html.EXPECT_X
        assert f'<line class="expect" x1="{x}" y1="0" x2="{x}"' in row
        width = float(re.search(r'<rect class="fill" x="0" y="3" width="([0-9.]+)"', row).group(1))
        assert 0 <= width <= x * 1.1 + 0.05
    bf16 = next(r for r in rows if "bf16 matmul" in r)
    assert 'class="sev-error"' in bf16 and ">x</td>" in bf16
    assert "<strong>413 TFLOP/s</strong>" in bf16 and "of 989" in bf16 and ">42%<" in bf16
    assert "baseline 740, -44%" in bf16
    over = [r for r in rows if "5210 GB/s" in r][0]
    assert 'width="217.1"' in over  # 109% runs past the line at 100%


def test_rows_not_measured_or_without_expectation_are_marked_and_have_no_bar():
    page = bench_html.render(unhealthy_bench())
    timed_out = next(r for r in rows_of(page) if "fp8 matmul" in r)
    assert "<svg" not in timed_out and '<span class="status status-bad">timed out</span>' in timed_out
    assert "TFLOP/s" not in timed_out and 'title="not measured: timed out">?</td>' in timed_out
    healthy = bench_html.render(BENCH_CASES["healthy"]())
    pageable = next(r for r in rows_of(healthy) if "H2D pageable" in r)
    assert "<svg" not in pageable and "7 GB/s" in pageable
    assert "no expectation: pageable copies" in pageable


def test_findings_with_fixes_unknown_rules_and_the_verdict():
    page = bench_html.render(unhealthy_bench())
    order = [m.group(1) for m in re.finditer(r'<li class="finding sev-(\w+)">', page)]
    assert order == ["error", "warning", "warning", "info"]
    assert "<pre><code>nvidia-smi -q -i 0 -d PERFORMANCE</code></pre>" in page
    assert "<li><code>GD-BENCH-007</code> bench[].power_limit_w is unknown: NVML gave no samples</li>" in page
    assert re.search(r'<p class="result error">Result: 1 error\(s\).* · exit 1 \(--fail-on error\)</p>', page)


def test_not_run_and_incomplete():
    page = bench_html.render(BENCH_CASES["notrun"]())
    assert "No NVIDIA GPU here: nothing to benchmark." in page
    assert "<table" not in page and "Result" not in page
    page = bench_html.render(BENCH_CASES["incomplete"]())
    assert "Incomplete: the run was cut short (the deadline of 120 s passed" in page
    assert page.index("Incomplete") < page.index("<table")
