"""Policy files: found, validated strictly, turned into the `policy.*` facts that the shipped policy rules
(rules/policy.yaml) read, and judged on the H200 snapshot."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gpudoctor.engine.evaluate import parameters_given
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import Facts, spec_for
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.verdict import decide, exit_code
from gpudoctor.policy import PolicyError, parse
from gpudoctor.policy import load as load_policy
from gpudoctor.profiles import PROFILES
from gpudoctor.report import json_report
from gpudoctor.report.text import render_plain

from conftest import H200, run_cli

ROOT = Path(__file__).parents[2]

FULL = {
    "fail_on": "warning",
    "gpus": {"count": 8, "model": "H100", "min_memory_gb": 160, "nvlink_all_active": True},
    "driver": {"min_version": "590", "cuda": ">=13.1,<14"},
    "cudnn": {"version": ">=9.15"},
    "frameworks": {"gpu": ["torch", "onnxruntime", "tensorflow"]},
    "ignore": {"GD-FW-004": "onnxruntime runs our CPU tokenizer only"},
}


def _check(policy, profile="workstation"):
    host = SnapshotHost(load(str(H200)), "h200")
    return run_check(host, "h200", Deadline(10), [], profile=PROFILES[profile], policy=policy)


def _statuses(result):
    return {r.rule.id: r.status for r in result.results if r.rule.id.startswith("POLICY-")}


def _messages(result, rule_id):
    return [f.message for r in result.results if r.rule.id == rule_id for f in r.findings]


def _applying(policy):
    """The shipped policy rules that apply under this policy (its requirements' facts given)."""
    given = Facts(policy.facts)
    return [r.id for r in load_rules([]) if r.id.startswith("POLICY-") and parameters_given(r, given)]


def test_every_requirement_becomes_declared_facts_that_its_rules_read():
    policy = parse(dict(FULL), "gpudoctor.toml")
    assert {name: fact.value for name, fact in policy.facts.items()} == {
        "policy.file": "gpudoctor.toml",
        "policy.gpus.count": 8,
        "policy.gpus.count_bound": "exactly",
        "policy.gpus.count_key": "gpus.count",
        "policy.gpus.model": "H100",
        "policy.gpus.model_pattern": "(?i:H100)",
        "policy.gpus.min_memory_gb": 160,
        "policy.gpus.min_memory_bytes": 160_000_000_000,
        "policy.gpus.nvlink_all_active": True,
        "policy.driver.min_version": "590",
        "policy.driver.cuda": ">=13.1,<14",
        "policy.cudnn.version": ">=9.15",
        "policy.frameworks.torch": True,
        "policy.frameworks.onnxruntime": True,
        "policy.frameworks.tensorflow": True,
    }
    assert all(spec_for(name) is not None for name in policy.facts)
    assert _applying(policy) == [
        "POLICY-GPU-COUNT",
        "POLICY-GPU-MODEL",
        "POLICY-GPU-MEMORY",
        "POLICY-NVLINK",
        "POLICY-DRIVER-MIN",
        "POLICY-CUDA-RANGE",
        "POLICY-CUDNN-PRESENT",
        "POLICY-CUDNN-RANGE",
        "POLICY-FW-TORCH",
        "POLICY-FW-TENSORFLOW",
        "POLICY-FW-ONNXRUNTIME",
    ]
    assert policy.fail_on == "warning"
    assert policy.ignore == (("GD-FW-004", "onnxruntime runs our CPU tokenizer only"),)


def test_unmet_requirements_fire_with_exact_messages():
    result = _check(parse(dict(FULL), "gpudoctor.toml"))
    assert _statuses(result) == {
        "POLICY-GPU-COUNT": "fired",
        "POLICY-GPU-MODEL": "fired",
        "POLICY-GPU-MEMORY": "fired",
        "POLICY-NVLINK": "fired",  # the H200 PCIe card has no NVLink
        "POLICY-DRIVER-MIN": "fired",
        "POLICY-CUDA-RANGE": "fired",
        "POLICY-CUDNN-PRESENT": "passed",
        "POLICY-CUDNN-RANGE": "fired",  # the system copy, 9.14.0
        "POLICY-FW-TORCH": "passed",
        "POLICY-FW-ONNXRUNTIME": "fired",  # a CPU build
        "POLICY-FW-TENSORFLOW": "fired",  # not installed
    }
    assert _messages(result, "POLICY-GPU-COUNT") == ["The policy requires exactly 8 GPU(s); 1 visible."]
    assert _messages(result, "POLICY-GPU-MODEL") == [
        "GPU 0 (NVIDIA H200) does not match the policy's model pattern 'H100'."
    ]
    assert _messages(result, "POLICY-GPU-MEMORY") == [
        "GPU 0 (NVIDIA H200) has 140.4 GiB; the policy requires 160 GB (10^9 bytes) per GPU."
    ]
    assert _messages(result, "POLICY-DRIVER-MIN") == [
        "The policy requires NVIDIA driver 590 or newer; this host has 580.159.04 "
        "(kernel module loaded: yes)."
    ]
    assert _messages(result, "POLICY-CUDA-RANGE") == [
        "The policy requires a driver that supports CUDA '>=13.1,<14'; driver 580.159.04 supports CUDA 13.0."
    ]
    assert _messages(result, "POLICY-CUDNN-RANGE") == [
        "cuDNN 9.14.0 at /lib/x86_64-linux-gnu/libcudnn.so.9 (system) is outside the policy's '>=9.15'."
    ]
    why = [f.why for f in result.findings if f.rule.id == "POLICY-GPU-COUNT"]
    assert why == ["Required by the policy in gpudoctor.toml (gpus.count)."]


def test_met_requirements_pass():
    met = {
        "gpus": {"min_count": 1, "model": "h200", "min_memory_gb": 80},  # the pattern ignores case
        "driver": {"min_version": "550.54.15", "cuda": ">=12.4,<14"},
        "cudnn": {"version": ">=9.10,<10"},
        "frameworks": {"gpu": ["torch", "jax", "cupy"]},
    }
    result = _check(parse(met, "gpudoctor.toml"))
    assert set(_statuses(result).values()) == {"passed"}
    assert exit_code(result.findings, "error") == 0


def test_count_is_exact_and_min_count_is_a_floor():
    assert _statuses(_check(parse({"gpus": {"count": 1}}, "p.toml"))) == {"POLICY-GPU-COUNT": "passed"}
    assert _statuses(_check(parse({"gpus": {"count": 0}}, "p.toml"))) == {"POLICY-GPU-COUNT": "fired"}
    assert _statuses(_check(parse({"gpus": {"min_count": 2}}, "p.toml"))) == {"POLICY-GPU-COUNT": "fired"}


def test_without_a_policy_no_policy_rule_is_part_of_the_check():
    # Neither evaluated nor "not evaluated": a check without a policy reads as it did before policy rules
    # were shipped (the golden files hold its output).
    for profile in ("workstation", "preflight"):
        result = _check(None, profile)
        assert _statuses(result) == {}
        assert [r for r in result.skipped_rules if r.startswith("POLICY-")] == []


def test_a_requirement_left_unset_is_no_rule_and_a_policy_may_ignore_its_rule():
    policy = parse({"gpus": {"min_count": 1}, "ignore": {"POLICY-GPU-MODEL": "any GPU will do"}}, "p.toml")
    result = _check(policy)
    assert _statuses(result) == {"POLICY-GPU-COUNT": "passed"}
    assert [
        r.rule.id for r in result.results if r.status == "unknown" and r.rule.id.startswith("POLICY-")
    ] == []


def test_numbers_read_as_written_in_messages():
    # TOML's 160.0 is a float: the message says 160 GB, as it says for 160.
    policy = parse({"gpus": {"min_memory_gb": 160.0}, "interconnect": {"ib_rate_gbps": 400.0}}, "p.toml")
    assert policy.facts["policy.gpus.min_memory_gb"].value == 160
    assert policy.facts["policy.interconnect.ib_rate_gbps"].value == 400
    assert _messages(_check(policy), "POLICY-GPU-MEMORY") == [
        "GPU 0 (NVIDIA H200) has 140.4 GiB; the policy requires 160 GB (10^9 bytes) per GPU."
    ]
    fraction = parse({"gpus": {"min_memory_gb": 150.8}}, "p.toml")
    assert fraction.facts["policy.gpus.min_memory_bytes"].value == 150_800_000_000
    assert _messages(_check(fraction), "POLICY-GPU-MEMORY") == [
        "GPU 0 (NVIDIA H200) has 140.4 GiB; the policy requires 150.8 GB (10^9 bytes) per GPU."
    ]


def test_ignored_findings_leave_the_findings_and_the_exit_code_but_are_reported():
    policy = parse({"ignore": {"GD-FW-004": "onnxruntime runs our CPU tokenizer only"}}, "gpudoctor.toml")
    result = _check(policy)
    assert [f.rule.id for f in result.findings] == ["GD-CUDNN-002"]
    assert exit_code(result.findings, "warning") == 0
    data = json.loads(json_report.render(result, decide(result, "warning"), include_timing=False))
    assert data["summary"]["ignored"] == 1 and data["summary"]["warning"] == 0
    assert [(i["rule"], i["reason"]) for i in data["ignored"]] == [
        ("GD-FW-004", "onnxruntime runs our CPU tokenizer only")
    ]
    assert {r["id"]: r["status"] for r in data["rules"]}["GD-FW-004"] == "ignored"
    assert data["policy"] == "gpudoctor.toml"
    text = render_plain(result, decide(result, "warning"))
    assert "Ignored by policy\n  WARNING GD-FW-004  CPU-only ONNX Runtime on a GPU host\n" in text
    assert "    reason: onnxruntime runs our CPU tokenizer only\n" in text
    assert (
        "1 ignored by policy, 15 not evaluated (runtime checks need --deep) · exit 0 (--fail-on warning)"
        in text
    )


def test_an_ignored_rule_must_exist():
    policy = parse({"ignore": {"GD-NOPE-001": "typo"}}, "gpudoctor.toml")
    with pytest.raises(PolicyError) as e:
        _check(policy)
    assert e.value.problems == [
        "gpudoctor.toml: ignore.GD-NOPE-001: no such rule (`gpudoctor rules list` shows them)"
    ]


def test_a_fleet_rule_ignored_in_the_same_file_is_fleets_to_check():
    """One policy file serves `check` and `fleet`: check leaves GD-FLEET-* ids to fleet, which checks them."""
    policy = parse({"ignore": {"GD-FLEET-DRIVER-001": "canary nodes"}}, "gpudoctor.toml")
    policy.check_ignores({"GD-SHM-001"})  # raises nothing


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"ignore": {"GD-SHM-001": ""}}, "ignore.GD-SHM-001: an ignored rule needs a written reason"),
        ({"ignore": {"GD-SHM-001": "  "}}, "ignore.GD-SHM-001: an ignored rule needs a written reason"),
        ({"ignore": ["GD-SHM-001"]}, 'ignore: expected a table of rule id = "reason"'),
        ({"ignore": {"shm": "x"}}, "ignore.shm: not a rule id"),
        ({"gpus": {"cont": 8}}, "gpus.cont: unknown key (expected one of: count, min_count, model,"),
        ({"gpu": {"count": 8}}, "gpu: unknown key (expected one of: fail_on, gpus, driver,"),
        ({"gpus": {"count": "8"}}, "gpus.count: expected an integer, got '8'"),
        ({"gpus": {"count": True}}, "gpus.count: expected an integer, got True"),
        (
            {"gpus": {"count": 8, "min_count": 1}},
            "gpus: give count (exactly) or min_count (at least), not both",
        ),
        ({"gpus": {"model": "H1(00"}}, "gpus.model: not a valid regular expression"),
        ({"gpus": {"min_memory_gb": 0}}, "gpus.min_memory_gb: expected a positive number of GB"),
        ({"driver": {"min_version": "new"}}, "driver.min_version: not a version: 'new'"),
        ({"driver": {"cuda": "12.4"}}, "driver.cuda: expected a version range such as '>=12.4,<14'"),
        ({"driver": {"cuda": "==12.*"}}, "driver.cuda: expected a version range"),
        ({"cudnn": {"version": "~=9.1"}}, "cudnn.version: expected a version range"),
        ({"driver": {"cuda": ">=" + "9" * 5000}}, "driver.cuda: expected a version range"),
        ({"driver": {"min_version": "9" * 5000}}, "driver.min_version: not a version"),
        ({"frameworks": {"gpu": ["pytorch"]}}, "frameworks.gpu: unknown framework 'pytorch'"),
        ({"fail_on": "sometimes"}, "fail_on: expected one of error, warning, info, never, got 'sometimes'"),
    ],
)
def test_problems_name_the_file_and_the_key(data, problem):
    with pytest.raises(PolicyError) as e:
        parse(data, "gpudoctor.toml")
    assert any(p.startswith(f"gpudoctor.toml: {problem}") for p in e.value.problems), e.value.problems


def test_every_problem_is_reported_at_once():
    with pytest.raises(PolicyError) as e:
        parse({"gpus": {"cont": 8, "count": "x"}, "ignore": {"GD-SHM-001": ""}}, "p.toml")
    assert len(e.value.problems) == 3


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_found_in_the_working_directory_then_pyproject(tmp_path):
    assert load_policy(None, tmp_path) is None
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    assert load_policy(None, tmp_path) is None  # a pyproject without [tool.gpudoctor] is no policy
    _write(
        tmp_path / "pyproject.toml", '[tool.gpudoctor]\nfail_on = "info"\n[tool.gpudoctor.gpus]\ncount = 2\n'
    )
    policy = load_policy(None, tmp_path)
    assert (policy.fail_on, _applying(policy)) == ("info", ["POLICY-GPU-COUNT"])
    assert policy.facts["policy.file"].value == f"{tmp_path / 'pyproject.toml'} [tool.gpudoctor]"
    assert policy.facts["policy.gpus.count_bound"].value == "exactly"
    _write(tmp_path / "gpudoctor.toml", 'fail_on = "warning"\n')
    assert load_policy(None, tmp_path).fail_on == "warning"  # gpudoctor.toml comes first
    other = _write(tmp_path / "other.toml", 'fail_on = "never"\n')
    assert load_policy(str(other), tmp_path).fail_on == "never"  # --policy wins


def test_a_pyproject_that_cannot_hold_our_table_is_not_parsed(tmp_path, monkeypatch):
    """A project's pyproject.toml that never spells gpudoctor (nor a \\u escape that could, in a quoted key)
    holds no [tool.gpudoctor]: it is not read as TOML (2.5 ms of every check run in a project)."""
    import gpudoctor.policy as policy

    def no_toml():
        raise AssertionError("parsed")

    monkeypatch.setattr(policy.toml_reader, "toml", no_toml)
    # Other tools' tables (as this repository's pyproject.toml has: [tool.ruff]), no gpudoctor.
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n[tool.ruff]\nline-length = 110\n')
    assert load_policy(None, tmp_path) is None
    monkeypatch.undo()
    # The quoted key "gpu\u0064octor" is tool.gpudoctor (TOML 1.0, basic strings): it is read.
    _write(tmp_path / "pyproject.toml", '[tool."gpu\\u0064octor"]\nfail_on = "info"\n')
    assert load_policy(None, tmp_path).fail_on == "info"


def test_pyproject_keys_are_named_under_tool_gpudoctor(tmp_path):
    path = _write(tmp_path / "pyproject.toml", '[tool.gpudoctor.ignore]\nGD-SHM-001 = ""\n')
    with pytest.raises(PolicyError) as e:
        load_policy(None, tmp_path)
    assert e.value.problems == [
        f"{path}: tool.gpudoctor.ignore.GD-SHM-001: an ignored rule needs a written reason: "
        "the value is why it is ignored"
    ]


def test_a_broken_pyproject_without_our_table_is_not_a_policy_error(tmp_path):
    _write(tmp_path / "pyproject.toml", "[project\nname = 1\n")
    assert load_policy(None, tmp_path) is None
    _write(tmp_path / "pyproject.toml", "[tool.gpudoctor]\nfail_on = \n")
    with pytest.raises(PolicyError, match="not valid TOML"):
        load_policy(None, tmp_path)


def test_unreadable_policies(tmp_path):
    with pytest.raises(PolicyError, match="no such policy file"):
        load_policy(str(tmp_path / "missing.toml"), tmp_path)
    bad = _write(tmp_path / "gpudoctor.toml", "gpus = [\n")
    with pytest.raises(PolicyError, match=f"{bad}: not valid TOML"):
        load_policy(None, tmp_path)
    plain = _write(tmp_path / "pyproject.toml", "[project]\n")
    with pytest.raises(PolicyError, match="has no \\[tool.gpudoctor\\] table"):
        load_policy(str(plain), tmp_path)


def test_preflight_does_not_evaluate_requirements_on_facts_it_does_not_collect():
    result = _check(parse(dict(FULL, ignore={}), "gpudoctor.toml"), "preflight")
    # Preflight reads the Python environment's metadata (the frameworks), not the cuDNN copies on disk.
    assert "POLICY-FW-TORCH" not in result.skipped_rules and "POLICY-CUDNN-RANGE" in result.skipped_rules
    assert "POLICY-GPU-COUNT" in _statuses(result) and "POLICY-DRIVER-MIN" in _statuses(result)
    # The only rules it cannot judge, each for want of what the H200 capture did not record: GD-GPU-005
    # the GPU's uevent, the recovery action rules NVML's field values, GD-ENV-007 LD_PRELOAD, the /dev/shm
    # rules a listing of /dev and /proc/self/status.
    unknown = [r.rule.id for r in result.results if r.status == "unknown"]
    assert unknown == [
        "GD-GPU-005", "GD-GPU-006", "GD-GPU-007", "GD-GPU-008", "GD-ENV-007", "GD-SHM-002", "GD-SHM-004"
    ]  # fmt: skip


# --- through the command line -------------------------------------------------------------------------


def gd(*args, cwd=ROOT):
    """The CLI as a process, from any working directory (the policy is looked for there)."""
    return run_cli(*args, cwd=cwd)


def test_cli_ignore_without_reason_exits_2_naming_file_and_key(tmp_path):
    policy = _write(tmp_path / "gpudoctor.toml", '[ignore]\nGD-SHM-001 = ""\n')
    r = gd("check", "--snapshot", str(H200), "--policy", str(policy))
    assert r.returncode == 2
    assert f"{policy}: ignore.GD-SHM-001: an ignored rule needs a written reason" in r.stderr
    r = gd("check", "--snapshot", str(H200), "--policy", str(tmp_path / "nope.toml"))
    assert r.returncode == 2 and "nope.toml: no such policy file" in r.stderr


def test_cli_policy_in_the_working_directory_sets_fail_on_and_requirements(tmp_path):
    _write(tmp_path / "gpudoctor.toml", 'fail_on = "warning"\n')
    r = gd("check", "--snapshot", str(H200), "--format", "json", cwd=tmp_path)
    data = json.loads(r.stdout)
    assert (r.returncode, data["summary"]["fail_on"]) == (1, "warning")  # GD-FW-004 is a warning
    assert gd("check", "--snapshot", str(H200), "--fail-on", "error", cwd=tmp_path).returncode == 0
    _write(tmp_path / "gpudoctor.toml", "[gpus]\ncount = 8\n")
    r = gd("check", "--snapshot", str(H200), cwd=tmp_path)
    assert r.returncode == 1
    assert "ERROR   POLICY-GPU-COUNT  GPU count the policy requires" in r.stdout


def test_the_documented_example_is_a_valid_policy(tmp_path):
    text = (ROOT / "docs" / "policy.md").read_text()
    example = text.split("```toml\n")[1].split("```")[0]
    _write(tmp_path / "gpudoctor.toml", example)
    policy = load_policy(None, tmp_path)
    assert len(_applying(policy)) == 11 and policy.fail_on == "warning"
    assert [rid for rid, _ in policy.ignore] == ["GD-CUDNN-002", "GD-SHM-001"]
    _check(policy)  # its ignores name real rules
    # ... and the documented errors are the real ones.
    _write(tmp_path / "gpudoctor.toml", '[ignore]\nGD-SHM-001 = ""\n[gpus]\ncont = 8\n')
    with pytest.raises(PolicyError) as e:
        load_policy(None, tmp_path)
    for problem in e.value.problems:
        assert problem.replace(str(tmp_path / "gpudoctor.toml"), "gpudoctor.toml") in text
