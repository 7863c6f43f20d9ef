"""The README opens with a picture of a real report (docs/images/check-h200.svg): it must be what
tools/make_readme_svg.py makes today, byte for byte, so that it never shows an old report."""

from __future__ import annotations

import html
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "make_readme_svg.py"
SVG = ROOT / "docs" / "images" / "check-h200.svg"
README = ROOT / "README.md"
PICTURE = "![gpudoctor check on an H200 host with a CPU-only torch](docs/images/check-h200.svg)"
STALE = "docs/images/check-h200.svg is stale: run `python tools/make_readme_svg.py` and commit the result"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("make_readme_svg", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_readme_svg"] = module
    spec.loader.exec_module(module)
    return module


def committed_rich_version() -> str:
    first = SVG.read_text(encoding="utf-8").split("\n", 1)[0]
    match = re.search(r"with rich (\S+);", first)
    assert match, f"{SVG}: no rich version in its first line: run `python tools/make_readme_svg.py`"
    return match.group(1)


def svg_lines(svg: str) -> list[str]:
    """The terminal's lines as the picture shows them: its text pieces, by row, in column order."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([0-9.]+)" y="([0-9.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(m.group(2)), []).append((float(m.group(1)), html.unescape(m.group(3))))
    return ["".join(t for _x, t in sorted(row)).replace("\xa0", " ") for _y, row in sorted(rows.items())]


def test_the_svg_is_fresh(tool, tmp_path) -> None:
    made_with = committed_rich_version()
    if tool.rich_version() != made_with:
        pytest.skip(f"the SVG was made with rich {made_with}, this is rich {tool.rich_version()}")
    out = tmp_path / "check-h200.svg"
    tool.write(out)
    assert out.read_bytes() == SVG.read_bytes(), STALE


def test_the_svg_shows_the_injected_fault_and_nothing_of_the_machine_that_made_it(tool) -> None:
    raw = SVG.read_text(encoding="utf-8")
    text = "\n".join(svg_lines(raw))
    assert "ERROR   GD-FW-001  CPU-only PyTorch on a GPU host" in text
    assert "torch 2.11.0 cpu" in text
    assert f"snapshot {tool.SOURCE} of redacted-host" in text
    for leak in ("/tmp", "gpudoctor-readme-", str(ROOT)):
        assert leak not in text
    assert len(raw.encode("utf-8")) < 150_000


def test_the_fault_is_one_change_to_the_recorded_torch(tool, tmp_path) -> None:
    import json
    import shutil

    copy = tmp_path / "snap"
    shutil.copytree(tool.SNAPSHOT, copy)
    tool.make_torch_cpu_only(copy)
    before = json.loads((tool.SNAPSHOT / "python.json").read_text(encoding="utf-8"))
    after = json.loads((copy / "python.json").read_text(encoding="utf-8"))
    old = before[tool.INTERPRETER]["distributions"]
    new = after[tool.INTERPRETER]["distributions"]
    changed = [a["name"] for a, b in zip(old, new) if a != b]
    assert changed == ["torch"]
    torch = next(d for d in new if d["name"] == "torch")
    assert "__version__ = '2.11.0+cpu'" in torch["texts"]["torch/version.py"]
    assert "cuda: Optional[str] = None" in torch["texts"]["torch/version.py"]
    before[tool.INTERPRETER]["distributions"] = after[tool.INTERPRETER]["distributions"] = []
    assert before == after
    same = [p.relative_to(copy) for p in copy.rglob("*") if p.is_file() and p.name != "python.json"]
    assert all((copy / p).read_bytes() == (tool.SNAPSHOT / p).read_bytes() for p in same)


def test_the_readme_opens_with_the_picture() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# gpudoctor")
    top = lines[: lines.index("## Set up")]
    assert PICTURE in top, f"README.md must show {PICTURE} before its first section"
