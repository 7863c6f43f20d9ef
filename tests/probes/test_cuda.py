"""The CUDA probe, against the captured H200 host (built in test_libraries.py) and variants of it.

The capture has no /usr/local/cuda/version.json, so the toolkit version there comes from nvcc. The
compiler outputs in tests/fixtures/raw/debian12-*.txt were captured on Debian 12 with LC_ALL=C (gcc and g++
12.2.0, nvcc 13.0.88, and clang 14.0.6 from Debian's clang-14 package, run from the unpacked .deb: its
InstalledDir line is rewritten to the package's install path).
"""

from __future__ import annotations

import pytest

from gpudoctor.derive import DERIVED
from gpudoctor.facts import SCHEMA, spec_name
from gpudoctor.host.base import HostError
from gpudoctor.probes import cuda
from gpudoctor.probes.cuda import (
    compat_active,
    compiler_program,
    find_on_path,
    host_compiler_commands,
    parse_compiler_version,
    parse_nvcc_version,
    parse_version_json,
)

from .test_libraries import RAW, SITE, h200_parts, installs
from conftest import fake_host

NVCC = (RAW / "h200-nvcc.txt").read_text()
GCC = (RAW / "debian12-gcc-version.txt").read_text()
GXX = (RAW / "debian12-gxx-version.txt").read_text()
CLANG = (RAW / "debian12-clang14-version.txt").read_text()
NVCC_DEBIAN = (RAW / "debian12-nvcc-version.txt").read_text()


# --- pure parsing ---------------------------------------------------------------------------------------


def test_parse_nvcc_version():
    assert parse_nvcc_version(NVCC) == "13.0.88"
    assert parse_nvcc_version("Cuda compilation tools, release 9.2, V9.2.148\n") == "9.2.148"
    assert parse_nvcc_version("Cuda compilation tools, release 12.4\n") == "12.4"
    assert parse_nvcc_version("bash: nvcc: command not found") is None


def test_parse_compiler_version_on_captured_output():
    assert parse_compiler_version(GCC) == ("gcc", "12.2.0")
    assert parse_compiler_version(GXX) == ("gcc", "12.2.0")
    assert parse_compiler_version(CLANG) == ("clang", "14.0.6")
    assert parse_nvcc_version(NVCC_DEBIAN) == "13.0.88"


FSF = "\nCopyright (C) 2023 Free Software Foundation, Inc.\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0" + FSF, ("gcc", "13.2.0")),
        ("g++ (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)" + FSF, ("gcc", "11.4.1")),
        ("x86_64-conda-linux-gnu-cc (conda-forge gcc 12.3.0-7) 12.3.0" + FSF, ("gcc", "12.3.0")),
        ("gcc-14 (Debian 14.2.0-19) 14.2.0" + FSF, ("gcc", "14.2.0")),
        ("Ubuntu clang version 18.1.3 (1ubuntu1)\nTarget: x86_64-pc-linux-gnu\n", ("clang", "18.1.3")),
        ("clang version 19.1.7\n", ("clang", "19.1.7")),
        ("Apple clang version 15.0.0 (clang-1500.3.9.4)\n", ("clang", "15.0.0")),
        # icc copies GCC's first line but not its copyright: not taken for gcc.
        ("icc (ICC) 2021.10.0 20230609\nCopyright (C) 1985-2023 Intel Corporation.\n", ("other", None)),
        ("Intel(R) oneAPI DPC++/C++ Compiler 2024.0.0 (2024.0.0.20231017)\n", ("other", None)),
        ("nvc++ 24.1-0 64-bit target on x86-64 Linux -tp haswell\n", ("other", None)),
        ("", ("other", None)),
    ],
)
def test_parse_compiler_version(text, expected):
    assert parse_compiler_version(text) == expected


def test_host_compiler_commands():
    assert host_compiler_commands({}) == [("PATH", "gcc")]
    env = {"CC": "gcc-13", "CXX": "g++-13", "CUDAHOSTCXX": "g++-13", "NVCC_CCBIN": None}
    assert host_compiler_commands(env) == [("PATH", "gcc"), ("CUDAHOSTCXX", "g++-13"), ("CC", "gcc-13")]
    assert host_compiler_commands({"NVCC_CCBIN": "/opt/gcc13/bin", "CC": " "}) == [
        ("NVCC_CCBIN", "/opt/gcc13/bin")
    ]


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("gcc-13", "gcc-13"),
        ("/usr/bin/gcc -m64", "/usr/bin/gcc"),
        ("ccache gcc", "gcc"),
        ("/usr/lib/ccache/ccache sccache clang", "clang"),
        ("ccache", None),
        ("-O2", None),
        ("gcc 'unbalanced", None),
        ("", None),
    ],
)
def test_compiler_program_runs_only_the_program(command, program):
    assert compiler_program(command) == program


def _lister(tree: dict):
    def listdir(path: str) -> list:
        entry = tree.get(path, "not found")
        if isinstance(entry, str):
            raise HostError(entry, path)
        return entry

    return listdir


def test_find_on_path():
    tree = {"/usr/local/bin": ["nvcc", "docker"], "/usr/bin": ["gcc", "nvcc"], "/opt/x": "no permission"}
    assert find_on_path("nvcc", "/nowhere:/usr/local/bin:/usr/bin", _lister(tree)) == (
        "/usr/local/bin/nvcc",
        None,
    )
    assert find_on_path("nvcc", "/usr/bin/:/usr/local/bin", _lister(tree)) == ("/usr/bin/nvcc", None)
    assert find_on_path("nvcc", "/nowhere:/sbin", _lister(tree)) == (None, None)
    assert find_on_path("nvcc", "", _lister(tree)) == (None, None)
    # An unreadable directory before the first hit might hold nvcc itself: cannot tell.
    assert find_on_path("nvcc", "/opt/x:/usr/bin", _lister(tree)) == (None, "/opt/x: no permission")
    assert find_on_path("nvcc", "/usr/bin:/opt/x", _lister(tree)) == ("/usr/bin/nvcc", None)


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
    wanted = {s.name for s in SCHEMA if s.name.startswith("cuda.")} - set(DERIVED)
    assert {spec_name(k) for k in facts} == wanted
    assert all(f.source for f in facts.values())


def test_h200_build_facts_the_capture_could_not_tell_are_unknown(h200_host):
    """The H200 snapshot recorded CUDA_HOME, its listing and its nvcc, but not PATH, NVCC_CCBIN nor any
    compiler's --version: those facts are unknown, so the rules that need them cannot pass there."""
    facts = cuda.probe(h200_host)
    assert facts["cuda.home_source"].value == "CUDA_HOME"
    assert facts["cuda.home_exists"].value is True
    assert facts["cuda.toolkit.found"].value is True
    assert facts["cuda.nvcc.home_version"].value == "13.0.88"
    assert facts["cuda.nvcc.on_path"].unknown == "not recorded in snapshot"
    assert facts["cuda.host_compilers.count"].unknown == "not recorded in snapshot"


def _command(argv: list, stdout: str = "", rc: int = 0, error: str = "") -> dict:
    if error:
        return {"argv": argv, "error": error}
    return {"argv": argv, "rc": rc, "stdout": stdout, "stderr": ""}


def workstation(env: dict, dirs: dict, commands: list) -> dict:
    """A workstation with CUDA 12.6 in /usr/local/cuda-12.6 and whatever env, dirs and commands add."""
    base_dirs = {"/usr/local/cuda-12.6": ["bin", "include", "lib64"], "/usr/local/cuda": ["bin", "lib64"]}
    return cuda.probe(
        fake_host(
            env={"PATH": "/usr/local/bin:/usr/bin", **env},
            dirs={**base_dirs, "/usr/local/bin": [], "/usr/bin": ["gcc", "g++"], **dirs},
            read_errors={"/usr/local/cuda-12.6/version.json": "not found"},
            commands=[
                _command(["ldconfig", "-p"], "0 libs found in cache\n"),
                _command(["/usr/local/cuda-12.6/bin/nvcc", "--version"], NVCC.replace("13.0", "12.6")),
                *commands,
            ],
        )
    )


def test_cuda_home_names_a_missing_directory():
    facts = workstation(
        {"CUDA_HOME": "/usr/local/cuda-12.1"}, {"/usr/local/cuda-12.1": {"error": "not found"}}, []
    )
    assert facts["cuda.home"].value == "/usr/local/cuda-12.1"
    assert facts["cuda.home_source"].value == "CUDA_HOME"
    assert facts["cuda.home_exists"].value is False
    assert facts["cuda.nvcc.home_version"].unknown == "not recorded in snapshot"


def test_cuda_home_unreadable_is_unknown_not_missing():
    facts = workstation({"CUDA_PATH": "/data/cuda"}, {"/data/cuda": {"error": "no permission"}}, [])
    assert facts["cuda.home_source"].value == "CUDA_PATH"
    assert facts["cuda.home_exists"].unknown == "no permission"


def test_default_home_and_no_toolkit_at_all():
    host = fake_host(
        env={"PATH": "/usr/bin"},
        dirs={"/usr/local/cuda": {"error": "not found"}, "/usr/bin": ["gcc"]},
        commands=[
            _command(["ldconfig", "-p"], "0 libs found in cache\n"),
            _command(["nvcc", "--version"], error="not found"),
            _command(["gcc", "--version"], GCC),
        ],
    )
    facts = cuda.probe(host)
    assert (facts["cuda.home_source"].value, facts["cuda.home_exists"].value) == ("default", False)
    assert facts["cuda.toolkit.found"].value is False
    assert facts["cuda.nvcc.on_path"].value is False
    assert facts["cuda.nvcc.version"].unknown == "not on PATH"
    assert facts["cuda.host_compilers[0].version"].value == "12.2.0"


def test_toolkit_found_is_unknown_when_nvcc_could_not_be_asked():
    host = fake_host(
        env={},
        dirs={"/usr/local/cuda": ["bin"]},
        commands=[
            _command(["ldconfig", "-p"], "0 libs found in cache\n"),
            _command(["/usr/local/cuda/bin/nvcc", "--version"], error="timed out"),
        ],
    )
    facts = cuda.probe(host)
    assert facts["cuda.toolkit.found"].unknown == "timed out"


def test_nvcc_on_path_against_cuda_home():
    facts = workstation(
        {"CUDA_HOME": "/usr/local/cuda-12.6"},
        {"/usr/bin": ["gcc", "nvcc"]},
        [
            _command(
                ["/usr/bin/nvcc", "--version"], NVCC.replace("13.0", "12.0").replace("V12.0.88", "V12.0.140")
            )
        ],
    )
    assert facts["cuda.home_exists"].value is True
    assert facts["cuda.nvcc.on_path"].value is True
    assert facts["cuda.nvcc.path"].value == "/usr/bin/nvcc"
    assert facts["cuda.nvcc.version"].value == "12.0.140"
    assert facts["cuda.nvcc.home_version"].value == "12.6.88"


def test_host_compilers_from_path_and_variables():
    facts = workstation(
        {"CC": "ccache gcc-14", "CXX": "g++-14", "CUDAHOSTCXX": "clang++-14"},
        {},
        [
            _command(["gcc", "--version"], GCC),
            _command(["gcc-14", "--version"], GCC.replace("12.2.0", "14.2.0")),
            _command(["g++-14", "--version"], error="not found"),
            _command(["clang++-14", "--version"], CLANG),
        ],
    )
    rows = [
        tuple(facts[f"cuda.host_compilers[{i}].{f}"].value for f in ("variable", "command", "kind", "major"))
        for i in range(facts["cuda.host_compilers.count"].value)
    ]
    assert rows == [
        ("PATH", "gcc", "gcc", 12),
        ("CUDAHOSTCXX", "clang++-14", "clang", 14),
        ("CC", "ccache gcc-14", "gcc", 14),
        ("CXX", "g++-14", None, None),
    ]
    assert facts["cuda.host_compilers[3].version"].unknown == "not found"  # named, but not installed


def test_no_gcc_on_path_leaves_the_list_empty():
    facts = workstation({}, {}, [_command(["gcc", "--version"], error="not found")])
    assert facts["cuda.host_compilers.count"].value == 0


def test_nvcc_ccbin_directory_means_its_gcc():
    facts = workstation(
        {"NVCC_CCBIN": "/opt/gcc-13/bin/"},
        {"/opt/gcc-13/bin": ["gcc", "g++"]},
        [_command(["/opt/gcc-13/bin/gcc", "--version"], GCC.replace("12.2.0", "13.3.0"))],
    )
    assert facts["cuda.host_compilers.count"].value == 1
    assert facts["cuda.host_compilers[0].variable"].value == "NVCC_CCBIN"
    assert facts["cuda.host_compilers[0].command"].value == "/opt/gcc-13/bin/gcc"
    assert facts["cuda.host_compilers[0].version"].value == "13.3.0"


def test_a_compiler_that_fails_or_is_not_gcc_or_clang():
    facts = workstation(
        {"CC": "icx", "CXX": "nvc++"},
        {},
        [
            _command(["gcc", "--version"], GCC),
            _command(["icx", "--version"], "Intel(R) oneAPI DPC++/C++ Compiler 2024.0.0\n"),
            _command(["nvc++", "--version"], "", rc=1),
        ],
    )
    assert facts["cuda.host_compilers[1].kind"].value == "other"
    assert facts["cuda.host_compilers[1].major"].unknown == "not gcc or clang"
    assert facts["cuda.host_compilers[2].kind"].unknown == "nvc++ --version failed (rc=1)"


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
