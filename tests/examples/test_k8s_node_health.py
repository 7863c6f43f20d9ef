"""The Kubernetes node health example (examples/kubernetes/gpudoctor-node-health.{py,yaml}) run as written:
the loop script as a real process, this repository's gpudoctor first on PATH (judging recorded snapshots),
and a stub `kubectl` on PATH that records each call (one JSON argv list per line) and answers
`kubectl get node` with a node object the test gives it. Each test asserts exactly which calls are made."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest
import yaml

from conftest import H200

ROOT = Path(__file__).parents[2]
K8S = ROOT / "examples" / "kubernetes"
SCRIPT = K8S / "gpudoctor-node-health.py"
MANIFEST = K8S / "gpudoctor-node-health.yaml"
NOGPU = ROOT / "tests" / "fixtures" / "nogpu-ci-snapshot"
NODE = "gpu-node-07"
TAINT = "gpudoctor.io/unhealthy"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
FAILING = "POLICY-GPU-COUNT: The policy requires exactly 8 GPU(s); 1 visible."

# Taints and conditions that are not the script's: it must never name them in a call.
OTHER_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
READY = {
    "type": "Ready",
    "status": "True",
    "reason": "KubeletReady",
    "lastTransitionTime": "2026-01-01T00:00",
}
OLD = "2026-11-30T08:00:00Z"
OURS = {"key": TAINT, "effect": "NoSchedule"}


def _node(taints: list, conditions: list) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}, "spec": {"taints": taints},
            "status": {"conditions": conditions}}  # fmt: skip


def _ours(status: str) -> dict:
    return {"type": "GpuDoctorHealthy", "status": status, "reason": "X", "lastTransitionTime": OLD}


class Kube:
    """A bin directory with this repository's gpudoctor and a recording stub kubectl."""

    def __init__(self, tmp_path: Path, node: dict, fail: str = "") -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.log = tmp_path / "kubectl.log"
        node_file = tmp_path / "node.json"
        node_file.write_text(json.dumps(node))
        gd = self.bin / "gpudoctor"
        gd.write_text(
            f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{ROOT}"\n'
            f'exec "{sys.executable}" -m gpudoctor "$@"\n'
        )
        kubectl = self.bin / "kubectl"
        kubectl.write_text(
            f"#!{sys.executable}\n"
            "import json, sys\n"
            f"with open({str(self.log)!r}, 'a') as log:\n"
            "    log.write(json.dumps(sys.argv[1:]) + '\\n')\n"
            f"if sys.argv[1] == {fail!r}:\n"
            "    sys.exit('error: the server has asked for the client to provide credentials')\n"
            "if sys.argv[1] == 'get':\n"
            f"    print(open({str(node_file)!r}).read())\n"
        )
        for exe in (gd, kubectl):
            exe.chmod(0o755)
        self.policy = tmp_path / "needs-8-gpus.toml"
        self.policy.write_text("[gpus]\ncount = 8\n")

    def env(self, **extra: str) -> dict:
        settings = ("NODE_NAME", "KUBECTL", "INTERVAL", "TAINT_EFFECT", "ONCE", "CHECK_TIMEOUT", "PYTHONPATH")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDOCTOR") and k not in settings}
        env.update(NO_COLOR="1", PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}", NODE_NAME=NODE)
        env.update(extra)
        return env

    def run(self, args: tuple = ("--once",), **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(SCRIPT), *args], capture_output=True, text=True, env=self.env(**extra), timeout=120
        )

    def calls(self) -> list:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


def _condition(call: list) -> dict:
    """The one condition a status patch sets, after checking the call's shape."""
    assert call[:5] == ["patch", "node", NODE, "--subresource=status", "--type=strategic"], call
    assert call[5] == "-p" and len(call) == 7, call
    body = json.loads(call[6])
    assert list(body) == ["status"] and list(body["status"]) == ["conditions"], body
    (condition,) = body["status"]["conditions"]
    assert STAMP.match(condition.pop("lastHeartbeatTime")), condition
    return condition


GET = ["get", "node", NODE, "-o", "json"]
ADD = ["taint", "nodes", NODE, f"{TAINT}:NoSchedule"]
REMOVE = ["taint", "nodes", NODE, f"{TAINT}:NoSchedule-"]


def test_errors_set_the_condition_false_with_the_rules_and_taint_the_node(tmp_path):
    kube = Kube(tmp_path, _node([OTHER_TAINT], [READY]))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {kube.policy}")
    assert r.returncode == 1, r.stderr
    get, patch, taint = kube.calls()
    assert (get, taint) == (GET, ADD)
    condition = _condition(patch)
    assert STAMP.match(condition.pop("lastTransitionTime"))
    assert condition == {
        "type": "GpuDoctorHealthy",
        "status": "False",
        "reason": "ErrorsFound",
        "message": f"gpudoctor found: {FAILING}",
    }
    assert r.stderr == (
        f"gpudoctor-node-health: node {NODE}: GpuDoctorHealthy=False (ErrorsFound): gpudoctor found: "
        f"{FAILING}; tainted {TAINT}:NoSchedule\n"
    )


def test_every_error_is_in_the_message(tmp_path):
    policy = tmp_path / "two.toml"
    policy.write_text('[gpus]\ncount = 8\n[driver]\nmin_version = "590.1"\n')
    kube = Kube(tmp_path, _node([], []))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {policy}")
    assert r.returncode == 1, r.stderr
    assert _condition(kube.calls()[1])["message"] == (
        "gpudoctor found: POLICY-DRIVER-MIN: The policy requires NVIDIA driver 590.1 or newer; this host has "
        f"580.159.04 (kernel module loaded: yes). | {FAILING}"
    )


def test_errors_again_keep_the_transition_time_and_do_not_taint_twice(tmp_path):
    kube = Kube(tmp_path, _node([OTHER_TAINT, OURS], [READY, _ours("False")]))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {kube.policy}")
    assert r.returncode == 1, r.stderr
    get, patch = kube.calls()
    assert get == GET
    condition = _condition(patch)
    assert (condition["status"], condition["lastTransitionTime"]) == ("False", OLD)
    assert r.stderr.endswith("; taint kept\n")


def test_healthy_again_sets_the_condition_true_and_removes_only_its_taint(tmp_path):
    kube = Kube(tmp_path, _node([OTHER_TAINT, OURS], [READY, _ours("False")]))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {H200}")
    assert r.returncode == 0, r.stderr
    get, patch, untaint = kube.calls()
    assert (get, untaint) == (GET, REMOVE)
    condition = _condition(patch)
    assert condition["lastTransitionTime"] != OLD and STAMP.match(condition.pop("lastTransitionTime"))
    assert condition == {
        "type": "GpuDoctorHealthy",
        "status": "True",
        "reason": "NoErrors",
        "message": "gpudoctor found no errors",
    }
    assert r.stderr.endswith(f"; removed the taint {TAINT}:NoSchedule\n")


def test_healthy_and_untainted_only_refreshes_the_condition(tmp_path):
    kube = Kube(tmp_path, _node([OTHER_TAINT], [READY, _ours("True")]))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {H200}")
    assert r.returncode == 0, r.stderr
    get, patch = kube.calls()
    assert get == GET and _condition(patch)["lastTransitionTime"] == OLD


def test_a_taint_with_another_effect_is_not_ours_to_remove(tmp_path):
    kube = Kube(tmp_path, _node([{"key": TAINT, "effect": "NoExecute"}], []))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {H200}")
    assert r.returncode == 0, r.stderr
    assert [c[0] for c in kube.calls()] == ["get", "patch"]


def test_could_not_check_reports_unknown_and_keeps_the_taint(tmp_path):
    kube = Kube(tmp_path, _node([OTHER_TAINT, OURS], [READY, _ours("False")]))
    r = kube.run(GPUDOCTOR_ARGS="--snapshot /nonexistent.tar.gz")
    assert r.returncode == 2, r.stderr
    get, patch = kube.calls()  # no taint call: neither removed nor added
    assert get == GET
    condition = _condition(patch)
    assert condition["lastTransitionTime"] != OLD
    del condition["lastTransitionTime"]
    assert condition == {
        "type": "GpuDoctorHealthy",
        "status": "Unknown",
        "reason": "CouldNotCheck",
        "message": "gpudoctor exited 2 without a report: "
        "gpudoctor: /nonexistent.tar.gz: no such file or directory",
    }


def test_could_not_check_does_not_taint_a_healthy_node(tmp_path):
    kube = Kube(tmp_path, _node([], [_ours("True")]))
    r = kube.run(GPUDOCTOR="/nonexistent/gpudoctor")
    assert r.returncode == 2, r.stderr
    get, patch = kube.calls()
    condition = _condition(patch)
    assert (condition["status"], condition["reason"]) == ("Unknown", "CouldNotCheck")
    assert condition["message"].startswith("gpudoctor could not run: [Errno 2] No such file or directory")


def test_a_check_that_could_not_evaluate_its_error_rules_names_them(tmp_path):
    """A real check whose NVML never answers (a fake pynvml whose nvmlInit sleeps, as in
    tests/e2e/test_preflight_deadline.py): the report comes, with exit 2 and the rules it could not judge."""
    mod = tmp_path / "fake_pynvml"
    mod.mkdir()
    (mod / "pynvml.py").write_text("import time\n\n\ndef nvmlInit():\n    time.sleep(60)\n")
    (mod / "libnvidia-ml.so.1").write_bytes(b"")
    kube = Kube(tmp_path, _node([{"key": TAINT, "effect": "NoSchedule"}], []))
    r = kube.run(
        GPUDOCTOR_ARGS="--timeout 1",
        PYTHONPATH=str(mod),
        LD_LIBRARY_PATH=str(mod),
    )
    assert r.returncode == 2, r.stderr
    get, patch = kube.calls()
    condition = _condition(patch)
    assert (condition["status"], condition["reason"]) == ("Unknown", "CouldNotCheck")
    # the cause first, then the rules (the message is cut at 1024 characters, and there are many)
    assert condition["message"].startswith("gpudoctor timed out: NVML nvmlInit"), condition["message"]
    assert "; could not evaluate GD-" in condition["message"]
    assert len(condition["message"]) <= 1024


def test_a_pod_that_sees_no_gpu_has_not_checked_the_node(tmp_path):
    """On a GPU node a preflight that finds no GPU (GD-HOST-001, info: fine on a laptop) means the pod
    was not given the GPUs (no NVIDIA runtime class): Unknown, and the taint stays."""
    kube = Kube(tmp_path, _node([{"key": TAINT, "effect": "NoSchedule"}], []))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {NOGPU}")
    assert r.returncode == 2, r.stderr
    get, patch = kube.calls()
    condition = _condition(patch)
    assert (condition["status"], condition["reason"]) == ("Unknown", "CouldNotCheck")
    assert condition["message"] == (
        "gpudoctor saw no NVIDIA GPU from this pod: No NVIDIA driver/GPU found on this machine "
        "(NVML: NVMLError_LibraryNotFound); nothing GPU-specific to check."
    )


def test_a_policy_requiring_gpus_makes_no_gpu_an_error(tmp_path):
    """What docs/fleet.md says: `min_count = 1` turns a node whose pod sees no GPU into an error."""
    policy = tmp_path / "some-gpu.toml"
    policy.write_text("[gpus]\nmin_count = 1\n")
    kube = Kube(tmp_path, _node([], []))
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {NOGPU} --policy {policy}")
    assert r.returncode == 1, r.stderr
    get, patch, taint = kube.calls()
    condition = _condition(patch)
    assert (condition["status"], taint) == ("False", ADD)
    assert condition["message"].startswith("gpudoctor found: POLICY-GPU-COUNT: "), condition


def test_taint_effect_none_sets_the_condition_only(tmp_path):
    kube = Kube(tmp_path, _node([], []))
    r = kube.run(TAINT_EFFECT="none", GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {kube.policy}")
    assert r.returncode == 1, r.stderr
    get, patch = kube.calls()
    assert _condition(patch)["status"] == "False"
    assert r.stderr.endswith("; no taint (TAINT_EFFECT=none)\n")


def test_taint_effect_no_execute(tmp_path):
    kube = Kube(tmp_path, _node([{"key": TAINT, "effect": "NoSchedule"}], []))
    r = kube.run(TAINT_EFFECT="NoExecute", GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {kube.policy}")
    assert r.returncode == 1, r.stderr
    assert kube.calls()[2] == ["taint", "nodes", NODE, f"{TAINT}:NoExecute"]


def test_kubectl_failing_is_exit_3_and_said(tmp_path):
    kube = Kube(tmp_path, _node([], []), fail="patch")
    r = kube.run(GPUDOCTOR_ARGS=f"--snapshot {H200} --policy {kube.policy}")
    assert r.returncode == 3
    assert [c[0] for c in kube.calls()] == ["get", "patch"]  # no taint after a failed status patch
    assert r.stderr == (
        f"gpudoctor-node-health: could not update node {NODE}: kubectl patch exited 1: "
        "error: the server has asked for the client to provide credentials\n"
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"NODE_NAME": ""}, "NODE_NAME is not set"),
        ({"TAINT_EFFECT": "NoScheduel"}, "TAINT_EFFECT must be one of NoSchedule, PreferNoSchedule"),
        ({"INTERVAL": "five"}, "INTERVAL must be a number of seconds above 0, not 'five'"),
        ({"CHECK_TIMEOUT": "0"}, "CHECK_TIMEOUT must be a number of seconds above 0, not '0'"),
    ],
)
def test_bad_settings_stop_before_any_call(tmp_path, env, message):
    kube = Kube(tmp_path, _node([], []))
    r = kube.run(**env)
    assert r.returncode == 3 and message in r.stderr and kube.calls() == []


def test_once_from_the_environment(tmp_path):
    kube = Kube(tmp_path, _node([], []))
    r = kube.run((), ONCE="1", GPUDOCTOR_ARGS=f"--snapshot {H200}")
    assert r.returncode == 0 and [c[0] for c in kube.calls()] == ["get", "patch"]


def test_the_loop_checks_again_and_stops_on_sigterm(tmp_path):
    kube = Kube(tmp_path, _node([], []))
    env = kube.env(INTERVAL="0.1", GPUDOCTOR_ARGS=f"--snapshot {H200}")
    proc = subprocess.Popen([str(SCRIPT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    # Three patches: the loop patches the node, then logs; a SIGTERM right after the second patch could
    # come before the second line is written.
    while sum(c[0] == "patch" for c in kube.calls()) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.count("GpuDoctorHealthy=True (NoErrors)") >= 2


def _script_module():
    spec = importlib.util.spec_from_loader(
        "gpudoctor_node_health", SourceFileLoader("gpudoctor_node_health", str(SCRIPT))
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(fail_on: str, *findings: tuple) -> str:
    """A JSON report (docs/json-report.md) with these (rule, severity, message) findings."""
    found = [{"rule": r, "severity": s, "message": m} for r, s, m in findings]
    return json.dumps({"schema": "gpudoctor.report", "summary": {"fail_on": fail_on}, "findings": found})


def test_warnings_are_named_when_healthy_and_count_when_the_check_fails_on_them():
    verdict_from = _script_module().verdict_from
    warning = ("GD-FW-004", "warning", "w")
    healthy = verdict_from(0, _report("error", warning), "")
    assert (healthy.code, healthy.status, healthy.message) == (
        0,
        "True",
        "gpudoctor found no errors; warnings: GD-FW-004",
    )
    failed = verdict_from(
        1, _report("warning", ("GD-X-001", "error", "e"), warning, ("GD-I", "info", "i")), ""
    )
    assert (failed.code, failed.status) == (1, "False")
    assert failed.message == "gpudoctor found: GD-X-001: e | GD-FW-004: w"
    # Exit 1 with nothing at or above fail_on is not a verdict the script understands: could not check.
    odd = verdict_from(1, _report("error", warning), "")
    assert (odd.code, odd.status, odd.message) == (2, "Unknown", "gpudoctor exited 1")
    long = verdict_from(1, _report("error", ("GD-X-001", "error", "x" * 2000)), "")
    assert len(long.message) == 1024 and long.message.endswith("...")


# The manifest


def _docs() -> dict:
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text())}


def test_the_cluster_role_allows_get_and_patch_on_nodes_and_their_status_only():
    docs = _docs()
    assert sorted(docs) == ["ClusterRole", "ClusterRoleBinding", "DaemonSet", "Namespace", "ServiceAccount"]
    assert docs["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes", "nodes/status"], "verbs": ["get", "patch"]}
    ]
    binding, account = docs["ClusterRoleBinding"], docs["ServiceAccount"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": docs["ClusterRole"]["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "gpudoctor"}
    ]
    assert account["metadata"]["namespace"] == docs["Namespace"]["metadata"]["name"] == "gpudoctor"


def test_the_daemonset_runs_the_script_with_its_node_name_and_tolerates_its_taint():
    docs = _docs()
    pod = docs["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]
    assert docs["DaemonSet"]["metadata"]["namespace"] == "gpudoctor"
    assert {"key": TAINT, "operator": "Exists"} in pod["tolerations"]  # every effect
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert (env["TAINT_EFFECT"], env["INTERVAL"]) == ("NoSchedule", "300")
    # The script is where the image of examples/container/Dockerfile puts it.
    assert container["command"] == ["python3", "/usr/local/bin/gpudoctor-node-health"]
    dockerfile = (ROOT / "examples" / "container" / "Dockerfile").read_text()
    copy = "COPY examples/kubernetes/gpudoctor-node-health.py /usr/local/bin/gpudoctor-node-health\n"
    assert copy in dockerfile
    # kubectl: copied by the init container into the volume the container reads it from.
    (init,) = pod["initContainers"]
    assert init["command"] == ["cp", "/bin/kubectl", "/kubectl/kubectl"]
    assert env["KUBECTL"] == "/kubectl/kubectl"
    assert init["volumeMounts"][0]["mountPath"] == container["volumeMounts"][0]["mountPath"] == "/kubectl"
    assert pod["volumes"] == [{"name": "kubectl", "emptyDir": {}}]


def test_the_script_is_an_executable_standard_library_program():
    assert os.access(SCRIPT, os.X_OK)
    text = SCRIPT.read_text()
    assert text.startswith("#!/usr/bin/env python3\n")
    imports = set(re.findall(r"^(?:from|import) (\w+)", text, flags=re.M))
    assert imports <= {"__future__", "json", "os", "signal", "subprocess", "sys", "time", "datetime"}, imports
