"""The CUDA extension scan (gpudoctor/host/cuda_binaries.py): its ELF and fatbin reading on real compiled
extensions, and the child program run by a real interpreter over a real environment.

The .so files are real: tests/fixtures/cuda_ext/build.sh built them from add_one.cu with NVIDIA's nvcc 13.5
(`cuobjdump --list-elf` would name the same architectures). The non-CUDA ELF file is this machine's own libm.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.host import cuda_binaries
from gpudoctor.host.base import HostError
from gpudoctor.host.cuda_binaries import Unreadable, fatbin_archs
from gpudoctor.host.live import LiveHost
from gpudoctor.host.snapshot import RecordingHost, SnapshotHost
from gpudoctor.probes.runtime import extension_facts

from pyenvs import make_venv

EXT = Path(__file__).parents[1] / "fixtures" / "cuda_ext"
SM80 = EXT / "add_one_sm80.so"
SM80_SM90_PTX90 = EXT / "add_one_sm80_sm90_ptx90.so"
ARCH_SPECIFIC = EXT / "add_one_sm90a_sm100a_sm100f_ptx120.so"


def _libm() -> str:
    """A shared library of this machine with no GPU code: the C library's libm, wherever it lives."""
    import ctypes.util

    for candidate in (
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
    ):
        if os.path.exists(candidate):
            return candidate
    found = ctypes.util.find_library("m")
    assert found, "no libm on this machine"
    return found


def test_the_architectures_of_real_extensions():
    assert fatbin_archs(str(SM80)) == (["sm_80"], [])
    assert fatbin_archs(str(SM80_SM90_PTX90)) == (["sm_80", "sm_90"], ["compute_90"])
    # The entries' flags tell arch-specific (a) and family (f) code from the plain kind.
    assert fatbin_archs(str(ARCH_SPECIFIC)) == (["sm_90a", "sm_100a", "sm_100f"], ["compute_120"])


def test_a_library_without_gpu_code_and_a_file_that_is_not_elf_have_none(tmp_path):
    assert fatbin_archs(_libm()) is None
    script = tmp_path / "libc.so"  # a linker script under a .so name, as glibc installs one
    script.write_text("GROUP ( /lib/x86_64-linux-gnu/libc.so.6 )\n")
    assert fatbin_archs(str(script)) is None
    assert fatbin_archs(str(tmp_path / "gone.so")) is None  # listed in RECORD, since deleted


@pytest.mark.parametrize(
    ("cut", "reason"),
    [
        # The section headers are at the end of the file: a cut anywhere reaches them first.
        (0x2008 + 0x100, "cut short: 1920 bytes at offset 20984 are past its end (8456)"),
        (40, "cut short: the ELF header is incomplete"),
    ],
)
def test_a_truncated_extension_is_unreadable_with_the_reason(tmp_path, cut, reason):
    short = tmp_path / "short.so"
    short.write_bytes(SM80_SM90_PTX90.read_bytes()[:cut])
    with pytest.raises(Unreadable, match=f"^{re.escape(reason)}$"):
        fatbin_archs(str(short))


def test_a_corrupt_fatbin_is_unreadable_not_a_crash(tmp_path):
    data = bytearray(SM80_SM90_PTX90.read_bytes())
    # The first entry's payload size (at 0x2018 + 8), made to run past its container.
    data[0x2020:0x2028] = (1 << 40).to_bytes(8, "little")
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(Unreadable, match="^malformed fatbin entry at offset 8216$"):
        fatbin_archs(str(bad))
    data = bytearray(SM80_SM90_PTX90.read_bytes())
    data[0x2CC8:0x2CCC] = b"ABCD"  # the second container's magic
    bad.write_bytes(bytes(data))
    with pytest.raises(Unreadable, match="^no fatbin container at offset 11464"):
        fatbin_archs(str(bad))


def test_the_number_of_containers_read_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(cuda_binaries, "MAX_CONTAINERS", 1)  # the file has two
    with pytest.raises(Unreadable, match="^more than 1 fatbin containers: not all read$"):
        fatbin_archs(str(SM80_SM90_PTX90))


def test_requirements_and_libraries_from_real_metadata():
    # This environment's own pytest: its METADATA and RECORD as pip wrote them.
    from importlib.metadata import distribution

    dist = distribution("pytest")
    metadata = (Path(dist._path) / "METADATA").read_text()  # type: ignore[attr-defined]
    assert "iniconfig" in cuda_binaries.requires(metadata)
    assert cuda_binaries.depends_on_torch("pytest", metadata) is False
    assert cuda_binaries.depends_on_torch("torchvision", metadata) is True  # torch's own companion
    assert cuda_binaries.depends_on_torch("nvidia-cudnn-cu12", "Requires-Dist: torch\n") is False
    # torchvision 0.20.1's METADATA line, as PyPI serves it.
    assert cuda_binaries.requires("Name: torchvision\nRequires-Dist: torch (==2.5.1)\n") == ["torch"]
    record = (
        "torchvision/_C.so,sha256=x,1\n"
        "torchvision.libs/libnvjpeg.90286a3c.so.12,sha256=x,2\n"
        "torchvision/__init__.py,sha256=x,3\n"
    )
    assert cuda_binaries.shared_libraries(record) == [
        "torchvision/_C.so",
        "torchvision.libs/libnvjpeg.90286a3c.so.12",
    ]


def _dist(site: Path, name: str, requires: str, library: Path) -> None:
    """A distribution laid out as pip installs one: its module with the library, METADATA, RECORD."""
    module = site / name.replace("-", "_")
    module.mkdir()
    shutil.copy(library, module / "_C.so")
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n{requires}\n")
    (info / "RECORD").write_text(f"{module.name}/_C.so,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


def test_the_child_in_a_real_environment(tmp_path):
    python = make_venv(sys.executable, tmp_path / "venv")
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    _dist(site, "add-one-ext", "Requires-Dist: torch>=2.0", SM80)
    _dist(site, "unrelated", "Requires-Dist: numpy", SM80)  # GPU code, but not built against torch
    _dist(site, "nvidia-fake-cu12", "Requires-Dist: torch", SM80)  # NVIDIA's own wheels are left out
    host = RecordingHost(LiveHost())
    answer = host.cuda_binaries(str(python), [str(site)])
    assert answer["rc"] == 0, answer["stderr"]
    data = json.loads(answer["stdout"])
    assert data["extensions"] == [
        {
            "distribution": "add-one-ext",
            "version": "1.0",
            "file": str(site / "add_one_ext" / "_C.so"),
            "sass": ["sm_80"],
            "ptx": [],
        }
    ]
    assert (data["distributions"], data["files"], data["unreadable"], data["not_read"]) == (1, 1, [], None)
    # The snapshot replays the answer as it was recorded.
    replayed = SnapshotHost(host.recording).cuda_binaries(str(python), [])
    items, why = extension_facts(replayed, "src")
    assert why is None
    assert [(i["distribution"].value, i["arch"].value) for i in items] == [("add-one-ext", ["sm_80"])]
    with pytest.raises(HostError, match="no import path"):
        LiveHost().cuda_binaries(str(python), [])
