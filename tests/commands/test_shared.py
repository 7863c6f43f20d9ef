"""commands/_shared.py: what several commands share, on the recorded H200 (tests/fixtures/
h200-driver580-snapshot) and live on this machine: rules and policies that do not load, a --python that cannot
be inspected, --index-mirror values, the plan as text, JSON and a saved file, and warnings on stderr."""

from __future__ import annotations

import json

import pytest

from gpudoctor.commands import CommandError
from gpudoctor.commands._shared import (
    check_one,
    collect,
    load_rules,
    make_plan,
    parse_mirrors,
    plan_json,
    print_plan,
    report_width,
    warn,
    where_checked,
)
from gpudoctor.report import plan_report

from conftest import FIXTURES, H200

BAD_RULE = """\
rules:
  - id: GD-MY-001
    title: t
    severity: fatal
    category: gpu
    when: {fact: gpus.count, gt: 0}
    message: m
    why: w
"""


@pytest.fixture(scope="module")
def h200():
    return check_one(str(H200), [], (), None, 10.0)


def test_rules_that_do_not_load_are_one_error_listing_each_problem(tmp_path):
    pack = tmp_path / "mine.yaml"
    pack.write_text(BAD_RULE)
    with pytest.raises(CommandError) as e:
        load_rules([str(pack)])
    assert e.value.code == 2
    assert e.value.message.startswith("rule files have problems:\n  ")
    assert str(pack) in e.value.message and "fatal" in e.value.message
    with pytest.raises(CommandError, match=r"^rule files have problems:\n  "):
        check_one(str(H200), [], (str(pack),), None, 10.0)
    assert len(load_rules([])) > 100  # the shipped rules


def test_a_policy_that_does_not_load_is_one_error(tmp_path):
    policy = tmp_path / "gpudoctor.toml"
    policy.write_text('[ignore]\n"GD-SHM-001" = ""\n')
    with pytest.raises(CommandError) as e:
        check_one(str(H200), [], (), str(policy), 10.0)
    assert e.value.message == (
        f"policy has problems:\n  {policy}: ignore.GD-SHM-001: an ignored rule needs a written reason:"
        " the value is why it is ignored"
    )


def test_a_snapshot_with_python_is_refused_and_a_missing_one_named(tmp_path):
    with pytest.raises(
        CommandError, match=r"^--snapshot replays a recorded host, .* drop --snapshot to judge"
    ):
        collect(str(H200), ["/usr/bin/python3"], None)
    with pytest.raises(CommandError) as e:
        collect(str(tmp_path / "nowhere"), [], None)
    assert str(tmp_path / "nowhere") in e.value.message
    host, source, deadline = collect(str(H200), [], 5.0, inspect_python=False)
    assert (host.kind, 4.0 < deadline.remaining() <= 5.0) == ("snapshot", True)


def test_a_python_that_cannot_be_inspected_stops_the_command(tmp_path):
    missing = str(tmp_path / "bin" / "python")
    with pytest.raises(CommandError) as e:
        check_one(None, [missing], (), None, 20.0)
    assert e.value.message.startswith(f"--python: inspecting {missing} failed")
    assert "\n" not in e.value.message


def test_mirrors_are_two_plain_urls_and_a_password_is_never_echoed():
    value = "https://download.pytorch.org/whl/=https://mirror.example/pytorch/whl/"
    assert parse_mirrors((value,)) == (
        ("https://download.pytorch.org/whl/", "https://mirror.example/pytorch/whl/"),
    )
    assert parse_mirrors(()) == ()
    with pytest.raises(CommandError) as e:
        parse_mirrors(("https://download.pytorch.org/whl/=https://alice:s3cret@mirror.example/whl/",))
    assert "s3cret" not in e.value.message
    assert e.value.message.startswith(
        "--index-mirror 'https://download.pytorch.org/whl/=https://<redacted>@mirror.example/whl/': expected"
    )
    with pytest.raises(CommandError, match=r"expected ORIGINAL=MIRROR"):
        parse_mirrors(("https://download.pytorch.org/whl/",))


def test_where_checked(h200):
    assert where_checked(h200) == f"snapshot {H200} of redacted-host"


def test_the_plan_printed_as_text_and_as_json(h200, capsys):
    print_plan(h200, "text")
    assert capsys.readouterr().out == plan_report.render_text(make_plan(h200), where_checked(h200))
    print_plan(h200, "json")
    printed = json.loads(capsys.readouterr().out)
    assert printed == plan_json(h200, make_plan(h200))
    assert printed["host"] == {"kind": "snapshot", "source": str(H200), "hostname": "redacted-host"}
    assert [s["command"] for s in printed["steps"]] == [
        "/opt/torch/.venv/bin/python3 -m pip uninstall -y onnxruntime",
        "/opt/torch/.venv/bin/python3 -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.30.0'",
    ]


def test_a_saved_plan_is_the_sealed_json_and_a_missing_directory_is_an_error(h200, tmp_path, capsys):
    out = tmp_path / "plan.json"
    print_plan(h200, "text", output=str(out))
    printed = capsys.readouterr().out
    assert printed.endswith(f"Saved to {out}: apply exactly this plan with `gpudoctor fix --plan {out}`.\n")
    assert json.loads(out.read_text()) == plan_json(h200, make_plan(h200))
    nowhere = tmp_path / "no" / "plan.json"
    with pytest.raises(CommandError, match=rf"^-o {nowhere}: no such directory: {tmp_path / 'no'}$"):
        print_plan(h200, "text", output=str(nowhere))
    assert not (tmp_path / "no").exists()


def test_the_nogpu_recording_has_an_empty_plan():
    result = check_one(str(FIXTURES / "nogpu-ci-snapshot"), [], (), None, 10.0)
    assert make_plan(result).steps == ()


def test_a_report_not_on_a_terminal_is_100_columns(capsys):
    assert report_width() == 100


def test_warnings_go_to_stderr_without_control_characters(capsys):
    warn("--rules x: no *.yaml rule files\x1b[2J in this directory")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("gpudoctor: --rules x: no *.yaml rule files")
    assert "\x1b" not in captured.err and captured.err.endswith(" in this directory\n")
