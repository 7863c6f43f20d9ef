"""The option table (gpudoctor/options.py): one deadline for every command, `--timeout` capped, never a
crash, and a value that is no deadline refused as a usage error (issue 9)."""

from __future__ import annotations

import pytest

from gpudoctor.options import MAX_TIMEOUT, timeout_seconds

from conftest import H200, run_cli


@pytest.mark.parametrize("value", ["inf", "1e10", "99999999999999999999"])
def test_a_huge_timeout_is_capped_not_a_crash(value):
    proc = run_cli("check", "--snapshot", str(H200), "--timeout", value)
    assert proc.returncode in (0, 1), proc.stderr
    assert timeout_seconds(value) == MAX_TIMEOUT


@pytest.mark.parametrize("value", ["nan", "0", "-1", "-inf", "soon"])
def test_a_timeout_that_is_no_deadline_is_a_usage_error(value):
    proc = run_cli("check", "--snapshot", str(H200), "--timeout", value)
    assert proc.returncode == 2
    assert "--timeout" in proc.stderr


def test_plan_and_facts_take_the_same_timeout():
    assert run_cli("plan", "--snapshot", str(H200), "--timeout", "inf").returncode == 0
    assert run_cli("facts", "--snapshot", str(H200), "--timeout", "nan").returncode == 2
