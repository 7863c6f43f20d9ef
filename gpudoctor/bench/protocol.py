"""The bench worker's events (bench/worker.py), read back: pure functions from one line of text to data.

A line that is not an event the worker writes is a ProtocolError naming what is wrong; the harness ends
the run on it, since a worker that says something else cannot be trusted for the rest.
"""

from __future__ import annotations

import json
from typing import Any

from .model import FAILED, OK, SKIPPED, TESTS

EVENTS = ("hello", "none", "start", "result", "done", "error")
MAX_LINE = 1 << 20


class ProtocolError(ValueError):
    """A line the worker should not have written."""


def parse_event(line: str) -> dict[str, Any]:
    """One event as a dict with its `event` key; the fields each event needs are checked."""
    if len(line) > MAX_LINE:
        raise ProtocolError(f"a line of {len(line)} characters")
    try:
        data = json.loads(line)
    except ValueError as e:
        raise ProtocolError(f"not JSON: {line[:80]!r} ({e})") from None
    if not isinstance(data, dict) or data.get("event") not in EVENTS:
        raise ProtocolError(f"not a bench event: {line[:80]!r}")
    check = _CHECKS.get(data["event"])
    if check is not None:
        check(data)
    return data


def _need(data: dict, key: str, kind: Any, optional: bool = False) -> None:
    value = data.get(key)
    if value is None and optional:
        return
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProtocolError(f"{data['event']} event: {key} is {value!r}")


def _hello(data: dict) -> None:
    for key in ("backend", "version", "python"):
        _need(data, key, str)
    _need(data, "devices", list)
    for d in data["devices"]:
        if not isinstance(d, dict):
            raise ProtocolError(f"hello event: a device is {d!r}")
        _need(d | {"event": "hello"}, "index", int)
        _need(d | {"event": "hello"}, "name", str)
        _need(d | {"event": "hello"}, "uuid", str, optional=True)
        _need(d | {"event": "hello"}, "cc", str)
    _need(data, "tests", list)
    for run in data["tests"]:
        _run(data, run)


def _run(data: dict, run: Any) -> None:
    if not (isinstance(run, list) and len(run) == 3 and run[0] in TESTS and isinstance(run[1], int)):
        raise ProtocolError(f"{data['event']} event: a test is {run!r}")
    if run[2] is not None and not isinstance(run[2], int):
        raise ProtocolError(f"{data['event']} event: a test is {run!r}")


def _start(data: dict) -> None:
    _run(data, [data.get("test"), data.get("gpu"), data.get("peer")])


def _result(data: dict) -> None:
    _start(data)
    if data.get("status") not in (OK, FAILED, SKIPPED):
        raise ProtocolError(f"result event: status is {data.get('status')!r}")
    if data["status"] == OK:
        value = data.get("value")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < 1e9:
            raise ProtocolError(f"result event: value is {value!r}")
    _need(data, "detail", str, optional=True)
    _need(data, "gpus", int, optional=True)
    _need(data, "peer_access", bool, optional=True)


def _reason(data: dict) -> None:
    _need(data, "reason", str)


_CHECKS = {"hello": _hello, "start": _start, "result": _result, "none": _reason, "error": _reason}
