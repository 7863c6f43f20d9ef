"""Where each test file goes: tests/ mirrors gpudoctor/, one test file per module that has logic.

    python tools/test_layout.py            every module with logic, its test file, and whether it exists;
                                           then the test files at the tests/ root and those matching no module
    python tools/test_layout.py --check    exit 1 when a module with logic has no test file, a test file
                                           sits at the tests/ root or a test directory has no __init__.py
                                           (tests/tools/test_layout.py runs the same checks)

The rule, one line: gpudoctor/P/M.py is tested by tests/P/test_M.py, where P is the package path below
gpudoctor/ and, for a module directly under gpudoctor/, P is `core`:

    gpudoctor/host/live.py          -> tests/host/test_live.py
    gpudoctor/report/text.py        -> tests/report/test_text.py
    gpudoctor/plan.py               -> tests/core/test_plan.py
    gpudoctor/commands/__init__.py  -> tests/commands/test_commands.py  (a package's own code: test_<package>)
    gpudoctor/commands/_shared.py   -> tests/commands/test_shared.py    (leading underscores dropped)

`core`, not `gpudoctor`: a tests/gpudoctor/ package on sys.path would shadow the real one. Each test
directory is a package (it has an __init__.py), so two directories may hold test files of the same name
(tests/probes/test_driver.py and tests/resolvers/test_driver.py); a helper module in a test directory is
imported relatively (`from .reportkit import ...`), a shared one from the tests/ root (`from conftest import
...`, `pyenvs`, `pkgindex`, `nvmlrig`).

A module has logic when it defines a function or a class; one that only imports, re-exports or holds
constants does not need a test file of its own. At the tests/ root only shared fixtures and helpers
(conftest.py, pyenvs.py, pkgindex.py, nvmlrig.py) may sit, no `test_*.py`. Test files that match no module
(a suite across modules: tests/rules/test_rule_cases.py, tests/fuzz/) are listed, not refused.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpudoctor"
TESTS = ROOT / "tests"
TOP = "core"  # the test directory of the modules directly under gpudoctor/


def has_logic(path: Path) -> bool:
    """True when the module defines a function or a class at its top level (or under an `if`/`try`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return True
        if isinstance(node, (ast.If, ast.Try)):
            nodes.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            nodes.extend(h for handler in getattr(node, "handlers", []) for h in handler.body)
    return False


def test_path(module: Path, package: Path = PACKAGE, tests: Path = TESTS) -> Path:
    """The test file of gpudoctor/P/M.py: tests/P/test_M.py (P = `core` directly under gpudoctor/)."""
    parts = module.relative_to(package).with_suffix("").parts
    folder, name = parts[:-1], parts[-1]
    if name == "__init__":
        name = folder[-1] if folder else package.name
    return tests.joinpath(*(folder or (TOP,)), f"test_{name.lstrip('_')}.py")


def modules_with_logic(package: Path = PACKAGE) -> list[Path]:
    return [p for p in sorted(package.rglob("*.py")) if has_logic(p)]


def missing(package: Path = PACKAGE, tests: Path = TESTS) -> list[tuple[Path, Path]]:
    """(module, its test file) for each module with logic whose test file does not exist."""
    pairs = ((m, test_path(m, package, tests)) for m in modules_with_logic(package))
    return [(m, t) for m, t in pairs if not t.is_file()]


def root_test_files(tests: Path = TESTS) -> list[Path]:
    """Test files at the tests/ root, where only shared fixtures may sit."""
    return sorted(tests.glob("test_*.py"))


def test_dirs_without_init(tests: Path = TESTS) -> list[Path]:
    """Directories below the tests/ root that hold test files but are no package: two such directories
    with a test file of the same name break pytest's collection ("import file mismatch")."""
    dirs = {p.parent for p in tests.rglob("test_*.py") if p.parent != tests}
    return sorted(d for d in dirs if not (d / "__init__.py").is_file())


def unmatched_test_files(package: Path = PACKAGE, tests: Path = TESTS) -> list[Path]:
    """Test files below the tests/ root that are no module's test file (misnamed, or a suite across
    modules)."""
    expected = {test_path(m, package, tests) for m in sorted(package.rglob("*.py"))}
    found = (p for p in sorted(tests.rglob("test_*.py")) if p.parent != tests)
    return [p for p in found if p not in expected]


def main(argv: list[str]) -> int:
    rel = lambda p: p.relative_to(ROOT).as_posix()  # noqa: E731
    gaps, roots, bare = missing(), root_test_files(), test_dirs_without_init()
    if "--check" not in argv:
        logic = modules_with_logic()
        print(f"{len(logic) - len(gaps)} of {len(logic)} modules with logic have their test file")
        for module in logic:
            mark = "missing" if (module, test_path(module)) in gaps else "ok"
            print(f"  {mark:8} {rel(module):45} {rel(test_path(module))}")
        print(f"{len(roots)} test files at the tests/ root")
        for path in roots:
            print(f"  {rel(path)}")
        print(f"{len(bare)} test directories without an __init__.py")
        for path in bare:
            print(f"  {rel(path)}")
        unmatched = unmatched_test_files()
        print(f"{len(unmatched)} test files below the root that match no module")
        for path in unmatched:
            print(f"  {rel(path)}")
        return 0
    for module, test in gaps:
        print(f"{rel(module)}: no test file {rel(test)}")
    for path in roots:
        print(f"{rel(path)}: a test file at the tests/ root")
    for path in bare:
        print(f"{rel(path)}: a test directory without an __init__.py")
    return 1 if gaps or roots or bare else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
