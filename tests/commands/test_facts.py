"""`gpudoctor facts`: the facts tree, redacted by default (hostname and GPU UUIDs), through a real process
on the fake NVML library (tests/nvmlrig.py)."""

from __future__ import annotations

import socket

from nvmlrig import gpudoctor


def test_facts_command_redacts_hostname_and_gpu_uuids_by_default(fake_lib):
    redacted = gpudoctor(fake_lib, "healthy-h100-8", "facts", "--format", "json").json()
    raw = gpudoctor(fake_lib, "healthy-h100-8", "facts", "--format", "json", "--no-redact").json()
    uuids = [g["uuid"] for g in redacted["gpus"]]
    assert uuids == [f"GPU-00000000-0000-0000-0000-{i:012d}" for i in range(8)]
    assert [g["uuid"] for g in raw["gpus"]] == [f"GPU-fa4e0000-0000-4000-8000-{i:012d}" for i in range(8)]
    assert redacted["host"]["hostname"] == "redacted-host"
    assert raw["host"]["hostname"] == socket.gethostname()
    text = gpudoctor(fake_lib, "healthy-h100-8", "facts").stdout
    assert "GPU-fa4e0000" not in text and "'redacted-host'" in text
