#!/usr/bin/env python3
"""Kubernetes node health from gpudoctor: a node condition, and a taint while the GPU host has errors.

Runs in the DaemonSet of examples/kubernetes/gpudoctor-node-health.yaml, one pod per GPU node. Every
INTERVAL seconds it runs `gpudoctor check --profile preflight --no-python --format json` and sets the
node's condition GpuDoctorHealthy:

  check exit 0 (no errors)          GpuDoctorHealthy=True,    reason NoErrors;  the taint is removed
                                    (unless the pod saw no GPU at all, GD-HOST-001: could not check)
  check exit 1 (errors)             GpuDoctorHealthy=False,   reason ErrorsFound, message: each failing
                                    rule's id and message;    the taint gpudoctor.io/unhealthy is added
  anything else (could not check)   GpuDoctorHealthy=Unknown, reason CouldNotCheck, message: why;
                                    the taint is left as it is (neither added nor removed)

"Could not check" never clears the taint: a node whose driver hangs is not shown healthy because
gpudoctor could not finish. It is not tainted for it either: a broken gpudoctor image must not taint
every GPU node of the cluster (examples/slurm/gpudoctor-healthcheck.sh decides the same).

Only this condition type and this taint (key and effect) are ever written: the condition goes in a
strategic merge patch of the node's status, whose conditions list merges by `type` (k8s.io/api
core/v1 NodeStatus: `Conditions []NodeCondition ... patchStrategy:"merge" patchMergeKey:"type"`), so
every other condition is left as it is; the taint is added and removed with `kubectl taint`, which
reads the node's taints and writes them back with only that one added or removed.

kubectl calls (the node's name comes from the downward API, spec.nodeName -> NODE_NAME):
  kubectl get node NODE -o json          read the condition's last transition and the taints
  kubectl patch node NODE --subresource=status --type=strategic -p '{"status":{"conditions":[...]}}'
      (kubectl patch: "--subresource: If specified, patch will operate on the subresource of the
      requested object. Must be one of [status scale]"; kubernetes.io kubectl_patch reference)
  kubectl taint nodes NODE gpudoctor.io/unhealthy:NoSchedule     ("Add to node 'foo' a taint with key
      'bar' and no value: kubectl taint nodes foo bar:NoSchedule"; kubernetes.io kubectl_taint)
  kubectl taint nodes NODE gpudoctor.io/unhealthy:NoSchedule-    ("Remove from node 'foo' the taint with
      key 'dedicated' and effect 'NoSchedule' if one exists: kubectl taint nodes foo dedicated:NoSchedule-")
These need get and patch on nodes and nodes/status, nothing else (the ClusterRole of the manifest).

Settings, from the environment:
  NODE_NAME       the node (required; the manifest sets it from spec.nodeName)
  GPUDOCTOR       the gpudoctor command (default: gpudoctor)
  GPUDOCTOR_ARGS  more options for the check, split on spaces (e.g. "--policy /etc/gpudoctor/policy.toml")
  KUBECTL         the kubectl command (default: kubectl)
  INTERVAL        seconds between checks (default: 300)
  TAINT_EFFECT    NoSchedule (default), PreferNoSchedule, NoExecute, or none (the condition only)
  CHECK_TIMEOUT   seconds gpudoctor may take before the check counts as could-not-check (default: 120)
  ONCE=1          (or --once) one check, then exit with its status

Exit status with --once: 0 healthy, 1 errors, 2 could not check, 3 the node could not be updated
(kubectl failed, or NODE_NAME is not set). Without --once it runs until stopped (SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone

CONDITION = "GpuDoctorHealthy"
TAINT_KEY = "gpudoctor.io/unhealthy"
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
KUBECTL_TIMEOUT_S = 60
MESSAGE_MAX = 1024
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
PROG = "gpudoctor-node-health"
NO_GPU_RULE = "GD-HOST-001"  # "No NVIDIA GPU or driver found" (info): fine on a laptop, not here


class Verdict:
    """One check's outcome: the condition's status, reason and message, and the exit status."""

    def __init__(self, code: int, status: str, reason: str, message: str) -> None:
        self.code, self.status, self.reason = code, status, reason
        self.message = message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 3] + "..."


def could_not_check(message: str) -> Verdict:
    return Verdict(2, "Unknown", "CouldNotCheck", message)


def verdict_from(returncode: int, stdout: str, stderr: str) -> Verdict:
    """The verdict of one `gpudoctor check --format json` run: its exit status and its JSON report."""
    last_err = f": {stderr.strip().splitlines()[-1]}" if stderr.strip() else ""
    try:
        report = json.loads(stdout)
    except ValueError:
        report = None
    if not isinstance(report, dict) or not isinstance(report.get("summary"), dict):
        return could_not_check(f"gpudoctor exited {returncode} without a report{last_err}")
    if returncode == 0:
        blind = [f for f in report.get("findings", []) if f.get("rule") == NO_GPU_RULE]
        if blind:
            # This DaemonSet runs on GPU nodes only: a pod that sees no GPU (the NVIDIA runtime class
            # missing, the driver not mounted) has not checked the node, and the node is not fine.
            return could_not_check(f"gpudoctor saw no NVIDIA GPU from this pod: {blind[0].get('message')}")
        warnings = [f["rule"] for f in report.get("findings", []) if f.get("severity") == "warning"]
        extra = f"; warnings: {', '.join(warnings)}" if warnings else ""
        return Verdict(0, "True", "NoErrors", f"gpudoctor found no errors{extra}")
    if returncode == 1:
        floor = SEVERITY_RANK.get(report["summary"].get("fail_on"), SEVERITY_RANK["error"])
        failing = [f for f in report.get("findings", []) if SEVERITY_RANK.get(f.get("severity"), -1) >= floor]
        if failing:
            details = " | ".join(f"{f['rule']}: {f['message']}" for f in failing)
            return Verdict(1, "False", "ErrorsFound", f"gpudoctor found: {details}")
    if returncode == 2:
        unknown = [
            f"{r['id']} ({'; '.join(f'{k}: {v}' for k, v in (r.get('unknown_facts') or {}).items())})"
            for r in report.get("rules", [])
            if r.get("status") == "unknown" and r.get("severity") == "error"
        ]
        timed_out = report.get("timed_out") or []
        # the cause first: the message is cut at MESSAGE_MAX, and a probe that timed out leaves many rules
        parts = [f"timed out: {', '.join(timed_out)}"] if timed_out else []
        parts += [f"could not evaluate {', '.join(unknown)}"] if unknown else []
        return could_not_check("gpudoctor " + ("; ".join(parts) or "could not check this node"))
    return could_not_check(f"gpudoctor exited {returncode}{last_err}")


def run_check(env: dict) -> Verdict:
    argv = [env.get("GPUDOCTOR", "gpudoctor"), "check", "--profile", "preflight", "--no-python"]
    argv += ["--format", "json", *env.get("GPUDOCTOR_ARGS", "").split()]
    timeout = _seconds(env, "CHECK_TIMEOUT", 120)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return could_not_check(f"gpudoctor did not finish in {timeout:g} s")
    except OSError as exc:
        return could_not_check(f"gpudoctor could not run: {exc}")
    return verdict_from(proc.returncode, proc.stdout, proc.stderr)


def kubectl(env: dict, *args: str) -> str:
    """Run kubectl; its stdout, or RuntimeError with what went wrong."""
    argv = [env.get("KUBECTL", "kubectl"), *args]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"kubectl {args[0]} did not finish in {KUBECTL_TIMEOUT_S} s") from None
    except OSError as exc:
        raise RuntimeError(f"kubectl could not run: {exc}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl {args[0]} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def condition_patch(verdict: Verdict, node: dict, now: str) -> dict:
    """The status patch that sets this condition alone; the transition time moves only with the status."""
    old = next(
        (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == CONDITION), None
    )
    since = old.get("lastTransitionTime") if old and old.get("status") == verdict.status else None
    condition = {
        "type": CONDITION,
        "status": verdict.status,
        "reason": verdict.reason,
        "message": verdict.message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": since or now,
    }
    return {"status": {"conditions": [condition]}}


def has_taint(node: dict, effect: str) -> bool:
    taints = (node.get("spec") or {}).get("taints") or []
    return any(t.get("key") == TAINT_KEY and t.get("effect") == effect for t in taints)


def update_node(env: dict, name: str, verdict: Verdict, effect: str) -> str:
    """Set the condition, and add or remove the taint; what was done to the taint, in words."""
    node = json.loads(kubectl(env, "get", "node", name, "-o", "json"))
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = json.dumps(condition_patch(verdict, node, now), separators=(",", ":"))
    kubectl(env, "patch", "node", name, "--subresource=status", "--type=strategic", "-p", body)
    if effect == "none":
        return "no taint (TAINT_EFFECT=none)"
    tainted = has_taint(node, effect)
    if verdict.status == "False" and not tainted:
        kubectl(env, "taint", "nodes", name, f"{TAINT_KEY}:{effect}")
        return f"tainted {TAINT_KEY}:{effect}"
    if verdict.status == "True" and tainted:
        kubectl(env, "taint", "nodes", name, f"{TAINT_KEY}:{effect}-")
        return f"removed the taint {TAINT_KEY}:{effect}"
    return "taint " + ("kept" if tainted else "absent")


def once(env: dict, name: str, effect: str) -> int:
    verdict = run_check(env)
    try:
        done = update_node(env, name, verdict, effect)
    except (RuntimeError, ValueError) as exc:
        print(f"{PROG}: could not update node {name}: {exc}", file=sys.stderr, flush=True)
        return 3
    line = f"{PROG}: node {name}: {CONDITION}={verdict.status} ({verdict.reason}): {verdict.message}; {done}"
    print(line, file=sys.stderr, flush=True)
    return verdict.code


def _stop(signum: int, _frame: object) -> None:
    # As PID 1 of its container, a signal without a handler is ignored: stop on SIGTERM at once.
    sys.exit(128 + signum)


def _seconds(env: dict, key: str, default: float) -> float:
    try:
        value = float(env.get(key, default))
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{key} must be a number of seconds above 0, not {env.get(key)!r}")
    return value


def main(argv: list) -> int:
    env = dict(os.environ)
    name = env.get("NODE_NAME", "")
    effect = env.get("TAINT_EFFECT", "NoSchedule")
    try:
        if not name:
            raise ValueError("NODE_NAME is not set")
        if effect not in (*EFFECTS, "none"):
            raise ValueError(f"TAINT_EFFECT must be one of {', '.join(EFFECTS)} or none, not {effect!r}")
        interval = _seconds(env, "INTERVAL", 300)
        _seconds(env, "CHECK_TIMEOUT", 120)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 3
    if "--once" in argv or env.get("ONCE") == "1":
        return once(env, name, effect)
    signal.signal(signal.SIGTERM, _stop)
    while True:
        once(env, name, effect)
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
