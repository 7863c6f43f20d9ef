"""The libraries probe (cuDNN, NCCL), against what was captured on a real H200 host and variants of it.

Real (tests/fixtures/raw, copied from the capture): the `ldconfig -p` output, the environment, the `find`
listing of libcudnn/libcudart/libnccl/libcuda files, the `ls` of /usr/local/nvidia, the installed
distributions' metadata (reference/frameworks.json) and `pip list`. Derived from them: directory listings
(the `find` only looked at /usr/lib/x86_64-linux-gnu and /usr/local/cuda-13.0, which the loader reaches as
/lib/x86_64-linux-gnu and /usr/local/cuda: both are symlinks on Ubuntu images) and the Python dump.

The H200 host is built here and imported by test_cuda.py and test_python_env.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpudoctor.facts import SCHEMA, spec_name
from gpudoctor.probes import libraries
from gpudoctor.probes.libraries import (
    Copy,
    count_distinct,
    dedupe,
    newest_first,
    parse_cudnn_header,
    pip_copies,
    split_path_list,
    versions_in_dir,
)

from conftest import fake_host

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
PYTHON = "/opt/torch/.venv/bin/python3"
SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
# Symlinks on the captured host: the `find` saw the right-hand side, the loader cache shows the left.
ALIASES = {"/usr/lib/x86_64-linux-gnu": "/lib/x86_64-linux-gnu", "/usr/local/cuda-13.0": "/usr/local/cuda"}
# torch/version.py was not captured; this is what torch 2.11.0+cu130 writes there, with the values the
# capture read at runtime (reference/frameworks.json torch_runtime: version, cuda, git).
TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '2.11.0+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'
hip: Optional[str] = None
xpu: Optional[str] = None
"""


def h200_env() -> dict[str, str]:
    lines = (RAW / "h200-env_nv.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def h200_dirs() -> dict[str, list[str]]:
    """Directory listings: the `find` results grouped by directory (under the loader's names), plus the
    captured `ls` of /usr/local/nvidia/lib64 (cut off after 100 lines, but past every CUDA library)."""
    dirs: dict[str, list[str]] = {}
    for path in (RAW / "h200-cudnn_find.txt").read_text().split():
        d, name = os.path.split(path)
        for real, alias in ALIASES.items():
            if d == real or d.startswith(real + "/"):
                d = alias + d[len(real) :]
        dirs.setdefault(d, []).append(name)
    text = (RAW / "h200-cuda_dirs.txt").read_text()
    dirs["/usr/local/nvidia/lib64"] = text.split("/usr/local/nvidia/lib64:\n", 1)[1].split()
    return dirs


def h200_dump() -> dict:
    """The Python dump of /opt/torch/.venv, built from the capture's distribution metadata.

    Synthesised where the capture has nothing: INSTALLER (pip: the venv was made with `python -m venv`
    and has pip 24.0), base_prefix, libc and pyvenv.cfg (Ubuntu 24.04's python3.12), torch/version.py
    (above), and onnxruntime's entry, whose metadata the capture overwrote with its runtime readings."""
    ref = json.loads((RAW / "h200-frameworks.json").read_text())
    dists = [
        {
            "name": name,
            "version": meta["version"],
            "requires": meta["requires"] or [],
            "installer": "pip",
            "location": meta["location"],
            "libs": meta["gpu_libs"],
            "texts": {},
        }
        for name, meta in ref.items()
        if isinstance(meta, dict) and "requires" in meta
    ]
    dists.append(
        {
            "name": "onnxruntime",
            "version": ref["onnxruntime"]["version"],
            "requires": ["coloredlogs", "flatbuffers", "numpy>=1.21.6", "packaging", "protobuf", "sympy"],
            "installer": "pip",
            "location": SITE,
            "libs": ["onnxruntime/capi/libonnxruntime_providers_shared.so"],
            "texts": {},
        }
    )
    for d in dists:
        if d["name"] == "torch":
            d["texts"]["torch/version.py"] = TORCH_VERSION_PY
    pip_list = json.loads((RAW / "h200-pip_list.json").read_text())
    return {
        "format": 1,
        "executable": PYTHON,
        "version": "3.12.3",
        "implementation": "CPython",
        "prefix": "/opt/torch/.venv",
        "base_prefix": "/usr",
        "platform": "linux",
        "libc": ["glibc", "2.39"],
        "conda_meta": False,
        "pyvenv_cfg": "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
        "all": {p["name"].lower().replace("_", "-"): p["version"] for p in pip_list},
        "distributions": sorted(dists, key=lambda d: d["name"]),
    }


def h200_parts(**changes) -> dict:
    """Everything fake_host needs to answer as the H200 host did; keyword arguments replace parts."""
    parts = {
        "env": h200_env(),
        "commands": [
            {
                "argv": ["ldconfig", "-p"],
                "rc": 0,
                "stdout": (RAW / "h200-ldconfig-p.txt").read_text(),
                "stderr": "",
            },
            {
                "argv": ["/usr/local/cuda/bin/nvcc", "--version"],
                "rc": 0,
                "stdout": (RAW / "h200-nvcc.txt").read_text(),
                "stderr": "",
            },
        ],
        "dirs": h200_dirs(),
        # capture.sh copied /usr/local/cuda/version.json when readable: it was not there.
        "read_errors": {"/usr/local/cuda/version.json": "not found"},
        "python": {"default": PYTHON, PYTHON: h200_dump()},
    }
    parts.update(changes)
    return parts


def installs(facts: dict, prefix: str) -> list[tuple[str, str, str]]:
    n = facts[f"{prefix}.count"].value
    return [tuple(facts[f"{prefix}[{i}].{k}"].value for k in ("version", "origin", "path")) for i in range(n)]


# --- pure parsing ---------------------------------------------------------------------------------------


def test_versions_in_dir_takes_the_real_file_and_names_the_soname_link():
    names = [
        "libcudnn.so",
        "libcudnn.so.9",
        "libcudnn.so.9.14.0",
        "libcudnn_adv.so.9.14.0",
        "libcudnn.so.8.9.7",
    ]
    assert versions_in_dir(names, "libcudnn.so.") == [
        ("9.14.0", "libcudnn.so.9"),
        ("8.9.7", "libcudnn.so.8.9.7"),
    ]
    assert versions_in_dir(["libnccl.so.2"], "libnccl.so.") == [("2", "libnccl.so.2")]
    assert versions_in_dir(["libnccl.so", "libcudart.so.13"], "libnccl.so.") == []


def test_parse_cudnn_header():
    text = (
        "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 14\n#define CUDNN_PATCHLEVEL 0\n"
        "#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n"
    )
    assert parse_cudnn_header(text) == "9.14.0"
    assert parse_cudnn_header("#define CUDNN_MAJOR 9\n") is None


def test_versions_sort_as_versions_and_count_by_release():
    found = ["9.2.1", "9.19.0", "9.19.0.56", "9.19.0", "10.0.0"]
    assert newest_first(found) == ["10.0.0", "9.19.0.56", "9.19.0", "9.2.1"]
    assert count_distinct(["9.19.0.56", "9.19.0", "9.14.0"]) == 2
    assert count_distinct(["9", "9.0.0", "not-a-version"]) == 2


def test_dedupe_keeps_the_first_copy_per_origin_and_version():
    a = Copy("9.14.0", "/lib/x86_64-linux-gnu/libcudnn.so.9", "system")
    b = Copy("9.14.0", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "system")
    c = Copy("9.14.0", "/conda/lib/libcudnn.so.9", "conda")
    assert dedupe([a, b, c]) == [a, c]


def test_pip_copies_need_the_library_in_the_wheel():
    dump = {
        "distributions": [{"name": "nvidia-cudnn-cu12", "version": "9.1.0.70", "location": "/s", "libs": []}]
    }
    assert pip_copies(dump, libraries.CUDNN[2], "libcudnn.so") == []
    assert pip_copies(None, libraries.CUDNN[2], "libcudnn.so") == []


def test_split_path_list():
    assert split_path_list("/a::/b/:/a") == ["/a", "/b"]
    assert split_path_list(None) == []


# --- the captured H200 host -----------------------------------------------------------------------------


def test_h200_copies_of_cudnn_and_nccl():
    facts = libraries.probe(fake_host(**h200_parts()))
    assert installs(facts, "cudnn.installs") == [
        ("9.14.0", "system", "/lib/x86_64-linux-gnu/libcudnn.so.9"),
        ("9.19.0.56", "pip", f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9"),
    ]
    assert facts["cudnn.versions"].value == ["9.19.0.56", "9.14.0"]
    assert facts["cudnn.distinct_versions"].value == 2
    assert facts["cudnn.ld_library_path_version"].unknown == "not installed"
    assert installs(facts, "nccl.installs") == [
        ("2.28.3", "system", "/lib/x86_64-linux-gnu/libnccl.so.2"),
        ("2.28.9", "pip", f"{SITE}/nvidia/nccl/lib/libnccl.so.2"),
    ]
    assert facts["nccl.versions"].value == ["2.28.9", "2.28.3"]


def test_h200_produces_exactly_the_schema_facts():
    facts = libraries.probe(fake_host(**h200_parts()))
    # cuda_libs.consumers and nccl.newest are derive.py's, from these facts (and the python probe's).
    wanted = {
        s.name
        for s in SCHEMA
        if s.name.startswith(("cudnn.", "nccl.", "cuda_libs."))
        and not s.name.startswith(("cuda_libs.consumers", "nccl.newest"))
    }
    assert {spec_name(k) for k in facts} == wanted


def test_both_loader_cache_spellings_of_one_directory_are_one_copy():
    parts = h200_parts()
    parts["dirs"]["/usr/lib/x86_64-linux-gnu"] = parts["dirs"]["/lib/x86_64-linux-gnu"]
    extra = "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9\n"
    parts["commands"][0]["stdout"] += extra
    facts = libraries.probe(fake_host(**parts))
    assert facts["cudnn.installs.count"].value == 2


# --- variants -------------------------------------------------------------------------------------------


def test_cudnn_on_ld_library_path_is_found_first():
    parts = h200_parts()
    parts["env"]["LD_LIBRARY_PATH"] = "/opt/cudnn/lib:/usr/local/nvidia/lib64"
    parts["dirs"]["/opt/cudnn/lib"] = ["libcudnn.so", "libcudnn.so.8", "libcudnn.so.8.9.7"]
    facts = libraries.probe(fake_host(**parts))
    assert facts["cudnn.ld_library_path_version"].value == "8.9.7"
    assert facts["cudnn.ld_library_path_version"].source == "/opt/cudnn/lib/libcudnn.so.8"
    assert installs(facts, "cudnn.installs")[0] == ("8.9.7", "system", "/opt/cudnn/lib/libcudnn.so.8")
    assert facts["cudnn.versions"].value == ["9.19.0.56", "9.14.0", "8.9.7"]
    assert facts["cudnn.distinct_versions"].value == 3


def test_a_wheel_directory_on_ld_library_path_is_the_pip_copy():
    parts = h200_parts()
    wheel_lib = f"{SITE}/nvidia/cudnn/lib"
    parts["env"]["LD_LIBRARY_PATH"] = wheel_lib
    parts["dirs"][wheel_lib] = ["libcudnn.so.9", "libcudnn_ops.so.9"]
    facts = libraries.probe(fake_host(**parts))
    assert facts["cudnn.ld_library_path_version"].value == "9.19.0.56"
    assert facts["cudnn.installs.count"].value == 2


def test_conda_copies():
    parts = h200_parts()
    parts["env"]["CONDA_PREFIX"] = "/opt/conda/envs/train"
    parts["dirs"]["/opt/conda/envs/train/lib"] = [
        "libcudnn.so.8",
        "libcudnn.so.8.9.2",
        "libnccl.so.2",
        "libnccl.so.2.18.5",
    ]
    facts = libraries.probe(fake_host(**parts))
    assert ("8.9.2", "conda", "/opt/conda/envs/train/lib/libcudnn.so.8") in installs(facts, "cudnn.installs")
    assert ("2.18.5", "conda", "/opt/conda/envs/train/lib/libnccl.so.2") in installs(facts, "nccl.installs")
    assert facts["nccl.versions"].value == ["2.28.9", "2.28.3", "2.18.5"]


def test_system_copy_without_versioned_file_takes_the_header_version():
    parts = h200_parts()
    parts["dirs"]["/lib/x86_64-linux-gnu"] = ["libcudnn.so", "libcudnn.so.9", "libnccl.so.2"]
    header = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 14\n#define CUDNN_PATCHLEVEL 0\n"
    parts["files"] = {"/usr/include/x86_64-linux-gnu/cudnn_version.h": header}
    facts = libraries.probe(fake_host(**parts))
    assert installs(facts, "cudnn.installs")[0] == ("9.14.0", "system", "/lib/x86_64-linux-gnu/libcudnn.so.9")
    assert installs(facts, "nccl.installs")[0] == ("2", "system", "/lib/x86_64-linux-gnu/libnccl.so.2")


def test_unlistable_directory_still_counts_the_cached_soname():
    parts = h200_parts()
    parts["dirs"]["/lib/x86_64-linux-gnu"] = {"error": "no permission"}
    facts = libraries.probe(fake_host(**parts))
    assert installs(facts, "nccl.installs")[0] == ("2", "system", "/lib/x86_64-linux-gnu/libnccl.so.2")


@pytest.mark.parametrize("error", ["timed out", "no permission"])
def test_unreadable_loader_cache_and_nothing_else_is_unknown(error):
    parts = h200_parts(commands=[{"argv": ["ldconfig", "-p"], "error": error}], python={})
    facts = libraries.probe(fake_host(**parts))
    assert facts["cudnn.installs.count"].unknown == error
    assert facts["cudnn.versions"].unknown == error
    assert facts["cudnn.distinct_versions"].unknown == error
    assert facts["nccl.installs.count"].unknown == error


def test_unreadable_loader_cache_still_lists_the_wheels():
    parts = h200_parts(commands=[{"argv": ["ldconfig", "-p"], "error": "timed out"}])
    facts = libraries.probe(fake_host(**parts))
    assert installs(facts, "cudnn.installs") == [
        ("9.19.0.56", "pip", f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9")
    ]


def test_ldconfig_falls_back_to_sbin():
    parts = h200_parts()
    stdout = parts["commands"][0]["stdout"]
    parts["commands"] = [
        {"argv": ["ldconfig", "-p"], "error": "not found"},
        {"argv": ["/sbin/ldconfig", "-p"], "rc": 0, "stdout": stdout, "stderr": ""},
    ]
    facts = libraries.probe(fake_host(**parts))
    assert facts["nccl.installs.count"].value == 2


def test_nothing_installed():
    facts = libraries.probe(
        fake_host(
            commands=[
                {"argv": ["ldconfig", "-p"], "rc": 0, "stdout": "0 libs found in cache\n", "stderr": ""}
            ]
        )
    )
    assert facts["cudnn.installs.count"].value == 0
    assert facts["cudnn.versions"].value == []
    assert facts["cudnn.distinct_versions"].value == 0
    assert facts["cudnn.ld_library_path_version"].unknown == "not installed"
    assert facts["nccl.installs.count"].value == 0


def test_cuda_sonames_of_the_h200_capture():
    # The capture's ldconfig -p lists CUDA 13's libraries under /usr/local/cuda and cuDNN 9; its venv holds
    # torch 2.11.0+cu130's nvidia-* wheels (cuBLAS, the CUDA runtime, cuDNN).
    facts = libraries.probe(fake_host(**h200_parts()))
    assert facts["cuda_libs.loader_sonames"].value == [
        "libcublas.so.13",
        "libcublasLt.so.13",
        "libcudart.so.13",
        "libcudnn.so.9",
        "libcufft.so.12",
        "libcurand.so.10",
    ]
    assert facts["cuda_libs.wheel_sonames"].value == [
        "libcublas.so.13",
        "libcublasLt.so.13",
        "libcudart.so.13",
        "libcudnn.so.9",
    ]


def test_cuda_sonames_unknown_without_the_loader_cache():
    parts = h200_parts()
    parts["commands"] = [{"argv": ["ldconfig", "-p"], "error": "timed out"}]
    facts = libraries.probe(fake_host(**parts))
    assert facts["cuda_libs.loader_sonames"].unknown == "timed out"
    assert facts["cuda_libs.wheel_sonames"].known


def test_a_conda_environments_lib_counts_for_the_loader():
    # conda-forge's ctranslate2 and onnxruntime find $CONDA_PREFIX/lib through their RPATH.
    parts = h200_parts()
    parts["env"] = dict(parts["env"], CONDA_PREFIX="/opt/conda/envs/asr")
    parts["dirs"] = dict(
        parts.get("dirs", {}), **{"/opt/conda/envs/asr/lib": ["libcublas.so.12", "libcublas.so.12.8.4.1"]}
    )
    facts = libraries.probe(fake_host(**parts))
    assert "libcublas.so.12" in facts["cuda_libs.loader_sonames"].value
    assert libraries.conda_lib_dirs(None, {"conda_meta": True, "prefix": "/opt/conda"}) == ["/opt/conda/lib"]
    assert libraries.conda_lib_dirs(None, {"conda_meta": False, "prefix": "/venv"}) == []
