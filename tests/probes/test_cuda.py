"""The CUDA probe, against the captured H200 host (built in test_libraries.py) and variants of it.

The capture has no /usr/local/cuda/version.json, so the toolkit version there comes from nvcc.
"""

from __future__ import annotations

import pytest

from gpudoctor.facts import SCHEMA, spec_name
from gpudoctor.probes import cuda
from gpudoctor.probes.cuda import compat_active, parse_nvcc_version, parse_version_json

from conftest import fake_host
from test_libraries import RAW, SITE, h200_parts, installs

NVCC = (RAW / "h200-nvcc.txt").read_text()


# --- pure parsing ---------------------------------------------------------------------------------------


def test_parse_nvcc_version():
    assert parse_nvcc_version(NVCC) == "13.0.88"
    assert parse_nvcc_version("Cuda compilation tools, release 9.2, V9.2.148\n") == "9.2.148"
    assert parse_nvcc_version("Cuda compilation tools, release 12.4\n") == "12.4"
    assert parse_nvcc_version("bash: nvcc: command not found") is None


def test_parse_version_json():
    assert parse_version_json('{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}') == "13.0.2"
    assert parse_version_json('{"cuda_cudart": {"version": "13.0.96"}}') is None
    assert parse_version_json("not json") is None
    assert parse_version_json("[1]") is None


@pytest.mark.parametrize(
    ("path", "active"),
    [
        ("/usr/local/nvidia/lib64:/usr/local/nvidia/lib", False),
        ("/usr/local/cuda/compat:/usr/local/nvidia/lib64", True),
        ("/usr/local/cuda/compat/", True),
        ("/usr/local/cuda-13.0/compat", True),  # the same directory under its real name
        ("/opt/compat", False),
        ("", False),
        (None, False),
    ],
)
def test_compat_active(path, active):
    assert compat_active("/usr/local/cuda/compat", path) is active


# --- the captured H200 host -----------------------------------------------------------------------------


def test_h200():
    facts = cuda.probe(fake_host(**h200_parts()))
    assert facts["cuda.home"].value == "/usr/local/cuda"
    assert facts["cuda.home"].source == "CUDA_HOME"
    assert facts["cuda.toolkit.version"].value == "13.0.88"
    assert facts["cuda.toolkit.version"].source == "/usr/local/cuda/bin/nvcc --version"
    assert installs(facts, "cuda.runtimes") == [
        ("13.0.96", "system", "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13"),
        ("13.0.96", "pip", f"{SITE}/nvidia/cu13/lib/libcudart.so.13"),
    ]
    assert facts["cuda.compat.version"].value == "580.95.05"
    assert facts["cuda.compat.active"].value is False


def test_h200_produces_exactly_the_schema_facts():
    facts = cuda.probe(fake_host(**h200_parts()))
    assert {spec_name(k) for k in facts} == {s.name for s in SCHEMA if s.name.startswith("cuda.")}
    assert all(f.source for f in facts.values())


# --- variants -------------------------------------------------------------------------------------------


def test_version_json_wins_over_nvcc():
    parts = h200_parts(
        files={"/usr/local/cuda/version.json": '{"cuda": {"version": "13.0.2"}}'}, read_errors={}
    )
    facts = cuda.probe(fake_host(**parts))
    assert facts["cuda.toolkit.version"].value == "13.0.2"
    assert facts["cuda.toolkit.version"].source == "/usr/local/cuda/version.json"


def test_nvcc_on_path_when_the_home_has_none():
    parts = h200_parts()
    parts["commands"][1] = {"argv": ["/usr/local/cuda/bin/nvcc", "--version"], "error": "not found"}
    parts["commands"].append({"argv": ["nvcc", "--version"], "rc": 0, "stdout": NVCC, "stderr": ""})
    facts = cuda.probe(fake_host(**parts))
    assert facts["cuda.toolkit.version"].value == "13.0.88"
    assert facts["cuda.toolkit.version"].source == "nvcc --version"


def test_cuda_path_and_default_home():
    parts = h200_parts()
    del parts["env"]["CUDA_HOME"]
    parts["env"]["CUDA_PATH"] = "/opt/cuda-12.4/"
    assert cuda.probe(fake_host(**parts))["cuda.home"].value == "/opt/cuda-12.4"
    del parts["env"]["CUDA_PATH"]
    parts["dirs"]["/usr/local/cuda"] = ["bin", "compat", "lib64", "targets"]
    home = cuda.probe(fake_host(**parts))["cuda.home"]
    assert (home.value, home.source) == ("/usr/local/cuda", "/usr/local/cuda")


def test_no_toolkit():
    host = fake_host(
        dirs={"/usr/local/cuda": {"error": "not found"}},
        commands=[
            {"argv": ["ldconfig", "-p"], "rc": 0, "stdout": "0 libs found in cache\n", "stderr": ""},
            {"argv": ["nvcc", "--version"], "error": "not found"},
        ],
    )
    facts = cuda.probe(host)
    assert facts["cuda.home"].unknown == "not installed"
    assert facts["cuda.toolkit.version"].unknown == "not installed"
    assert facts["cuda.runtimes.count"].value == 0
    assert facts["cuda.compat.version"].unknown == "not installed"
    assert facts["cuda.compat.active"].value is False


def test_unrecorded_home_is_not_called_missing():
    facts = cuda.probe(fake_host())
    assert facts["cuda.home"].unknown == "not recorded in snapshot"
    assert facts["cuda.runtimes.count"].unknown == "not recorded in snapshot"


def test_failing_nvcc():
    parts = h200_parts()
    parts["commands"][1] = {
        "argv": ["/usr/local/cuda/bin/nvcc", "--version"],
        "rc": 1,
        "stdout": "",
        "stderr": "x",
    }
    facts = cuda.probe(fake_host(**parts))
    assert facts["cuda.toolkit.version"].unknown == "nvcc failed (rc=1)"


def test_compat_on_ld_library_path_is_active():
    parts = h200_parts()
    parts["env"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat:" + parts["env"]["LD_LIBRARY_PATH"]
    facts = cuda.probe(fake_host(**parts))
    assert facts["cuda.compat.active"].value is True


def test_no_compat_package():
    parts = h200_parts()
    del parts["dirs"]["/usr/local/cuda/compat"]
    parts["dirs"]["/usr/local/cuda/compat"] = {"error": "not found"}
    assert cuda.probe(fake_host(**parts))["cuda.compat.version"].unknown == "not installed"


def test_cuda_12_runtime_wheel_and_conda_copy():
    parts = h200_parts()
    dump = parts["python"][parts["python"]["default"]]
    dump["distributions"].append(
        {
            "name": "nvidia-cuda-runtime-cu12",
            "version": "12.4.127",
            "requires": [],
            "installer": "pip",
            "location": "/home/u/.local/lib/python3.12/site-packages",
            "libs": ["nvidia/cuda_runtime/lib/libcudart.so.12"],
            "texts": {},
        }
    )
    parts["env"]["CONDA_PREFIX"] = "/opt/conda"
    parts["dirs"]["/opt/conda/lib"] = ["libcudart.so", "libcudart.so.12", "libcudart.so.12.1.105"]
    facts = cuda.probe(fake_host(**parts))
    found = installs(facts, "cuda.runtimes")
    assert (
        "12.4.127",
        "pip",
        "/home/u/.local/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
    ) in found
    assert ("12.1.105", "conda", "/opt/conda/lib/libcudart.so.12") in found
    assert len(found) == 4
