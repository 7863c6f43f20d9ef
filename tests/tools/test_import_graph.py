"""The package's import graph (tools/import_graph.py): no cycle, no import from a lower layer to a higher
one, and the generated section of docs/architecture.md matches the code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "import_graph.py"


@pytest.fixture(scope="module")
def ig():
    spec = importlib.util.spec_from_file_location("import_graph", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_graph"] = module
    spec.loader.exec_module(module)
    return module


def test_no_import_cycle(ig):
    assert ig.cycles(ig.graph()) == []


def test_no_import_runs_up_a_layer(ig):
    assert ig.upward(ig.graph()) == []


def test_no_renderer_imports_the_verdict_threshold(ig):
    assert ig.forbidden(ig.graph()) == []


def test_a_renderer_importing_the_verdict_is_reported(ig, tmp_path):
    pkg = tmp_path / "gpudoctor"
    (pkg / "report").mkdir(parents=True)
    (pkg / "pipeline").mkdir()
    for init in (pkg / "__init__.py", pkg / "report" / "__init__.py", pkg / "pipeline" / "__init__.py"):
        init.write_text("")
    (pkg / "pipeline" / "verdict.py").write_text("FAIL_ON = ()\n")
    (pkg / "pipeline" / "result.py").write_text("class Verdict: ...\n")
    (pkg / "report" / "text.py").write_text("from ..pipeline.result import Verdict\n")  # allowed
    (pkg / "report" / "oneline.py").write_text("def f():\n    from ..pipeline.verdict import FAIL_ON\n")
    (pkg / "report" / "junit.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..pipeline import verdict\n"
    )
    edges = ig.graph(pkg)
    assert ig.upward(edges) == []  # the layers allow it: only FORBIDDEN catches it
    assert ig.forbidden(edges) == [
        "gpudoctor.report.junit imports gpudoctor.pipeline.verdict: "
        "a renderer receives the verdict; the threshold is pipeline/verdict.py's",
        "gpudoctor.report.oneline imports gpudoctor.pipeline.verdict: "
        "a renderer receives the verdict; the threshold is pipeline/verdict.py's",
    ]


def test_every_module_is_in_a_layer(ig):
    for module in ig.modules():
        ig.layer_of(module)


def test_the_generated_graph_in_the_docs_is_fresh(ig):
    text = ig.DOC.read_text(encoding="utf-8")
    assert ig.BEGIN in text and ig.END in text, "run python tools/import_graph.py"
    assert ig.refreshed(text, ig.render(ig.graph())) == text, "stale: run python tools/import_graph.py"


def test_imports_inside_functions_and_type_checking_count(ig, tmp_path):
    pkg = tmp_path / "gpudoctor"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine" / "__init__.py").write_text("")
    (pkg / "engine" / "loader.py").write_text("def f():\n    from ..resolvers import RESOLVERS\n")
    (pkg / "resolvers.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .engine import loader\n"
    )
    edges = ig.graph(pkg)
    assert edges["gpudoctor.engine.loader"] == {"gpudoctor.resolvers"}
    assert edges["gpudoctor.resolvers"] == {"gpudoctor.engine.loader"}
    assert ig.cycles(edges) == [["gpudoctor.engine.loader", "gpudoctor.resolvers"]]
    assert ig.upward(edges) == [
        "gpudoctor.engine.loader (engine) imports gpudoctor.resolvers (resolvers), a higher layer"
    ]


def test_a_module_in_no_layer_is_reported(ig):
    with pytest.raises(ValueError, match="no layer"):
        ig.layer_of("gpudoctor.somewhere_new")


def imports_of_package(edges, importer: str, imported: str) -> list[tuple[str, str]]:
    """The imports from a module of package `importer` of a module of package `imported`."""

    def within(module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    return sorted(
        (src, dst)
        for src, dsts in edges.items()
        if within(src, importer)
        for dst in dsts
        if within(dst, imported)
    )


def test_the_engine_imports_nothing_from_container(ig):
    """The rule engine is generic: the container package provides its operator (engine/extensions.py)."""
    assert imports_of_package(ig.graph(), "gpudoctor.engine", "gpudoctor.container") == []


def test_an_engine_import_of_container_is_found_wherever_it_is(ig, tmp_path):
    pkg = tmp_path / "gpudoctor"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "container").mkdir()
    for init in (pkg / "__init__.py", pkg / "engine" / "__init__.py", pkg / "container" / "__init__.py"):
        init.write_text("")
    (pkg / "container" / "require.py").write_text("")
    (pkg / "engine" / "conditions.py").write_text("def judge():\n    from ..container import require\n")
    (pkg / "engine" / "loader.py").write_text("import gpudoctor.container\n")
    edges = ig.graph(pkg)
    assert imports_of_package(edges, "gpudoctor.engine", "gpudoctor.container") == [
        ("gpudoctor.engine.conditions", "gpudoctor.container.require"),
        ("gpudoctor.engine.loader", "gpudoctor.container"),
    ]
    assert ig.upward(edges) == [
        "gpudoctor.engine.conditions (engine) imports gpudoctor.container.require (container), "
        "a higher layer",
        "gpudoctor.engine.loader (engine) imports gpudoctor.container (container), a higher layer",
    ]


def test_every_package_in_the_graph_is_installed(ig):
    """A package missing from pyproject.toml's list works from the source tree and fails once installed
    (`No module named 'gpudoctor.container'` from a real pip install, tests/e2e/test_target_python.py)."""
    from gpudoctor.toml_reader import toml

    listed = toml().loads((ig.ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    packages = {ig.module_name(p) for p in ig.PACKAGE.rglob("__init__.py")}
    assert sorted(packages - set(listed)) == []
