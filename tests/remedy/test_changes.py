"""remedy.changes: what a package step would replace, asked of real pip and real uv in a dry run over a local
wheel directory (demo 1.0 installed; demo 2.0 needs dep>=2, which replaces dep 1.0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.remedy import changes

from pyenvs import build_wheel, uv, uv_venv

INSTALLED = {"demo", "dep", "unrelated"}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    where = tmp_path_factory.mktemp("changes-wheels")
    build_wheel(where, "demo", "1.0", {"demo/__init__.py": "V = 1\n"}, requires=("dep",))
    build_wheel(where, "demo", "2.0", {"demo/__init__.py": "V = 2\n"}, requires=("dep>=2",))
    build_wheel(where, "dep", "1.0", {"dep/__init__.py": "D = 1\n"})
    build_wheel(where, "dep", "2.0", {"dep/__init__.py": "D = 2\n"})
    return where


@pytest.fixture(scope="module")
def uv_env(wheels, tmp_path_factory):
    """A venv that uv filled with demo 1.0 and dep 1.0; its bin/python."""
    return uv_venv(
        sys.executable, tmp_path_factory.mktemp("changes-uv") / "env", wheels, "demo==1.0", "dep==1.0"
    )


@pytest.fixture
def uv_on_path(monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(uv()).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _pip_install(wheels, *reqs):
    return (sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(wheels), *reqs)


def test_dry_run_argv_of_each_installer():
    pip = ("/env/bin/python", "-m", "pip", "install", "torch==2.5.1")
    assert changes.dry_run_argv(pip) == (
        "/env/bin/python",
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--report",
        "-",
        "--quiet",
        "--no-input",
        "torch==2.5.1",
    )
    uv_argv = ("uv", "pip", "install", "--python", "/env/bin/python", "torch==2.5.1")
    assert changes.dry_run_argv(uv_argv) == (
        "uv",
        "pip",
        "install",
        "--dry-run",
        "--python",
        "/env/bin/python",
        "torch==2.5.1",
    )
    assert changes.dry_run_argv(("/env/bin/python", "-m", "pip", "uninstall", "-y", "torch")) is None
    assert changes.dry_run_argv(("uv", "pip", "uninstall", "--python", "/env/bin/python", "torch")) is None


def test_pips_own_report_is_read(wheels, monkeypatch):
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    dry = changes.dry_run_argv(_pip_install(wheels, "Demo==2.0"))
    out = subprocess.run(dry, capture_output=True, text=True, timeout=300, check=True).stdout
    assert sorted(changes.parse_pip_report(out)) == ["demo", "dep"]


def test_a_report_pip_did_not_write_is_a_dry_run_failure():
    with pytest.raises(changes.DryRunFailed, match=r"^pip's dry-run report is not what pip 22\.2\+ writes"):
        changes.parse_pip_report("Would install demo-2.0 dep-2.0")
    with pytest.raises(changes.DryRunFailed, match=r"writes \('metadata'\)$"):
        changes.parse_pip_report('{"version": "1", "install": [{"download_info": {}}]}')


def test_uvs_dry_run_lines_are_read(wheels, uv_env):
    dry = changes.dry_run_argv(
        (
            "uv",
            "pip",
            "install",
            "--python",
            str(uv_env),
            "--no-index",
            "--find-links",
            str(wheels),
            "demo==2.0",
        )
    )
    proc = subprocess.run([uv(), *dry[1:]], capture_output=True, text=True, timeout=300, check=True)
    text = proc.stderr + proc.stdout
    assert " - demo==1.0" in text  # what uv says it would uninstall, as the parser expects it
    assert changes.parse_uv_dry_run(text) == ["demo", "dep"]


def test_pip_replaces_the_installed_dependencies_it_would_upgrade(wheels, monkeypatch):
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    assert changes.replaced(_pip_install(wheels, "demo==2.0"), INSTALLED, 300) == ["demo", "dep"]
    assert changes.replaced(_pip_install(wheels, "demo==2.0"), {"dep", "unrelated"}, 300) == ["dep"]


def test_uv_replaces_what_it_says_it_would_uninstall(wheels, uv_env, uv_on_path):
    argv = ("uv", "pip", "install", "--python", str(uv_env), "--no-index", "--find-links", str(wheels))
    assert changes.replaced((*argv, "demo==2.0"), INSTALLED, 300) == ["demo", "dep"]
    assert changes.replaced((*argv, "demo==1.0"), INSTALLED, 300) == []  # already there: nothing replaced


def test_an_uninstall_replaces_the_installed_packages_it_names():
    pip = ("/env/bin/python", "-m", "pip", "uninstall", "-y", "Demo", "not-installed", "dep")
    assert changes.replaced(pip, INSTALLED, 1) == ["demo", "dep"]
    uv_argv = ("uv", "pip", "uninstall", "--python", "/env/bin/python", "demo_")
    assert changes.replaced(uv_argv, {"demo-"}, 1) == ["demo-"]


def test_a_dry_run_that_fails_is_reported_with_its_last_lines(wheels, monkeypatch):
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    with pytest.raises(changes.DryRunFailed) as failed:
        changes.replaced(_pip_install(wheels, "demo==9.9"), INSTALLED, 300)
    assert failed.value.message == "the installer's dry run exited 1"
    assert any("demo==9.9" in line for line in failed.value.tail), failed.value.tail
    assert len(failed.value.tail) <= 15


def test_an_installer_that_is_not_there(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(changes.DryRunFailed, match=r"^cannot start uv: No such file or directory"):
        changes.replaced(("uv", "pip", "install", "--python", "/env/bin/python", "demo"), INSTALLED, 30)


def test_a_dry_run_that_hangs_is_stopped(tmp_path):
    """A `python -m pip` whose pip never answers (a stuck index, a lock): stopped at the timeout."""
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    with pytest.raises(changes.DryRunFailed, match=r"^the installer's dry run did not finish in 1 s$"):
        changes.replaced((str(fake), "-m", "pip", "install", "demo"), INSTALLED, 1)
