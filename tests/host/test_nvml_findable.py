"""pynvml is imported only when the loader can find libnvidia-ml.so.1 (host/nvml_live.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpudoctor.host.nvml_live import NVML_LIBRARY, nvml_library_findable

from conftest import ROOT


def test_found_in_ld_library_path(tmp_path):
    (tmp_path / NVML_LIBRARY).write_bytes(b"")
    assert nvml_library_findable(f"/nowhere:{tmp_path}", cache=str(tmp_path / "no-cache"))


def test_found_in_the_loader_cache(tmp_path):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(
        b"glibc-ld.so.cache1.1\x00libnvidia-ml.so.1\x00/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
    )
    assert nvml_library_findable("", cache=str(cache))


def test_absent_everywhere(tmp_path):
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(b"glibc-ld.so.cache1.1\x00libc.so.6\x00/lib/x86_64-linux-gnu/libc.so.6")
    trusted = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")
    found_in_trusted = any((Path(d) / NVML_LIBRARY).exists() for d in trusted)
    assert nvml_library_findable(str(tmp_path), cache=str(cache)) is found_in_trusted


def test_a_check_without_the_library_never_imports_pynvml(tmp_path):
    """On this machine (no NVIDIA driver) the NVML status is the same as pynvml would say, without it."""
    if nvml_library_findable("", "/etc/ld.so.cache"):
        # A machine with the driver: the library is found, and pynvml is imported as it must be.
        return
    prog = (
        "import sys, json; from gpudoctor.host.live import LiveHost\n"
        "from gpudoctor.host.base import NvmlError\n"
        "try:\n    LiveHost().nvml('nvmlSystemGetDriverVersion')\n"
        "except NvmlError as e:\n    print(json.dumps([e.name, 'pynvml' in sys.modules]))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "LD_LIBRARY_PATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.strip() == '["NVMLError_LibraryNotFound", false]', r.stderr
