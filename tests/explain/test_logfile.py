"""A log read as a stream gives the lines str.splitlines() gives the whole text, in bounded pieces."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpudoctor.explain import logfile

from conftest import H200, ROOT, run_cli


def logfile_lines(f, size, progress):
    return [line for block in logfile._blocks(f, size, progress) for line in block]


CORPUS = Path(__file__).parent / "corpus"
# Real messages (each case cites its thread), joined with the line ends logs have: tqdm's carriage
# returns, Windows line ends, form feeds, U+2028, a stray byte that is not UTF-8.
MESSAGES = [
    c["message"] for f in sorted(CORPUS.glob("*.yaml")) for c in yaml.safe_load(f.read_text())["cases"]
]
ENDS = [b"\n", b"\r\n", b"\r", b"\n\n", b"\x0c", b"\r\r\n", "\u2028".encode(), b"\xff\n", b"\xc2\x85"]


def test_the_lines_are_those_of_splitlines_whatever_the_chunk_size(monkeypatch):
    rng = random.Random(24)
    monkeypatch.setattr(logfile, "MAX_LINE", 1 << 30)
    for _ in range(3000):
        pieces = [rng.choice(MESSAGES).encode()[: rng.randint(0, 300)] + rng.choice(ENDS) for _ in range(6)]
        data = b"".join(pieces)
        if rng.random() < 0.3:
            data = data.rstrip(b"\n")
        monkeypatch.setattr(logfile, "CHUNK", rng.randint(1, 64))
        assert (
            list(logfile_lines(io.BytesIO(data), None, None)) == data.decode("utf-8", "replace").splitlines()
        )


def test_a_line_without_end_is_cut_and_the_next_line_is_read(monkeypatch):
    monkeypatch.setattr(logfile, "CHUNK", 7)
    monkeypatch.setattr(logfile, "MAX_LINE", 20)
    short = MESSAGES[0][:15]
    data = b"\0" * 100 + b"\n" + short.encode() + b"\r\n" + MESSAGES[0].encode()
    assert list(logfile_lines(io.BytesIO(data), None, None)) == ["\0" * 20, short, MESSAGES[0][:20]]


def test_a_file_is_read_from_where_its_last_bytes_begin(tmp_path, monkeypatch):
    monkeypatch.setattr(logfile, "MAX_BYTES", 11)
    log = tmp_path / "job.log"
    log.write_bytes(b"first line\nsecond\nlast one\n")
    assert [line for block in logfile.blocks(str(log)) for line in block] == ["d", "last one"]


def test_a_stream_past_the_bound_is_an_error(monkeypatch):
    monkeypatch.setattr(logfile, "MAX_BYTES", 10)
    r, w = os.pipe()
    os.write(w, b"0123456789abc\n")
    os.close(w)
    with os.fdopen(r, "rb") as f, pytest.raises(OSError, match="larger than"):
        list(logfile_lines(f, None, None))


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_is_shown_on_a_terminal_and_cleared(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("\n".join(MESSAGES[:50]) + "\n")
    primary, secondary = os.openpty()
    env = {"NO_COLOR": "1", "PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"]}
    r = subprocess.run(
        [sys.executable, "-m", "gpudoctor", "explain", "--log", str(log), "--snapshot", "/nonexistent"],
        stdout=subprocess.PIPE,
        stderr=secondary,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    os.close(secondary)
    shown = os.read(primary, 65536).decode()
    os.close(primary)
    assert r.returncode == 2  # the snapshot is missing: the log was read first
    assert f"\r\x1b[Kreading {log}: 100%\r\x1b[K" in shown


def test_no_progress_where_stderr_is_no_terminal(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("\n".join(MESSAGES[:50]) + "\n")
    r = run_cli("explain", "--log", str(log), "--snapshot", str(H200))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "reading" not in r.stdout and "\x1b" not in r.stdout
