"""A file a user names for output goes into a directory that exists: a missing one is exit 2 naming it, as
cp, tar and a shell redirection refuse it, never a tree of directories made from the filesystem root
(issue 24)."""

from __future__ import annotations

from conftest import H200, run_cli


def test_bench_html_into_a_missing_directory_is_refused_before_measuring(tmp_path):
    page = tmp_path / "missing" / "deeper" / "bench.html"
    r = run_cli("bench", "--html", str(page))
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"gpudoctor: --html {page}: no such directory: {page.parent}\n"
    assert not (tmp_path / "missing").exists()


def test_plan_output_into_a_missing_directory_is_refused(tmp_path):
    saved = tmp_path / "missing" / "plan.json"
    r = run_cli("plan", "--snapshot", str(H200), "-o", str(saved))
    assert r.returncode == 2, r.stderr
    assert f"-o {saved}: no such directory: {saved.parent}" in r.stderr
    assert not (tmp_path / "missing").exists()


def test_plan_output_into_an_existing_directory_is_written(tmp_path):
    saved = tmp_path / "plan.json"
    r = run_cli("plan", "--snapshot", str(H200), "-o", str(saved))
    assert r.returncode in (0, 1), r.stderr
    assert saved.read_text().startswith("{")
