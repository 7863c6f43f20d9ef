"""gpudoctor.crashlog: a crash log is redacted by default. It used to keep the whole command line (a
`--rules https://user:pass@host/...?token=...` with its secrets); `--no-redact` keeps them."""

from __future__ import annotations

import os
import sys

from gpudoctor.crashlog import crash_report, write_crash_log

URL = "https://bob:hunter2@rules.example.com/pack.yaml?token=abc123&v=2&api_key=k9#sha256=ff00"


def test_crash_log_redacts_the_command_line_and_the_error():
    error = RuntimeError(f"cannot fetch {URL}")
    argv = ["gpudoctor", "check", "--rules", URL]
    text = crash_report(error, argv)
    for secret in ("hunter2", "bob:", "abc123", "k9"):
        assert secret not in text
    assert (
        "command: gpudoctor check --rules https://<redacted>@rules.example.com/pack.yaml?token=<redacted>"
        in text
    )
    assert "#sha256=ff00" in text  # the pin is no secret: it says which pack
    assert "hunter2" in crash_report(error, argv, redact=False)


def test_crash_log_file_written_on_a_crash_is_redacted(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["gpudoctor", "check", "--rules", URL])
    path = write_crash_log(RuntimeError("simulated bug"))
    try:
        text = open(path, encoding="utf-8").read()
        assert "hunter2" not in text and "abc123" not in text and "simulated bug" in text
    finally:
        os.unlink(path)
    monkeypatch.setattr(sys, "argv", ["gpudoctor", "check", "--no-redact", "--rules", URL])
    path = write_crash_log(RuntimeError("simulated bug"))
    try:
        assert "hunter2" in open(path, encoding="utf-8").read()
    finally:
        os.unlink(path)
