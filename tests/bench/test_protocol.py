"""The worker's events read back (bench/protocol.py): every event the worker writes, and anything else as
a ProtocolError that says what was wrong."""

from __future__ import annotations

import json

import pytest

from gpudoctor.bench.protocol import ProtocolError, parse_event


def line(**data) -> str:
    return json.dumps(data)


def test_events_the_worker_writes_are_read():
    hello = line(
        event="hello",
        format=1,
        backend="torch",
        version="2.13.0+cu128",
        python="3.12.3",
        devices=[{"index": 0, "name": "NVIDIA H200", "uuid": None, "cc": "9.0"}],
        tests=[["matmul_bf16", 0, None], ["p2p", 0, 1]],
    )
    assert parse_event(hello)["devices"][0]["name"] == "NVIDIA H200"
    result = line(
        event="result", test="p2p", gpu=0, peer=1, status="ok", value=390.5, detail="", peer_access=True
    )
    assert parse_event(result)["value"] == 390.5
    assert parse_event(line(event="none", reason="torch is a CPU-only build"))["reason"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Traceback (most recent call last):", "not JSON"),
        ("[1, 2]", "not a bench event"),
        (line(event="launch"), "not a bench event"),
        (line(event="start", test="matmul_int4", gpu=0, peer=None), "a test is"),
        (line(event="start", test="d2d", gpu="0", peer=None), "a test is"),
        (line(event="result", test="d2d", gpu=0, peer=None, status="great"), "status is 'great'"),
        (line(event="result", test="d2d", gpu=0, peer=None, status="ok", value=True), "value is True"),
        (line(event="result", test="d2d", gpu=0, peer=None, status="ok", value=-3.0), "value is -3.0"),
        (line(event="result", test="d2d", gpu=0, peer=None, status="ok", value=1e12), "value is"),
        (line(event="none"), "reason is None"),
        (line(event="hello", backend="torch", version="2", python="3", devices=[7], tests=[]), "a device"),
    ],
)
def test_anything_else_is_a_protocol_error(text, problem):
    with pytest.raises(ProtocolError, match=problem):
        parse_event(text)
