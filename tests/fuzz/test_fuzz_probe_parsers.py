"""The probes' pure parse functions, fed hostile text: each returns a value of its documented shape, or
raises only what its caller turns into an unknown fact (noted per test), never anything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudoctor.facts import Fact
from gpudoctor.probes import container, cuda, driver, gpus, ldcache, libraries, python_env, system

from .strategies import FIXTURES, NASTY, json_values, lines_like, text, token, versionish

RAW = FIXTURES / "raw"
FILES = FIXTURES / "h200-driver580-snapshot" / "files"


def seed(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _h200_python() -> dict:
    data = json.loads((FIXTURES / "h200-driver580-snapshot" / "python.json").read_text())
    return data[data["default"]]


PY = _h200_python()
DISTS = {d["name"]: d for d in PY["distributions"]}

proc_version = lines_like(seed(RAW / "h200-proc-driver-nvidia-version"))
ldconfig_out = lines_like(seed(RAW / "h200-ldconfig-p.txt")[:60])
os_release = lines_like(seed(RAW / "h200-os-release"))
meminfo = lines_like(seed(RAW / "h200-meminfo"))
mounts = lines_like(seed(FILES / "proc/self/mounts") + ["shm /dev/shm tmpfs rw,size=65536k 0 0"])
limits = lines_like(seed(FILES / "proc/self/limits"))
nvcc = lines_like(seed(RAW / "h200-nvcc.txt"))
cgroup = lines_like(
    ["0::/", "12:memory:/docker/abc", "0::/kubepods/besteffort/pod1", "1:name=systemd:/lxc/x"]
)
header = lines_like(
    ["#define CUDNN_MAJOR 9", "#define CUDNN_MINOR 14", "#define CUDNN_PATCHLEVEL 0", "#if 1"]
)
torch_version_py = lines_like(DISTS["torch"]["texts"]["torch/version.py"].splitlines())
names = st.lists(
    st.one_of(
        st.sampled_from(
            ["libnvidia-ml.so.1", "libnvidia-ml.so.580.159.04", "libcudnn.so.9", "libcudnn.so.9.14.0"]
        ),
        st.tuples(st.sampled_from(["libnvidia-ml.so.", "libcudnn.so.", "libcuda.so."]), token).map("".join),
        text,
    ),
    max_size=8,
)
STEMS = st.sampled_from(["libnvidia-ml.so.", "libcudnn.so.", "libnccl.so.", "libcuda.so.", ""])


# --- driver and loader cache ------------------------------------------------------------------------------


@given(proc_version)
def test_parse_proc_version(text_):
    result = driver.parse_proc_version(text_)
    assert result is None or (isinstance(result[0], str) and result[1] in ("open", "proprietary"))


@given(st.one_of(json_values, st.integers()))
def test_decode_cuda_version_raises_only_what_derived_facts_catch(value):
    # driver._derived turns TypeError/ValueError into an unknown fact.
    try:
        version, major = driver.decode_cuda_version(value)
    except ValueError:
        return
    assert version.startswith(f"{major}.")


@given(st.one_of(json_values, versionish))
def test_derived_facts_never_raise(value):
    for convert in (driver.branch_of, str, lambda v: driver.decode_cuda_version(v)[0]):
        fact = driver._derived(Fact(value, "fuzz"), convert)
        assert isinstance(fact, Fact)


@given(text)
def test_is_gpu_class(text_):
    assert driver.is_gpu_class(text_) in (True, False)


@given(ldconfig_out, st.sampled_from(["libnvidia-ml.so.1", "libcudnn.so.9", "libcudart.so.13"]))
def test_parse_ldconfig_and_find_soname(text_, soname):
    entries = ldcache.parse_ldconfig(text_)
    assert all(isinstance(n, str) and isinstance(p, str) and p for n, p in entries)
    path = ldcache.find_soname(entries, soname)
    assert path is None or (soname, path) in entries


@given(names, STEMS)
def test_versioned_name(names_, stem):
    version = ldcache.versioned_name(names_, stem)
    assert version is None or stem + version in names_


# --- system --------------------------------------------------------------------------------------------


@given(os_release)
def test_parse_os_release(text_):
    fields = system.parse_os_release(text_)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())


@given(st.one_of(text, st.from_regex(r"\A[0-9,\- ]{0,20}\Z")))
def test_parse_cpu_list_raises_only_value_error(text_):
    # system._parsed turns ValueError into an unknown fact ("could not parse").
    try:
        assert isinstance(system.parse_cpu_list(text_), int)
    except ValueError:
        pass


@given(meminfo)
def test_parse_meminfo_total(text_):
    total = system.parse_meminfo_total(text_)
    assert total is None or 0 <= total < 10**24


@given(limits)
def test_parse_memlock(text_):
    value = system.parse_memlock(text_)
    assert value is None or -1 <= value < 10**20


@given(mounts, st.sampled_from(["/dev/shm", "/", "/proc"]))
def test_find_mount_and_parse_size(text_, where):
    found = system.find_mount(text_, where)
    if found is not None:
        fstype, opts = found
        assert isinstance(fstype, str) and isinstance(opts, dict)
        if "size" in opts:
            size = system.parse_size(opts["size"])
            assert size is None or size >= 0


@given(st.one_of(text, st.from_regex(r"\A[0-9]{1,30}[kmgtpeKMGTPE]?\Z")))
def test_parse_size(text_):
    size = system.parse_size(text_)
    assert size is None or (isinstance(size, int) and size >= 0)


@given(lines_like(["flags\t\t: fpu vme hypervisor", "flags : sse", "processor : 0"]))
def test_has_hypervisor_flag(text_):
    assert system.has_hypervisor_flag(text_) in (True, False)


@given(st.one_of(st.none(), text), st.one_of(st.none(), text), st.one_of(st.none(), st.booleans()))
def test_classify_virtualization(vendor, product, hypervisor):
    kind = system.classify_virtualization(vendor, product, hypervisor)
    assert kind is None or isinstance(kind, str)


# --- container -------------------------------------------------------------------------------------------


@given(cgroup, st.booleans(), st.booleans(), st.one_of(st.none(), text), st.one_of(st.none(), text))
def test_container_detection(cgroup_text, dockerenv, containerenv, k8s, container_env):
    assert container.parse_cgroup_runtime(cgroup_text) in (None, "kubernetes", "docker", "containerd", "lxc")
    found = container.detect_runtime(dockerenv, containerenv, k8s, container_env, cgroup_text)
    assert found is None or all(isinstance(x, str) for x in found)
    assert container.parse_go_bool(container_env or "") in (True, False, None)


@given(text)
def test_toolkit_config_parses_or_raises_value_error(config):
    try:
        mode, disable = container.parse_toolkit_config(config)
    except ValueError:
        return
    assert isinstance(mode, str) and isinstance(disable, bool)


# --- CUDA --------------------------------------------------------------------------------------------------


@given(
    st.one_of(
        text,
        json_values.map(json.dumps),
        st.builds(lambda v: json.dumps({"cuda": {"version": v}}), json_values),
        st.integers(1, 200_000).map(lambda n: "[" * n),
    )
)
def test_parse_version_json(text_):
    version = cuda.parse_version_json(text_)
    assert version is None or (isinstance(version, str) and version)


@given(nvcc)
def test_parse_nvcc_version(text_):
    version = cuda.parse_nvcc_version(text_)
    assert version is None or version[0].isdigit()


@given(
    st.one_of(st.none(), text),
    st.one_of(st.none(), lines_like(["/usr/local/cuda/compat", "/a/b"]).map(lambda s: s.replace("\n", ":"))),
)
def test_compat_active(compat_dir, ld_library_path):
    assert cuda.compat_active(compat_dir, ld_library_path) in (True, False)


# --- cuDNN, NCCL -------------------------------------------------------------------------------------------


@given(names, STEMS)
def test_versions_in_dir(names_, stem):
    for version, name in libraries.versions_in_dir(names_, stem):
        assert isinstance(version, str) and name.startswith(stem)


@given(header)
def test_parse_cudnn_header(text_):
    version = libraries.parse_cudnn_header(text_)
    assert version is None or version.count(".") == 2


@given(st.lists(st.one_of(versionish, text, st.sampled_from(NASTY)), max_size=6))
def test_version_lists(versions):
    ordered = libraries.newest_first(versions)
    assert sorted(ordered) == sorted(set(versions))
    assert 0 <= libraries.count_distinct(versions) <= len(set(versions))


@given(json_values, st.sampled_from([libraries.CUDNN[2], libraries.NCCL[2], cuda.CUDART_DISTS]))
def test_pip_copies_of_any_dump(dump, dist_name):
    dump = dump if isinstance(dump, dict) else {"distributions": dump}
    for copy in libraries.pip_copies(dump, dist_name, "libcudnn.so"):
        assert copy.origin == "pip"


@given(st.one_of(st.none(), text, lines_like(["/usr/lib", "/opt/x", ""]).map(lambda s: s.replace("\n", ":"))))
def test_split_path_list(value):
    dirs = libraries.split_path_list(value)
    assert len(dirs) == len(set(dirs)) and "" not in dirs


# --- Python environment: torch/version.py, TF build_info, versions, requirements --------------------------


@given(st.one_of(torch_version_py, text))
def test_parse_torch_version_py(text_):
    info = python_env.parse_torch_version_py(text_)
    assert set(info) == {"version", "cuda", "hip"}
    assert all(v is None or isinstance(v, str) for v in info.values())


TF_SEEDS = [
    "build_info = {'is_cuda_build': True, 'cuda_version': '12.5.1', 'cudnn_version': '9'}",
    "import collections",
    "build_info = collections.OrderedDict([('is_cuda_build', True), ('cuda_version', '64_112')])",
    "build_info = " + "[" * 500 + "]" * 500,
    "build_info = (" * 50,
]


@given(st.one_of(lines_like(TF_SEEDS), text))
def test_parse_tf_build_info(text_):
    info = python_env.parse_tf_build_info(text_)
    assert isinstance(info, dict)
    for key in ("cuda_version", "cudnn_version"):
        v = python_env.tf_version(info.get(key))
        assert v is None or v[0].isdigit()


@given(st.one_of(json_values, versionish))
def test_tf_version(raw):
    v = python_env.tf_version(raw)
    assert v is None or isinstance(v, str)


@given(st.one_of(versionish, text, st.tuples(versionish, text).map("+".join)))
def test_version_tags(version):
    assert isinstance(python_env.public_version(version), str)
    tag = python_env.local_tag(version)
    build = python_env.local_build(tag)
    assert build.get("build") in (None, "cuda", "rocm", "cpu")


requirement = st.one_of(
    st.sampled_from(DISTS["torch"]["requires"]),
    st.tuples(st.sampled_from(DISTS["torch"]["requires"]), token).map("".join),
    text,
    json_values,
)


@given(st.one_of(st.none(), st.lists(requirement, max_size=6)))
def test_pins_of_package_requirements(requires):
    pins = python_env.pins(requires)
    assert all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in pins.items())


def _dist(name_: st.SearchStrategy[str]) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {"name": name_},
        optional={
            "version": st.one_of(versionish, text, json_values),
            "requires": st.one_of(st.lists(requirement, max_size=4), json_values),
            "texts": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        python_env.TORCH_VERSION_PY: st.one_of(torch_version_py, json_values),
                        python_env.TF_BUILD_INFO: st.one_of(lines_like(TF_SEEDS), json_values),
                        python_env.ORT_VERSION_INFO: st.one_of(
                            lines_like(["cuda_version = '12.4'", "cudnn_version = '9.1'"]), json_values
                        ),
                    },
                ),
                json_values,
            ),
            "libs": st.one_of(st.lists(text, max_size=3), json_values),
            "installer": st.one_of(st.sampled_from(["pip", "uv", ""]), json_values),
            "location": st.one_of(text, json_values),
        },
    )


FRAMEWORK_NAMES = st.sampled_from(
    [
        "torch", "tensorflow", "tensorflow-cpu", "tensorflow-rocm", "jax", "jaxlib", "jax-cuda13-plugin",
        "jax-rocm60-plugin", "cupy", "cupy-cuda13x", "cupy-cuda117", "cupy-rocm-5-0", "onnxruntime",
        "onnxruntime-gpu", "onnxruntime-rocm", "nvidia-cudnn-cu12", "nvidia-cuda-runtime",
    ]
)  # fmt: skip


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "distributions": st.one_of(
                st.lists(st.one_of(_dist(FRAMEWORK_NAMES), json_values), max_size=5), json_values
            ),
            "prefix": st.one_of(text, json_values),
            "pyvenv_cfg": st.one_of(lines_like(["uv = 0.5", "home = /usr"]), json_values),
            "conda_meta": json_values,
        },
    )
)
def test_frameworks_and_installer_of_any_dump(dump):
    found = python_env.frameworks(dump)
    for fw in found:
        member = python_env._member(fw, "fuzz")
        assert list(member) == list(python_env.FRAMEWORK_FIELDS)
    assert python_env.installer(dump) in ("pip", "uv", "conda", "poetry")


@given(st.sets(st.one_of(FRAMEWORK_NAMES, text), max_size=4), st.one_of(versionish, text))
def test_jax_and_cupy_builds(names_, jaxlib_version):
    assert python_env.jax_build(names_, jaxlib_version)["build"] in ("cuda", "rocm", "cpu")
    for n in names_:
        assert isinstance(python_env.cupy_build(n), dict)


# --- GPUs: NVML values as a snapshot may hold them -------------------------------------------------------

DECODERS = [
    gpus.bus_id, gpus.brand_name, gpus.architecture_name, gpus.compute_capability, gpus.watts,
    gpus.event_reason_names, gpus.pcie_generation, gpus.link_width, gpus._on, gpus._int,
]  # fmt: skip


@pytest.mark.parametrize("decode", DECODERS, ids=lambda f: f.__name__)
@given(value=st.one_of(json_values, text, st.from_regex(r"\A[0-9.]{1,8} GT/s( PCIe)?\Z")))
def test_nvml_decoders_through_convert(decode, value):
    # gpus.reading_fact is how every decoder is called; a bad value becomes an unknown fact.
    assert isinstance(gpus.reading_fact(value, decode, "fuzz"), Fact)
