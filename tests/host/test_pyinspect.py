"""The inspection program as it runs in other interpreters (gpudoctor/host/pyinspect.py): real interpreters,
real output, read back as the live Host reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.host import pyinspect

from pyenvs import make_venv, other_pythons


def inspected(python: str, environ: dict | None = None, flags: tuple[str, ...] = ()) -> tuple[dict, str]:
    """The inspection of `python` as LiveHost runs it (with `flags` before -I), and its stderr."""
    argv = list(pyinspect.argv(python, environ or {}))
    proc = subprocess.run([argv[0], *flags, *argv[1:]], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = pyinspect.parse_output(proc.stdout)
    assert data is not None, proc.stdout
    return data, proc.stderr


@pytest.mark.parametrize("python", [sys.executable, *other_pythons()])
def test_it_answers_what_platform_would_in_that_interpreter(python):
    """Version, implementation, C library and machine without importing platform: the same answers."""
    data, _ = inspected(python)
    ask = (
        "import json, os, platform; print(json.dumps([platform.python_version(), "
        "platform.python_implementation(), list(platform.libc_ver()), os.uname().machine, "
        "platform.machine()]))"
    )
    expected = json.loads(
        subprocess.run([python, "-c", ask], capture_output=True, text=True, timeout=60).stdout
    )
    assert [
        data["version"],
        data["implementation"],
        data["libc"],
        data["machine"],
        data["machine"],
    ] == expected
    assert data["machine"]  # x86_64, aarch64: never empty on a POSIX system


def test_in_process_it_answers_this_interpreters_machine():
    """When the target is gpudoctor's own interpreter, inspect() runs in-process: the same key."""
    assert pyinspect.inspect()["machine"] == os.uname().machine != ""


def test_the_child_imports_nothing_but_its_start_up(tmp_path):
    """json, typing, platform and re cost the child 7-10 ms each: a clean venv's inspection imports none."""
    venv = make_venv(sys.executable, tmp_path / "v")
    data, stderr = inspected(str(venv), {"PYTHONPATH": "/nowhere"}, flags=("-X", "importtime"))
    imported = {line.split("|")[2].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    assert "os" in imported and data["path"][0] == "/nowhere"
    assert not imported & {"json", "typing", "platform", "re", "enum", "ast"}


def test_values_that_are_not_plain_text_come_back_exactly(tmp_path):
    """Non-ASCII and undecodable (surrogate-escaped) paths survive ascii() and literal_eval."""
    odd = tmp_path / "dïr-\udcff"
    odd.mkdir()
    (odd / "nvidia_cudnn_cu12-9.1.0.70.dist-info").mkdir()
    data, _ = inspected(sys.executable, {"PYTHONPATH": str(odd)})
    assert data["path"][0] == str(odd)
    (dist,) = [d for d in data["distributions"] if d["name"] == "nvidia-cudnn-cu12"]
    assert dist["location"] == str(odd) and dist["version"] == "9.1.0.70"


@pytest.mark.parametrize(
    "line",
    [
        "__import__('os').system('touch /tmp/gd-pwned')",
        "[1, 2]",
        "{'a': 1",
        "{'a': (lambda: 1)}",
        "{" * 200_000,
    ],
)
def test_an_answer_that_is_not_a_literal_dict_is_no_answer(line):
    assert pyinspect.parse_output(pyinspect.MARKER + line + "\n") is None
    assert not Path("/tmp/gd-pwned").exists()


def test_the_last_marker_line_is_the_answer():
    out = (
        f"{pyinspect.MARKER}{{'format': 0}}\nnoise from a sitecustomize\n{pyinspect.MARKER}{{'format': 1}}\n"
    )
    assert pyinspect.parse_output(out) == {"format": 1}


def test_shared_libraries_of_a_record():
    record = (
        "nvidia/cudnn/lib/libcudnn.so.9,sha256=AbCso_-x,123\n"
        "nvidia/cudnn/include/cudnn.h,sha256=x,1\r\n"
        '"nvidia/nccl/lib/libnccl,2.so.2",sha256=y,2\n'
        "nvidia/cublas/lib/LIBCUBLAS.SO.12,,\n"
        "İstanbul/libcudart.so.12,sha256=z,3\n"
        "nvidia/other/libfoo.so,sha256=w,4"
    )
    assert pyinspect.shared_libraries(record) == [
        "nvidia/cudnn/lib/libcudnn.so.9",
        "nvidia/nccl/lib/libnccl,2.so.2",
        "nvidia/cublas/lib/LIBCUBLAS.SO.12",
        "İstanbul/libcudart.so.12",
    ]
    many = "".join(f"nvidia/x/libcuda{i}.so,h,1\n" for i in range(pyinspect.MAX_FILES_PER_DIST + 5))
    assert len(pyinspect.shared_libraries(many)) == pyinspect.MAX_FILES_PER_DIST
