"""Profiles: which probes run, which rules are evaluated, and which --fail-on and deadline apply."""

from __future__ import annotations

import json

import pytest

from gpudoctor.container import operator
from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules
from gpudoctor.facts import Facts, head, known, unknown
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check
from gpudoctor.pipeline.result import Result
from gpudoctor.pipeline.verdict import unknown_errors
from gpudoctor.probes import DECLARED, registry
from gpudoctor.profiles import PROFILES, resolve_fail_on, resolve_timeout, rule_facts, select_rules

from conftest import H200, run_cli

# The rules that read facts only probes outside preflight collect: cuda, libraries, monitoring, storage,
# gpu_health (the counters), interconnect (and the environment rules judged against it), kernel_log. The
# rules of a probe added since are skipped too (each probe's PROBE says whether preflight runs it).
PREFLIGHT_SKIPS = [
    "GD-BUILD-001",
    "GD-BUILD-002",
    "GD-COUNTER-001",
    "GD-COUNTER-002",
    "GD-COUNTER-003",
    "GD-COUNTER-004",
    "GD-COUNTER-005",
    "GD-CUDA-003",
    "GD-CUDA-004",
    "GD-CUDA-005",
    "GD-CUDA-006",
    "GD-CUDA-007",
    "GD-CUDA-008",
    "GD-CUDNN-001",
    "GD-CUDNN-002",
    "GD-IB-005",
    "GD-IB-001",
    "GD-IB-002",
    "GD-IB-003",
    "GD-IB-004",
    "GD-PCIE-ACS-001",
    "GD-IOMMU-001",
    "GD-ENV-005",
    "GD-ENV-006",
    "GD-XID-001",
    "GD-XID-002",
    "GD-XID-003",
    "GD-XID-004",
    "GD-XID-005",
    "GD-XID-006",
    "GD-KLOG-001",
    "GD-LIBS-001",
    "GD-LIBS-003",
    "GD-LIBS-002",
    "GD-DCGM-002",
    "GD-NCCL-001",
    "GD-DCGM-001",
    "GD-NCCL-002",
    "GD-NCCL-003",
    "GD-STORAGE-001",
]


def _owners():
    return {prefix: name for name, prefixes, _ in registry() for prefix in prefixes}


def test_profile_probes_are_registry_names():
    # Each probe's PROBE names the profiles that run it: names of profiles that exist.
    assert {name for p in DECLARED for name in p.profiles} == set(PROFILES)
    names = {name for name, _, _ in registry()}
    for profile in PROFILES.values():
        assert set(profile.probes) <= names, profile.name
    assert set(PROFILES["workstation"].probes) == names == set(PROFILES["ci"].probes)
    # In registry order: each probe module's PROBE names the profiles that run it.
    assert PROFILES["preflight"].probes == (
        "driver",
        "gpus",
        "python",
        "system",
        "container",
        "gpu_processes",
        "fabric",
    )


def _outside_preflight(rule, deep: bool = False) -> bool:
    """Whether the rule names a fact of a probe preflight does not run (`deep`: the --deep ones too)."""
    heads = {h for p in DECLARED if "preflight" not in p.profiles and (deep or not p.deep) for h in p.heads}
    return any(head(name) in heads for name in rule_facts(rule))


def test_preflight_evaluates_only_rules_whose_facts_it_collects():
    keep, skip = select_rules(load_rules([]), PROFILES["preflight"].probes, _owners())
    assert [r.id for r in skip if r.id in PREFLIGHT_SKIPS] == PREFLIGHT_SKIPS
    assert all(_outside_preflight(r) for r in skip) and not any(_outside_preflight(r) for r in keep)
    assert "GD-CONTAINER-001" in [r.id for r in keep]  # NVIDIA_REQUIRE_CUDA is judged in preflight
    keep, skip = select_rules(load_rules([]), PROFILES["workstation"].probes, _owners())
    assert skip == []


def test_rule_facts_cover_condition_iteration_texts_and_nvidia_require():
    rules = {r.id: r for r in load_rules([])}
    assert {"container.require_verdict", "container.require_gpu", "driver.max_cuda"} <= rule_facts(
        rules["GD-CONTAINER-001"]
    )
    rule = rules["GD-CONTAINER-002"]
    operator.provide()
    nvidia_require = rule._replace(when={"fact": "container.nvidia_require_cuda", "nvidia_require": "unmet"})
    assert {"driver.max_cuda", "driver.version", "gpus.count"} <= rule_facts(nvidia_require)
    assert "frameworks.count" in rule_facts(rules["GD-FW-004"])  # its for_each
    assert "python.executable" in rule_facts(rules["GD-RUNTIME-011"])  # only in its fix command


@pytest.mark.parametrize(
    ("profile", "flag", "policy", "expected"),
    [
        ("workstation", None, None, "error"),
        ("workstation", None, "info", "info"),
        ("workstation", "never", "info", "never"),
        ("ci", None, None, "warning"),
        ("ci", None, "error", "error"),
        ("ci", "info", "error", "info"),
        ("preflight", None, None, "error"),
        ("preflight", None, "warning", "error"),  # the policy does not change preflight's
        ("preflight", "warning", None, "warning"),  # an explicit flag does
    ],
)
def test_fail_on_precedence(profile, flag, policy, expected):
    assert resolve_fail_on(PROFILES[profile], flag, policy) == expected


def test_timeouts():
    assert resolve_timeout(PROFILES["preflight"], None) == 5.0
    assert resolve_timeout(PROFILES["workstation"], None) == 10.0
    assert resolve_timeout(PROFILES["preflight"], 3.0) == 3.0
    # --deep imports frameworks: a longer default, never over what --timeout says.
    assert resolve_timeout(PROFILES["preflight"], None, deep=True) == 30.0
    assert resolve_timeout(PROFILES["workstation"], 4.0, deep=True) == 4.0


# The recovery action rules (errors): the H200 capture asked NVML for no field value. Unknown only because
# the snapshot did not record it, they do not make a gate exit 2 (Profile.unrecorded_ok).
RECOVERY_UNRECORDED = [("GD-GPU-006", "unknown"), ("GD-GPU-007", "unknown"), ("GD-GPU-008", "unknown")]
# Nor the GPU's sysfs uevent (which driver is bound): the capture ran in a container, where GD-GPU-005 now
# judges the GPUs given to it (until 2026-12-05 it passed there unjudged), so it is unknown for want of it.
UEVENT_UNRECORDED = [("GD-GPU-005", "unknown")]
# The /dev/shm rules (errors): the capture listed neither /dev nor /proc/self/status (probes/shm.py).
SHM_UNRECORDED = [("GD-SHM-002", "unknown"), ("GD-SHM-004", "unknown")]
# GD-DRIVER-005/006 judge the host's sysfs and GD-MEMLOCK-001 multi-GPU hosts, as their applies: says; a
# container with one GPU is neither (until 2026-12-05 they read "passed" there).
APPLIES_NOT_HERE = [
    ("GD-DRIVER-005", "not_applicable"),
    ("GD-DRIVER-006", "not_applicable"),
    ("GD-MEMLOCK-001", "not_applicable"),
]


def test_no_python_judges_the_machine_alone():
    host = SnapshotHost(load(str(H200)), "h200")
    result = run_check(host, "h200", Deadline(10), [], profile=PROFILES["preflight"], no_python=True)
    assert "python" not in [p.name for p in result.probes]
    assert {"GD-FW-001", "GD-CUDA-001", "GD-CONTAINER-004"} <= set(result.skipped_rules)
    assert result.facts.get("python.executable").unknown == "not collected"
    # No interpreter is run at all: the glibc a Python would have reported is not read either.
    assert result.facts.get("system.glibc").unknown == "not inspected (--no-python)"
    # The H200 capture recorded no process (nvidia-smi: "No running processes found"), and not LD_PRELOAD or
    # NVTX_INJECTION64_PATH (tests/fixtures/make_h200_snapshot.py), nor NVML's recovery action field.
    assert [(r.rule.id, r.status) for r in result.results if r.status != "passed"] == [
        *APPLIES_NOT_HERE[:2],
        *UEVENT_UNRECORDED,
        *RECOVERY_UNRECORDED,
        ("GD-ENV-007", "unknown"),
        ("GD-PROC-001", "not_applicable"),
        *APPLIES_NOT_HERE[2:],
        *SHM_UNRECORDED,
    ]


def test_preflight_check_collects_only_its_probes():
    host = SnapshotHost(load(str(H200)), "h200")
    result = run_check(host, "h200", Deadline(10), [], profile=PROFILES["preflight"])
    assert [p.name for p in result.probes] == [
        "driver",
        "gpus",
        "python",
        "system",
        "container",
        "gpu_processes",
        "fabric",
    ]
    today = [
        "cuda",
        "libraries",
        "monitoring",
        "storage",
        "kernel_log",
        "interconnect",
        "gpu_health",
        "runtime",
    ]
    assert [p for p in result.skipped_probes if p in today] == today
    assert result.skipped_probes == [p.name for p in DECLARED if "preflight" not in p.profiles]
    # The runtime rules need --deep: skipped in every profile without it (GD-EXT-001: the extension scan).
    runtime = [r for r in result.skipped_rules if r.startswith("GD-RUNTIME-") or r == "GD-EXT-001"]
    assert runtime and set(PREFLIGHT_SKIPS + runtime) <= set(result.skipped_rules)
    rules = {r.id: r for r in load_rules([])}
    assert all(_outside_preflight(rules[r], deep=True) for r in result.skipped_rules)
    assert result.facts.value("python.executable") == "/opt/torch/.venv/bin/python3"
    assert result.facts.value("gpus.count") == 1
    # The fixture's onnxruntime is the CPU-only package (its README): a warning, below preflight's fail-on.
    # It recorded no GPU process, and not LD_PRELOAD (GD-ENV-007 cannot be judged).
    assert {(r.rule.id, r.status) for r in result.results if r.status != "passed"} == {
        ("GD-FW-004", "fired"),
        ("GD-ENV-007", "unknown"),
        *UEVENT_UNRECORDED,
        *RECOVERY_UNRECORDED,
        ("GD-PROC-001", "not_applicable"),
        *APPLIES_NOT_HERE,
        *SHM_UNRECORDED,
    }


# --- through the command line -------------------------------------------------------------------------


def test_an_unreadable_kernel_log_alone_does_not_fail_a_gate_unless_asked():
    # The H200 snapshot was recorded before gpudoctor read the kernel log: GD-XID-001 and GD-XID-005
    # (errors) are unknown only for want of kernel_log/xid/sxid facts (Profile.unknown_ok). The ci profile
    # still exits 0 with --fail-on error and shows them as could not be evaluated (on a live host GD-KLOG-001
    # says why the log was unreadable);
    # an explicit --fail-on-unknown counts them: exit 2.
    r = run_cli("check", "--snapshot", str(H200), "--profile", "ci", "--fail-on", "error", "--format", "json")
    assert r.returncode == 0, r.stdout[-500:]
    report = json.loads(r.stdout)
    status = {rule["id"]: rule["status"] for rule in report["rules"]}
    assert status["GD-XID-001"] == "unknown" and status["GD-KLOG-001"] == "unknown"
    strict = run_cli(
        "check", "--snapshot", str(H200), "--profile", "ci", "--fail-on", "error", "--fail-on-unknown"
    )
    assert strict.returncode == 2
    assert (
        "could not check: error-level rule(s) GD-GPU-005, GD-GPU-006, GD-GPU-007, GD-GPU-008, GD-XID-001, "
        "GD-XID-005, GD-NCCL-002, GD-SHM-002, GD-SHM-004 could not be evaluated" in strict.stdout
    )


def test_only_what_a_snapshot_did_not_record_is_let_be_unknown():
    rules = [r for r in load_rules([]) if r.id == "GD-GPU-006"]

    def gate(why: str, **options) -> list[str]:
        facts = Facts({
            "gpus.count": known(1, "t"), "gpus[0].index": known(0, "t"),
            "gpus[0].recovery_action": unknown(why, "nvml"),
        })  # fmt: skip
        result = Result(facts, evaluate(rules, facts), [], "t", "t", 0.0, fail_unknown=True, **options)
        return [r.rule.id for r in unknown_errors(result)]

    assert gate("not recorded in snapshot", unrecorded_ok=True) == []
    assert gate("not recorded in snapshot") == ["GD-GPU-006"]  # --fail-on-unknown, or another profile
    assert gate("no permission", unrecorded_ok=True) == ["GD-GPU-006"]  # a live host's unknown still fails


DEADLINES = [
    # (command line, the deadline its run gets, seconds); H200 replays the fixture snapshot
    (["check"], 10.0),
    (["check", "--deep"], 30.0),
    (["check", "--profile", "preflight"], 5.0),
    (["check", "--profile", "preflight", "--deep"], 30.0),
    (["check", "--timeout", "3", "--deep"], 3.0),
    (["plan"], 10.0),
    (["plan", "--deep"], 30.0),
    (["plan", "--deep", "--timeout", "7"], 7.0),
    (["facts"], 10.0),
    (["facts", "--deep"], 30.0),
    (["explain", "CUDA driver version is insufficient for CUDA runtime version"], 10.0),
]


def deadline_of(argv: list[str], monkeypatch) -> float:
    """The seconds of the first Deadline the command line makes (the run's), read as users give it: check
    through check_argv, the others through typer."""
    import sys

    from gpudoctor import check_argv, cli, commands

    seen: list[float] = []
    make = Deadline.__init__

    def record(self, seconds: float) -> None:
        seen.append(seconds)
        make(self, seconds)

    monkeypatch.setattr(Deadline, "__init__", record)
    monkeypatch.setattr(sys, "argv", ["gpudoctor", *argv])
    quick = check_argv.parse(argv)
    with pytest.raises(SystemExit):
        if quick is None:
            cli.run_app()
        else:
            commands.dispatch("check", **quick)
    return seen[0]


@pytest.mark.parametrize("argv, seconds", DEADLINES, ids=[" ".join(argv) for argv, _ in DEADLINES])
def test_every_command_gets_its_deadline_from_one_policy(argv, seconds, monkeypatch, capsys):
    """plan, facts and snapshot --deep import frameworks as check --deep does: 30 s, not 10 (issue 24)."""
    assert deadline_of(argv + ["--snapshot", str(H200)], monkeypatch) == seconds


def test_live_commands_get_their_deadline_from_the_same_policy(tmp_path, monkeypatch, capsys):
    """snapshot (live only) and fix (live only; --dry-run changes nothing)."""
    import sys

    out = str(tmp_path / "s.tar.gz")
    assert deadline_of(["snapshot", "-o", out], monkeypatch) == 10.0
    assert deadline_of(["snapshot", "-o", out, "--deep"], monkeypatch) == 30.0
    assert deadline_of(["fix", "--dry-run", "--python", sys.executable], monkeypatch) == 10.0
