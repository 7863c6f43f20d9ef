"""The usual `check` command lines are read without typer (gpudoctor/check_argv.py): always to exactly
what typer's reading would give, and anything less usual is left to typer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer

from gpudoctor import check_argv, cli, commands

from conftest import H200, ROOT

AGREE = [
    ["check"],
    [
        "check",
        "--python",
        "/a/bin/python",
        "--python=/b/bin/python",
        "--rules",
        "r.yaml",
        "--rules=https://example.invalid/p.yaml#sha256=00",
        "--format",
        "json",
        "--fail-on",
        "warning",
        "--profile",
        "ci",
        "--policy",
        "p.toml",
        "--timeout",
        "5",
        "--data-dir",
        "/data",
        "--since",
        "24h",
        "--plan",
        "--deep",
        "--no-fail-on-unknown",
    ],
    ["check", "--snapshot=/s.tar.gz", "--timeout=inf", "--no-python", "--fail-on-unknown"],
    ["check", "--timeout", "1e10"],
    ["check", "--timeout", " 7 "],
    ["check", "--timeout", "2.5", "--format=markdown", "--fail-on", "never"],
    ["check", "--profile", "preflight", "--format", "prometheus"],
    ["check", "--since=30m", "--no-python"],
    ["check", "--format", "junit", "--python", "python3.12", "--policy=./gpudoctor.toml"],
]

LEFT_TO_TYPER = [
    [],
    ["--version"],
    ["plan"],
    ["check", "--help"],
    ["check", "-h"],
    ["check", "--format", "xml"],
    ["check", "--format", "JSON"],
    ["check", "--timeout", "0"],
    ["check", "--timeout", "nan"],
    ["check", "--timeout", "-1"],
    ["check", "--timeout", "soon"],
    ["check", "--python"],
    ["check", "--python="],
    ["check", "--python", "-I"],
    ["check", "--deep=yes"],
    ["check", "--deep", "--deep"],
    ["check", "--snapshot", "a", "--snapshot", "b"],
    ["check", "extra"],
    ["check", "--"],
    ["check", "--pyth", "/x"],
    ["check", "--fail-on-unknown", "--no-fail-on-unknown"],
    ["check", "--since"],
    ["check", "--since", "24h", "--since", "1h"],
]


def typers_reading(argv: list[str], monkeypatch) -> dict:
    """What typer's `check` hands to commands.dispatch for this command line."""
    seen: dict = {}

    def capture(name: str, **kwargs: object) -> None:
        seen.update(kwargs, _command=name)
        raise SystemExit(0)

    monkeypatch.setattr(commands, "dispatch", capture)
    monkeypatch.setattr(sys, "argv", ["gpudoctor", *argv])
    with pytest.raises(SystemExit) as e:
        cli.run_app()
    assert e.value.code == 0 and seen.pop("_command") == "check"
    return seen


@pytest.mark.parametrize("argv", AGREE, ids=lambda a: " ".join(a))
def test_the_quick_reading_is_typers(argv, monkeypatch):
    quick = check_argv.parse(argv)
    assert quick is not None
    assert quick == typers_reading(argv, monkeypatch)


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=lambda a: " ".join(a) or "(nothing)")
def test_what_it_is_not_sure_of_is_left_to_typer(argv):
    assert check_argv.parse(argv) is None


def test_every_option_of_typers_check_is_in_the_table_and_nothing_else():
    """A new option of `check` in cli.py fails here until check_argv.OPTIONS reads it too."""
    command = typer.main.get_command(cli.app).commands["check"]
    table = {}
    for param in command.params:
        if "--help" in param.opts:
            continue
        kind = "many" if param.multiple else "flag" if param.is_flag else "value"
        choices = tuple(getattr(param.type, "choices", ())) or None
        table.update({opt: (param.name, kind, choices) for opt in param.opts})
        table.update({opt: (param.name, "off", None) for opt in param.secondary_opts})
    choices_as_text = {
        opt: (name, kind, tuple(getattr(c, "value", c) for c in choices) if choices else None)
        for opt, (name, kind, choices) in table.items()
    }
    later = {
        opt: (name, kind, check_argv.LATER_CHOICES[name]() if name in check_argv.LATER_CHOICES else choices)
        for opt, (name, kind, choices) in check_argv.OPTIONS.items()
    }
    assert choices_as_text == later
    assert set(check_argv.DEFAULTS) == {p.name for p in command.params if "--help" not in p.opts}


def test_a_check_never_imports_typer_click_or_rich(tmp_path):
    code = (
        "import json, sys\nfrom gpudoctor import entry\n"
        f"sys.argv = ['gpudoctor', 'check', '--snapshot', {str(H200)!r}, '--format', 'json']\n"
        "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(json.dumps([m for m in ('typer', 'click', 'rich') if m in sys.modules]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(proc.stdout)["host"]["source"] == str(H200)
    assert json.loads(proc.stderr.splitlines()[-1]) == []
