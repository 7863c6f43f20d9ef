"""The Python probe, against the captured H200 venv (dump built in test_libraries.py) and variants of it."""

from __future__ import annotations

import copy

import pytest

from gpudoctor.derive import DERIVED
from gpudoctor.facts import SCHEMA, spec_name
from gpudoctor.probes import python_env
from gpudoctor.probes.python_env import (
    cupy_build,
    installer,
    jax_build,
    local_build,
    parse_tf_build_info,
    parse_torch_version_py,
    pins,
    public_version,
    tf_version,
    torch_build,
)

from .test_libraries import PYTHON, RAW, TORCH_VERSION_PY, h200_dump
from conftest import fake_host

# What torch 2.11's version.py says in a CPU-only and a ROCm wheel.
TORCH_CPU = """__version__ = '2.11.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'
hip: Optional[str] = None
"""
TORCH_ROCM = """__version__ = '2.5.1+rocm6.2'
debug = False
cuda: Optional[str] = None
git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'
hip: Optional[str] = '6.2.41133-dd7f95766'
"""
# torch 2.1's older form, without annotations.
TORCH_OLD = "__version__ = '2.1.2+cu121'\ndebug = False\ncuda = '12.1'\ngit_version = 'a8e7c98'\nhip = None\n"
# TensorFlow 2.17 (Linux wheel) and a Windows 2.10 build_info.py, as gen_build_info.py writes them.
TF_LINUX = (
    '"""Auto-generated module providing information about the build."""\nimport collections\n\n'
    "build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-18/bin/clang'), "
    "('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']), "
    "('cuda_version', '12.3'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), "
    "('is_tensorrt_build', False)])\n"
)
TF_WINDOWS = (
    "import collections\n\nbuild_info = collections.OrderedDict([('cuda_version', '64_112'), "
    "('cudnn_version', '64_8'), ('is_cuda_build', True), ('is_rocm_build', False)])\n"
)
# onnxruntime/capi/version_info.py as the Windows build writes it (onnxruntime's cmake writes the file only
# for WIN32).
ORT_GPU_VERSION_INFO = 'use_cuda = True\ncuda_version = "12.2"\ncudnn_version = "9"\n'
# onnxruntime/capi/build_and_package_info.py of the Linux onnxruntime-gpu wheels, verbatim (the 1.31.1 and
# 1.21.0 manylinux_2_28 x86_64 wheels from PyPI; 1.19.2 and 1.18.1 have neither file).
ORT_131_BUILD_INFO = (RAW / "onnxruntime-gpu-1.31.1-build_and_package_info.py.txt").read_text()
ORT_121_BUILD_INFO = (RAW / "onnxruntime-gpu-1.21.0-build_and_package_info.py.txt").read_text()
ORT_BUILD_INFO = "onnxruntime/capi/build_and_package_info.py"


def dist(name: str, version: str, requires=(), texts=None) -> dict:
    return {
        "name": name,
        "version": version,
        "requires": list(requires),
        "installer": "pip",
        "location": "/venv/lib/python3.12/site-packages",
        "libs": [],
        "texts": texts or {},
    }


def dump_with(*dists: dict, **fields) -> dict:
    base = {
        "format": 1,
        "executable": "/venv/bin/python",
        "version": "3.11.9",
        "prefix": "/venv",
        "base_prefix": "/usr",
        "conda_meta": False,
        "pyvenv_cfg": None,
        "all": {},
        "distributions": list(dists),
    }
    base.update(fields)
    return base


def probe(dump: dict) -> dict:
    return python_env.probe(fake_host(python={"default": "/venv/bin/python", "/venv/bin/python": dump}))


def framework(facts: dict, i: int) -> dict:
    return {
        f: (facts[f"frameworks[{i}].{f}"].value if facts[f"frameworks[{i}].{f}"].known else None)
        for f in python_env.FRAMEWORK_FIELDS
    }


# --- pure parsing ---------------------------------------------------------------------------------------


def test_parse_torch_version_py():
    assert parse_torch_version_py(TORCH_VERSION_PY) == {
        "version": "2.11.0+cu130",
        "cuda": "13.0",
        "hip": None,
    }
    assert parse_torch_version_py(TORCH_OLD) == {"version": "2.1.2+cu121", "cuda": "12.1", "hip": None}
    assert parse_torch_version_py(TORCH_ROCM)["hip"] == "6.2.41133-dd7f95766"
    assert parse_torch_version_py("cuda = os.environ['X']\n") == {"version": None, "cuda": None, "hip": None}


def test_parse_tf_build_info_never_runs_code():
    assert parse_tf_build_info(TF_LINUX)["cuda_version"] == "12.3"
    assert parse_tf_build_info("build_info = {'cuda_version': '12.5.1', 'is_cuda_build': True}") == {
        "cuda_version": "12.5.1",
        "is_cuda_build": True,
    }
    assert parse_tf_build_info("build_info = dict(__import__('os').environ)") == {}
    assert parse_tf_build_info("build_info = {") == {}
    assert parse_tf_build_info("") == {}


def test_tf_version():
    assert [tf_version(v) for v in ("12.5.1", "12.3", "9", "64_112", "64_8", None, "x")] == [
        "12.5",
        "12.3",
        "9",
        "11.2",
        "8",
        None,
        None,
    ]


def test_local_tags_and_public_versions():
    assert local_build("cu121") == {"build": "cuda", "cuda": "12.1"}
    assert local_build("cu130") == {"build": "cuda", "cuda": "13.0"}
    assert local_build("cu92") == {"build": "cuda", "cuda": "9.2"}
    assert local_build("rocm6.2") == {"build": "rocm", "rocm": "6.2"}
    assert local_build("cpu") == {"build": "cpu"}
    assert local_build("") == {}
    assert public_version("2.11.0+cu130") == "2.11.0"
    assert public_version("not a version+x") == "not a version"


def test_pins_skip_extras_and_bad_lines():
    reqs = [
        'nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"',
        "nvidia_nccl_cu13>=2.27",
        'jax-cuda13-plugin==0.11.2; extra == "cuda13"',
        "not a [valid requirement",
    ]
    assert pins(reqs) == {"nvidia-cudnn-cu13": "9.19.0.56", "nvidia-nccl-cu13": None}


def test_torch_without_version_py_uses_tag_then_requirements():
    cu121 = dist("torch", "2.3.1+cu121", ["nvidia-cudnn-cu12==8.9.2.26; platform_system == 'Linux'"])
    assert torch_build(cu121) == {"build": "cuda", "cuda": "12.1", "cudnn": "8.9.2.26"}
    assert torch_build(dist("torch", "2.3.1+cpu")) == {"build": "cpu"}
    pypi = dist("torch", "2.4.0", ["nvidia-cuda-runtime-cu12==12.4.127", "nvidia-cudnn-cu12==9.1.0.70"])
    assert torch_build(pypi) == {"build": "cuda", "cuda": "12.4", "cudnn": "9.1.0.70"}
    toolkit = dist("torch", "2.11.0", ["cuda-toolkit[cudart,cublas]==13.0.2; platform_system == 'Linux'"])
    assert torch_build(toolkit) == {"build": "cuda", "cuda": "13.0", "cudnn": None}
    assert torch_build(dist("torch", "2.5.1", ["pytorch-triton-rocm==3.1.0"])) == {"build": "rocm"}
    assert torch_build(dist("torch", "2.5.1", ["filelock"])) == {}


def test_jax_and_cupy_builds():
    assert jax_build({"jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"}, "0.4.30") == {
        "build": "cuda",
        "cuda": "12",
    }
    assert jax_build({"jax", "jax-rocm60-plugin"}, "0.4.35") == {"build": "rocm", "rocm": "6.0"}
    assert jax_build({"jax", "jaxlib"}, "0.4.7+cuda12.cudnn88") == {
        "build": "cuda",
        "cuda": "12",
        "cudnn": "8.8",
    }
    assert jax_build({"jax", "jaxlib"}, "0.4.30") == {"build": "cpu"}
    assert cupy_build("cupy-cuda12x") == {"build": "cuda", "cuda": "12"}
    assert cupy_build("cupy-cuda117") == {"build": "cuda", "cuda": "11.7"}
    assert cupy_build("cupy-rocm-5-0") == {"build": "rocm", "rocm": "5.0"}
    assert cupy_build("cupy") == {"why": "source build"}


@pytest.mark.parametrize(
    ("fields", "dists", "expected"),
    [
        ({"conda_meta": True}, [], "conda"),
        ({"pyvenv_cfg": "home = /usr/bin\nimplementation = CPython\nuv = 0.4.18\n"}, [], "uv"),
        ({}, [{"installer": "uv"}, {"installer": "uv"}, {"installer": "pip"}], "uv"),
        ({}, [{"installer": "uv"}, {"installer": "pip"}], "pip"),
        ({"prefix": "/home/u/.cache/pypoetry/virtualenvs/app-x1-py3.12"}, [], "poetry"),
        ({"pyvenv_cfg": "home = /usr/bin\nprompt = app\n"}, [{"installer": ""}], "pip"),
    ],
)
def test_installer(fields, dists, expected):
    assert installer(dict(fields, distributions=dists)) == expected


# --- the captured H200 venv -----------------------------------------------------------------------------


def test_h200():
    facts = python_env.probe(fake_host(python={"default": PYTHON, PYTHON: h200_dump()}))
    assert facts["python.executable"].value == PYTHON
    assert facts["python.version"].value == "3.12.3"
    assert facts["python.prefix"].value == "/opt/torch/.venv"
    assert facts["python.venv"].value is True
    assert facts["python.installer"].value == "pip"
    assert facts["python.machine"].unknown == "not recorded in snapshot"  # the capture did not ask
    assert facts["frameworks.count"].value == 4
    assert framework(facts, 0) == {
        "name": "torch",
        "distribution": "torch",
        "version": "2.11.0",
        "build": "cuda",
        "cuda": "13.0",
        "cuda_major": 13,
        "cudnn": "9.19.0.56",
        "rocm": None,
    }
    assert facts["frameworks[0].rocm"].unknown == "not applicable"
    assert framework(facts, 1) == {
        "name": "jax",
        "distribution": "jax",
        "version": "0.11.2",
        "build": "cuda",
        "cuda": "13",
        "cuda_major": 13,
        "cudnn": None,
        "rocm": None,
    }
    assert facts["frameworks[1].cudnn"].unknown == "not pinned"
    assert framework(facts, 2)["distribution"] == "cupy-cuda13x"
    assert [framework(facts, 2)[k] for k in ("version", "build", "cuda", "cuda_major")] == [
        "14.2.0",
        "cuda",
        "13",
        13,
    ]
    assert framework(facts, 3) == {
        "name": "onnxruntime",
        "distribution": "onnxruntime",
        "version": "1.30.0",
        "build": "cpu",
        "cuda": None,
        "cuda_major": None,
        "cudnn": None,
        "rocm": None,
    }
    assert facts["frameworks[3].cuda"].unknown == "not applicable"


def test_h200_produces_schema_facts_only():
    facts = python_env.probe(fake_host(python={"default": PYTHON, PYTHON: h200_dump()}))
    wanted = {s.name for s in SCHEMA if s.name.startswith(("python.", "frameworks"))} - set(DERIVED)
    assert {spec_name(k) for k in facts} == wanted


# --- variants -------------------------------------------------------------------------------------------


def test_cpu_only_torch():
    facts = probe(dump_with(dist("torch", "2.11.0+cpu", texts={"torch/version.py": TORCH_CPU})))
    fw = framework(facts, 0)
    assert (fw["version"], fw["build"], fw["cuda"], fw["cudnn"], fw["rocm"]) == (
        "2.11.0",
        "cpu",
        None,
        None,
        None,
    )
    assert facts["frameworks[0].cuda"].unknown == "not applicable"
    assert facts["frameworks[0].cuda_major"].unknown == "not applicable"


def test_rocm_torch():
    facts = probe(dump_with(dist("torch", "2.5.1+rocm6.2", texts={"torch/version.py": TORCH_ROCM})))
    fw = framework(facts, 0)
    assert (fw["version"], fw["build"], fw["rocm"], fw["cuda"]) == ("2.5.1", "rocm", "6.2", None)
    assert facts["frameworks[0].cudnn"].unknown == "not applicable"


def test_torch_without_version_py():
    torch = dist("torch", "2.4.0", ["nvidia-cuda-runtime-cu12==12.4.127", "nvidia-cudnn-cu12==9.1.0.70"])
    fw = framework(probe(dump_with(torch)), 0)
    assert (fw["build"], fw["cuda"], fw["cuda_major"], fw["cudnn"]) == ("cuda", "12.4", 12, "9.1.0.70")


def test_torch_of_unknown_build():
    facts = probe(dump_with(dist("torch", "2.5.1", ["filelock"])))
    assert facts["frameworks[0].build"].unknown == "not determined"
    assert facts["frameworks[0].cuda"].unknown == "not determined"
    assert facts["frameworks[0].version"].value == "2.5.1"


def test_tensorflow():
    tf = dist("tensorflow", "2.17.0", texts={"tensorflow/python/platform/build_info.py": TF_LINUX})
    fw = framework(probe(dump_with(tf)), 0)
    assert (fw["name"], fw["build"], fw["cuda"], fw["cuda_major"], fw["cudnn"]) == (
        "tensorflow",
        "cuda",
        "12.3",
        12,
        "8",
    )
    win = dist("tensorflow", "2.10.0", texts={"tensorflow/python/platform/build_info.py": TF_WINDOWS})
    assert framework(probe(dump_with(win)), 0)["cuda"] == "11.2"
    cpu = framework(probe(dump_with(dist("tensorflow-cpu", "2.17.0"))), 0)
    assert (cpu["distribution"], cpu["build"]) == ("tensorflow-cpu", "cpu")


def test_onnxruntime_gpu_and_plain_cupy():
    ort = dist("onnxruntime-gpu", "1.19.2", texts={"onnxruntime/capi/version_info.py": ORT_GPU_VERSION_INFO})
    facts = probe(dump_with(dist("cupy", "13.3.0"), ort))
    assert framework(facts, 0)["name"] == "cupy"
    assert facts["frameworks[0].build"].unknown == "source build"
    assert facts["frameworks[0].cuda"].unknown == "source build"
    assert framework(facts, 1) == {
        "name": "onnxruntime",
        "distribution": "onnxruntime-gpu",
        "version": "1.19.2",
        "build": "cuda",
        "cuda": "12.2",
        "cuda_major": 12,
        "cudnn": "9",
        "rocm": None,
    }


@pytest.mark.parametrize(
    ("version", "text", "cuda"),
    [("1.31.1", ORT_131_BUILD_INFO, "13.0"), ("1.21.0", ORT_121_BUILD_INFO, "12.2")],
)
def test_linux_onnxruntime_gpu_cuda_from_build_and_package_info(version, text, cuda):
    facts = probe(dump_with(dist("onnxruntime-gpu", version, texts={ORT_BUILD_INFO: text})))
    fw = framework(facts, 0)
    assert (fw["build"], fw["cuda"], fw["cuda_major"]) == ("cuda", cuda, int(cuda.split(".")[0]))
    assert facts["frameworks[0].cudnn"].unknown == "not pinned"


def test_linux_onnxruntime_gpu_before_1_21_records_no_cuda():
    facts = probe(dump_with(dist("onnxruntime-gpu", "1.19.2")))
    assert facts["frameworks[0].build"].value == "cuda"
    why = f"the wheel records no CUDA version ({ORT_BUILD_INFO} has none)"
    assert facts["frameworks[0].cuda"].unknown == why
    assert facts["frameworks[0].cuda_major"].unknown == why


def test_onnxruntime_gpu_ignores_a_cuda_version_that_is_no_version():
    texts = {ORT_BUILD_INFO: "package_name = 'onnxruntime-gpu'\ncuda_version = ''\n"}
    facts = probe(dump_with(dist("onnxruntime-gpu", "1.22.0", texts=texts)))
    assert not facts["frameworks[0].cuda"].known


def test_no_frameworks_and_no_venv():
    facts = probe(dump_with(prefix="/usr", base_prefix="/usr"))
    assert facts["frameworks.count"].value == 0
    assert facts["python.venv"].value is False


@pytest.mark.parametrize(
    ("fields", "value", "why"),
    [
        ({"machine": "aarch64"}, "aarch64", None),
        ({"machine": "x86_64"}, "x86_64", None),
        ({"machine": ""}, None, "not reported"),  # an interpreter whose os has no uname
        ({"machine": 64}, None, "not reported"),  # a hand-edited snapshot
        ({}, None, "not recorded in snapshot"),  # recorded before gpudoctor asked
    ],
)
def test_machine_of_the_interpreter(fields, value, why):
    fact = probe(dump_with(**fields))["python.machine"]
    assert (fact.value, fact.unknown) == (value, why)
    assert fact.source == "python:/venv/bin/python os.uname()"


def test_python_failing_makes_everything_unknown_with_the_interpreter_and_why():
    recorded = {
        "error": "timed out",
        "detail": "python inspection of /venv/bin/python did not finish within 5.0 s",
    }
    host = fake_host(
        python={
            "default": "/venv/bin/python",
            "targets": [["/venv/bin/python", "VIRTUAL_ENV"]],
            "/venv/bin/python": recorded,
        }
    )
    facts = python_env.probe(host)
    why = "inspecting /venv/bin/python failed: did not finish within 5.0 s"
    assert {k: f.unknown for k, f in facts.items() if not f.known} == {
        "python.executable": why,
        "python.version": why,
        "python.prefix": why,
        "python.venv": why,
        "python.installer": why,
        "python.machine": why,
        "frameworks.count": why,
        "python.ctranslate2": why,
        "python.faster_whisper": why,
    }
    assert facts["python.selected_by"].value == "VIRTUAL_ENV"


def test_an_old_snapshot_without_targets_leaves_what_chose_the_interpreter_unknown():
    host = fake_host(python={"default": "/venv/bin/python", "/venv/bin/python": {"error": "timed out"}})
    facts = python_env.probe(host)
    assert facts["python.selected_by"].unknown == "not recorded"
    assert facts["frameworks.count"].unknown == "inspecting /venv/bin/python failed: timed out"


def test_h200_dump_is_not_mutated():
    dump = h200_dump()
    before = copy.deepcopy(dump)
    python_env.probe(fake_host(python={"default": PYTHON, PYTHON: dump}))
    assert dump == before


def test_odd_text_parses_without_printing_syntax_warnings():
    import warnings

    # "1and 2" parses, with a SyntaxWarning ("invalid decimal literal") that Python would print.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert parse_tf_build_info("build_info = {'a': 1and 2}\n") == {}
        assert parse_torch_version_py("__version__ = 1and 2\ncuda = '12.8'\n")["cuda"] == "12.8"
    assert [str(w.message) for w in caught] == []


def _requires_dist_lines() -> list[str]:
    """Every Requires-Dist line of the recorded wheel metadata (pip reports, the H200 capture)."""
    import json
    from pathlib import Path

    lines: set[str] = set()
    fixtures = Path(__file__).parent.parent / "fixtures"

    def walk(x: object) -> None:
        if isinstance(x, dict):
            for key, value in x.items():
                if key in ("requires_dist", "requires") and isinstance(value, list):
                    lines.update(v for v in value if isinstance(v, str))
                else:
                    walk(value)
        elif isinstance(x, list):
            for value in x:
                walk(value)

    for path in [*fixtures.glob("pip_reports/*.json"), fixtures / "h200-driver580-snapshot" / "python.json"]:
        walk(json.loads(path.read_text()))
    return sorted(lines)


def test_the_quick_requirement_reader_agrees_with_packaging():
    from gpudoctor.probes.python_env import _requirement, simple_requirement

    lines = _requires_dist_lines() + [
        'nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"',
        "nvidia_cublas_cu12 == 12.8.4.1 ; platform_machine == 'x86_64'",
        'nvidia-nccl-cu12==2.27.3; extra == "dist"',
        "nvidia-cuda-runtime-cu11 (==11.7.99)",  # old metadata style: packaging reads it
        "nvidia-cufft-cu12==11.*",
        "nvidia-foo>=1.*",
        "nvidia-foo==1.0+cu12",
        "nvidia-foo>=1,<2",
        "nvidia-foo;",
        "nvidia-foo==",
        "nvidia-foo[bar]==2.0rc1; python_version >= '3.9'",
    ]
    assert len(lines) > 150
    quick = 0
    for line in lines:
        answer = simple_requirement(line)
        if answer is not None:
            quick += 1
            assert answer == _requirement(line), line
    assert quick > 100  # the usual shape is read without packaging
    assert simple_requirement("nvidia-cuda-runtime-cu11 (==11.7.99)") is None
    # a wildcard reads as packaging reads it
    assert simple_requirement("nvidia-cufft-cu12==11.*") == ("nvidia-cufft-cu12", "11.*", False)
    assert simple_requirement("nvidia-foo>=1.*") is None  # invalid: packaging decides (and refuses it)


def test_ctranslate2_and_faster_whisper_versions():
    # The versions as the metadata folders name them (ctranslate2-4.5.0.dist-info, faster_whisper-1.1.0...).
    facts = probe(dump_with(all={"ctranslate2": "4.5.0", "faster-whisper": "1.1.0"}))
    assert facts["python.ctranslate2"].value == "4.5.0"
    assert facts["python.faster_whisper"].value == "1.1.0"
    facts = probe(dump_with(all={}))
    assert facts["python.ctranslate2"].unknown == "not installed"
    dump = dump_with()
    del dump["all"]  # a hand-edited snapshot: not "not installed"
    assert probe(dump)["python.faster_whisper"].unknown == "not reported"
