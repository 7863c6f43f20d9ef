"""Markdown summaries (and $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpudoctor.pipeline.verdict import decide
from gpudoctor.report import markdown

from .reportkit import result_of, rules_of
from conftest import H200

ROOT = Path(__file__).parents[2]
RULE = (
    "rules:\n  - id: T-X-{n}\n    title: t\n    severity: {sev}\n    category: gpu\n"
    "    when: {{fact: gpus.count, ge: 0}}\n    message: '{msg}'\n    why: w\n"
    "    fix:\n      - kind: command\n        argv: [nvidia-smi, -q, 'a b']\n"
)


def test_cells_and_code_spans_stay_in_their_cell():
    assert markdown.cell("a|b\nc <d> & *e*") == "a\\|b<br>c &lt;d&gt; &amp; \\*e\\*"
    assert markdown.code("pip install x") == "`pip install x`"
    assert markdown.code("echo `id` | x") == "``echo `id` \\| x``"
    assert markdown.code("`x`") == "`` `x` ``"


def test_findings_ignored_and_unknown_sections():
    rules = rules_of(
        RULE.format(n="001", sev="error", msg="bad | pipe") + RULE.format(n="002", sev="info", msg="x")[7:]
    )
    rules += rules_of(
        "rules:\n  - id: T-X-003\n    title: t\n    severity: error\n    category: gpu\n"
        "    when: {fact: 'gpus[0].name', eq: x}\n    message: m\n    why: w\n"
    )
    result = result_of({"gpus.count": 1}, rules, ignore={"T-X-002": "known"})
    text = markdown.render(result, decide(result, "error"))
    assert text.startswith("## ❌ gpudoctor: 1 error(s), 0 warning(s), 0 info · exit 1 (--fail-on error)\n")
    assert "| **error** | T-X-001 | GPUs | bad \\| pipe | `nvidia-smi -q 'a b'` |\n" in text
    assert (
        "### Ignored by policy\n\n| rule | finding | reason |\n| --- | --- | --- |\n| T-X-002 | x | known |\n"
        in text
    )
    assert "| T-X-003 | `gpus[0].name` (not collected) |\n" in text


def test_cli_appends_to_github_step_summary(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT), GITHUB_STEP_SUMMARY=str(summary))
    r = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "check", "--snapshot", str(H200), "--format", "markdown"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0 and r.stdout.startswith("## ⚠️ gpudoctor: 0 error(s), 1 warning(s), 1 info")
    assert summary.read_text() == "earlier step\n" + r.stdout
