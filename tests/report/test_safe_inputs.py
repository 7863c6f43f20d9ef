"""Escape sequences from inputs never reach the terminal raw (issue 24): a rule file's texts (`rules list`,
`rules show`), a file name in an error message, a rule file's problems (`rules validate`) and the command
line `run` judges. The sequences are the real ones: ECMA-48's ED (ESC [2J, clear the screen) and the OSC 8
hyperlink a terminal draws as a forged link (https://gist.github.com/egmontkob/eb114294efbcd5adb1944c9f3cb5feda),
ended by ST (ESC \\)."""

from __future__ import annotations

import sys

from conftest import run_cli

CLEAR = "\x1b[2J"
LINK = "\x1b]8;;https://example.invalid/\x1b\\click\x1b]8;;\x1b\\"
# The same in YAML's double-quoted escapes (\e is ESC): a rule file holds no raw control character.
YAML_CLEAR = CLEAR.replace("\x1b", "\\e")
YAML_LINK = LINK.replace("\\", "\\\\").replace("\x1b", "\\e")

RULE = f"""\
rules:
  - id: GD-USER-001
    title: "Title {YAML_CLEAR}{YAML_LINK}"
    severity: info
    category: frameworks
    when: {{fact: gpus.count, lt: 0}}
    message: "never {YAML_CLEAR}"
    why: "why {YAML_LINK}"
    silent: A rule of this test, which never fires.
"""


def _raw(text: str) -> bool:
    return "\x1b" in text


def test_rules_list_and_show_print_a_rule_files_texts_safely(tmp_path):
    pack = tmp_path / "pack.yaml"
    pack.write_text(RULE)
    listed = run_cli("rules", "list", "--rules", str(pack))
    assert listed.returncode == 0, listed.stderr
    assert "Title ?[2J?]8;;https://example.invalid/?\\click?]8;;?\\" in listed.stdout
    shown = run_cli("rules", "show", "GD-USER-001", "--rules", str(pack))
    assert shown.returncode == 0, shown.stderr
    assert not _raw(listed.stdout) and not _raw(shown.stdout)


def test_an_error_naming_a_file_prints_its_name_safely(tmp_path):
    r = run_cli("explain", "--log", str(tmp_path / f"job{CLEAR}.log"))
    assert r.returncode == 2
    # `[` makes the name a glob pattern (explain --log takes several rank logs)
    assert r.stderr == f"gpudoctor: --log {tmp_path}/job?[2J.log: the pattern matches no file\n"


def test_rules_validate_prints_problems_safely(tmp_path):
    pack = tmp_path / f"bad{CLEAR}.yaml"
    pack.write_text(RULE.replace("severity: info", f'severity: "{YAML_LINK}"'))
    r = run_cli("rules", "validate", str(pack))
    assert r.returncode == 2
    assert "bad?[2J.yaml" in r.stderr
    assert not _raw(r.stderr), r.stderr


def test_run_names_the_judged_interpreter_safely(tmp_path):
    # The explanation names the interpreter the command ran (a path from the command line).
    python = tmp_path / f"py{CLEAR}thon"
    python.symlink_to(sys.executable)
    error = "RuntimeError: CUDA error: an illegal memory access was encountered"  # tests/explain/corpus
    code = f"import sys; sys.stderr.write({error!r} + '\\n'); sys.exit(1)"
    r = run_cli("run", "--", str(python), "-c", code)
    assert r.returncode == 1
    assert "GD-EXPLAIN-001" in r.stderr
    block = r.stderr.split("gpudoctor: the command failed")[1]
    assert f"{tmp_path}/py?[2Jthon" in block
    assert not _raw(block)
