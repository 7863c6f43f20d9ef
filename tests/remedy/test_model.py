"""remedy.model: a fix run's outcome decides its exit code, as docs/fix.md's "Exit codes" table says (0: every
step worked, nothing to do, or a dry run; 1: a step declined, failed or rolled back; 130: interrupted)."""

from __future__ import annotations

import pytest

from gpudoctor.remedy.model import INTERRUPTED, Options, RunResult

EXIT = {
    "nothing to do": 0,
    "dry run": 0,
    "fixed": 0,
    "declined": 1,
    "partly fixed": 1,
    "failed": 1,
    "rolled back": 1,
    "rollback incomplete": 1,
    "interrupted": 130,
}


@pytest.mark.parametrize("outcome", sorted(EXIT))
def test_each_outcome_has_its_exit_code(outcome):
    assert RunResult(steps=[], outcome=outcome).exit_code == EXIT[outcome]


def test_interrupted_is_the_shells_code_for_sigint():
    assert INTERRUPTED == 128 + 2


def test_a_fix_runs_no_system_step_unless_asked():
    assert Options().allow_system is False
