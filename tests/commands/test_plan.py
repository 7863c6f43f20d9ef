"""`gpudoctor plan` and `check --plan` as users run them. The H200 capture's only actionable finding is
its CPU-only onnxruntime. Regenerate the golden file after an intended change with:

GPUDOCTOR_UPDATE_GOLDEN=1 python -m pytest tests/commands/test_plan.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "golden" / "h200-plan.txt"
SNAPSHOT = "tests/fixtures/h200-driver580-snapshot"


def gd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpudoctor", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, NO_COLOR="1"),
        timeout=60,
    )


def test_h200_plan_matches_the_golden_file():
    r = gd("plan", "--snapshot", SNAPSHOT)
    assert (r.returncode, r.stderr) == (0, "")
    if os.environ.get("GPUDOCTOR_UPDATE_GOLDEN"):
        GOLDEN.write_text(r.stdout)
    assert r.stdout == GOLDEN.read_text()


def test_h200_plan_as_json():
    r = gd("plan", "--snapshot", SNAPSHOT, "--format", "json")
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert (data["schema"], data["schema_version"]) == ("gpudoctor.plan", 1)
    assert data["python"] == {"executable": "/opt/torch/.venv/bin/python3", "installer": "pip"}
    assert [(s["number"], s["kind"], s["risk"], s["command"], s["rules"]) for s in data["steps"]] == [
        (
            1,
            "pip",
            "python-env",
            "/opt/torch/.venv/bin/python3 -m pip uninstall -y onnxruntime",
            ["GD-FW-004"],
        ),
        (
            2,
            "pip",
            "python-env",
            "/opt/torch/.venv/bin/python3 -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.30.0'",
            ["GD-FW-004"],
        ),
    ]
    assert data["summary"] == {"system": 0, "python-env": 2, "reboot": 0, "steps": 2}
    assert data["notes"] == ["no fix steps, so not in the plan: GD-CUDNN-002 (info)"]


def test_check_plan_prints_the_report_then_the_plan():
    r = gd("check", "--snapshot", SNAPSHOT, "--plan")
    report = gd("check", "--snapshot", SNAPSHOT)
    assert r.returncode == report.returncode == 0
    assert r.stdout == report.stdout + "\n" + GOLDEN.read_text()


def test_check_plan_is_text_only():
    r = gd("check", "--snapshot", SNAPSHOT, "--plan", "--format", "json")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (
        "gpudoctor: --plan goes with --format text; `gpudoctor plan --format json` prints the plan as JSON\n"
    )
