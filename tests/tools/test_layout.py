"""tools/test_layout.py: tests/ mirrors gpudoctor/ (issue 24, scope 5).

The first three tests enforce the layout on the repository itself: every module with logic has its test
file at tests/<package>/test_<module>.py, the tests/ root holds no test file and every test directory is a
package, except the gaps listed in layout_pending.txt (MOVES.md lists the moves that close them); a new
gap fails, and so does a listed gap that was closed without its line being removed. The others pin the
rule on small trees written here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "test_layout.py"


@pytest.fixture(scope="module")
def tl():
    spec = importlib.util.spec_from_file_location("test_layout_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["test_layout_tool"] = module
    spec.loader.exec_module(module)
    return module


def _rel(tl, paths):
    return [p.relative_to(tl.ROOT).as_posix() for p in paths]


PENDING = Path(__file__).with_name("layout_pending.txt")


def _pending(kind: str) -> list[str]:
    lines = PENDING.read_text(encoding="utf-8").splitlines()
    return sorted(
        rest
        for line in lines
        if not line.startswith("#") and line
        for k, _, rest in [line.partition(" ")]
        if k == kind
    )


def test_every_module_with_logic_has_its_test_file(tl):
    assert sorted(_rel(tl, (t for _, t in tl.missing()))) == _pending("missing")


def test_no_test_file_at_the_tests_root(tl):
    assert sorted(_rel(tl, tl.root_test_files())) == _pending("root")


def test_every_test_directory_is_a_package(tl):
    assert sorted(_rel(tl, tl.test_dirs_without_init())) == _pending("no-init")


@pytest.mark.parametrize(
    ("module", "test"),
    [
        ("gpudoctor/host/live.py", "tests/host/test_live.py"),
        ("gpudoctor/report/text.py", "tests/report/test_text.py"),
        ("gpudoctor/plan.py", "tests/core/test_plan.py"),
        ("gpudoctor/commands/__init__.py", "tests/commands/test_commands.py"),
        ("gpudoctor/commands/_shared.py", "tests/commands/test_shared.py"),
        ("gpudoctor/__init__.py", "tests/core/test_gpudoctor.py"),
    ],
)
def test_the_mirror_rule(tl, module, test):
    assert tl.test_path(Path("/r") / module, Path("/r/gpudoctor"), Path("/r/tests")) == Path("/r") / test


def _tree(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path / "gpudoctor", tmp_path / "tests"


def test_a_module_of_imports_and_constants_needs_no_test_file(tl, tmp_path):
    package, tests = _tree(
        tmp_path,
        {
            "gpudoctor/__init__.py": '"""doc"""\n__version__ = "1"\n',
            "gpudoctor/names.py": "from .x import a, b\n__all__ = ['a', 'b']\nLIMIT = 3\n",
            "gpudoctor/x.py": "def a():\n    return 1\n\n\nclass b:\n    pass\n",
            "gpudoctor/lazy.py": "try:\n    import y\nexcept ImportError:\n    def y():\n        return 0\n",
            "tests/conftest.py": "",
        },
    )
    assert [p.name for p in tl.modules_with_logic(package)] == ["lazy.py", "x.py"]
    assert [m.name for m, _ in tl.missing(package, tests)] == ["lazy.py", "x.py"]


def test_a_test_file_at_the_root_or_in_a_bare_directory_is_reported(tl, tmp_path):
    package, tests = _tree(
        tmp_path,
        {
            "gpudoctor/host/live.py": "def read():\n    return 1\n",
            "tests/conftest.py": "",
            "tests/test_live.py": "",
            "tests/host/test_live.py": "",
            "tests/host/test_live_more.py": "",
        },
    )
    assert tl.missing(package, tests) == []
    assert tl.root_test_files(tests) == [tests / "test_live.py"]
    assert tl.test_dirs_without_init(tests) == [tests / "host"]
    assert tl.unmatched_test_files(package, tests) == [tests / "host" / "test_live_more.py"]
    (tests / "host" / "__init__.py").write_text("", encoding="utf-8")
    assert tl.test_dirs_without_init(tests) == []
