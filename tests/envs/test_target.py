"""check --all-envs' Host: the machine from the Host it wraps, each environment's Python from its files."""

from __future__ import annotations

import pytest

from gpudoctor.envs.find import Environment
from gpudoctor.envs.target import CHOSEN_BY, EnvsHost, key
from gpudoctor.host.base import NOT_FOUND, HostError

DUMP = {"executable": "/h/.virtualenvs/ml/bin/python", "version": "3.12.3", "distributions": []}
ML = Environment("ml", "venv", "/h/.virtualenvs/ml", "/h/.virtualenvs/ml/bin/python", ("~/.virtualenvs",),
                 "3.12.3", "", DUMP)  # fmt: skip
GONE = Environment("old", "conda", "/h/miniconda3/envs/old", "", ("~/.conda/environments.txt",), "",
                   "no such directory (named by ~/.conda/environments.txt)", None)  # fmt: skip


class Machine:
    kind = "live"

    def read(self, path: str) -> str:
        return f"read {path}"

    def python(self, interpreter=None) -> dict:
        raise AssertionError("no interpreter is inspected")


def test_targets_are_every_environment_and_answers_come_from_files():
    host = EnvsHost(Machine(), [ML, GONE])
    assert host.python_targets() == [(ML.interpreter, CHOSEN_BY), (GONE.prefix, CHOSEN_BY)]
    assert (key(ML), key(GONE)) == (ML.interpreter, GONE.prefix)
    assert host.target_python() == ML.interpreter
    assert host.python(ML.interpreter) is DUMP
    assert host.python() is DUMP
    assert host.read("/proc/x") == "read /proc/x"  # the machine: the wrapped Host's
    assert host.kind == "live"
    host.inspect_python_early()  # starts nothing


def test_an_environment_with_nothing_to_read_says_why():
    host = EnvsHost(Machine(), [GONE])
    with pytest.raises(HostError) as e:
        host.python(GONE.prefix)
    assert (e.value.reason, e.value.detail) == (NOT_FOUND, GONE.problem)
