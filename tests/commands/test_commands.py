"""The commands package (commands/__init__.py): one error channel, commands imported only when run, and
each command returning its exit code."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT, run_cli


def test_one_error_channel_and_commands_imported_on_demand():
    code = (
        "import sys, gpudoctor.entry\n"
        "sys.argv = ['gpudoctor', '--version']\n"
        "try:\n    gpudoctor.entry.main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('gpudoctor.commands.')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    assert out.strip().endswith("[]")
    proc = run_cli("rules", "show", "GD-NOPE-999")
    assert proc.returncode == 2 and proc.stderr.startswith("gpudoctor: no rule 'GD-NOPE-999'")


def test_commands_return_exit_codes():
    from gpudoctor.commands import explain

    outcome = explain.run("CUDA driver version is insufficient for CUDA runtime version")
    assert outcome.code == 0
