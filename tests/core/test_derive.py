"""Derived facts: computed from collected facts and the knowledge tables, never from the host."""

from __future__ import annotations

import pytest

from gpudoctor.compat import cuda_variant, driver_verdict, jits_ptx, runs_on
from gpudoctor.datafiles import Problem
from gpudoctor.derive import (
    DERIVED,
    arch_from_torch,
    binary_arch,
    binary_gaps,
    compiled_arch,
    derive,
    newer_than_table,
    nvlink_wired,
)
from gpudoctor.facts import Facts, known, spec_name, unknown
from gpudoctor.probes import interconnect
from gpudoctor.table_digest import newest_row


def facts(values: dict, missing: dict = None) -> Facts:
    """Facts from {name: value}; a tuple ("?", why) is an unknown fact."""
    items = {
        n: unknown(v[1], "test") if isinstance(v, tuple) else known(v, "test") for n, v in values.items()
    }
    return Facts(items, missing or {})


def torch_on(ccs: list, version="2.11.0", cuda="13.0", build="cuda") -> Facts:
    gpus = {f"gpus[{i}].compute_capability": cc for i, cc in enumerate(ccs)}
    return facts(
        {
            "gpus.count": len(ccs),
            "frameworks.count": 1,
            "frameworks[0].name": "torch",
            "frameworks[0].build": build,
            "frameworks[0].version": version,
            "frameworks[0].cuda": cuda,
            "python.machine": "x86_64",
            **gpus,
        }
    )


def value(f: Facts, name: str):
    fact = f.get(name)
    return fact.value if fact.known else ("unknown", fact.unknown)


# --- pure decisions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cc", "arch", "expected"),
    [
        ("9.0", ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"], True),
        ("8.9", ["7.5", "8.0", "8.6", "9.0"], True),  # the sm_86 cubin runs on 8.9
        ("8.0", ["8.6", "9.0"], False),  # but not on 8.0: a cubin runs on its minor version and above
        ("12.0", ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"], False),  # RTX 5090, cu126
        ("12.1", ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], True),  # GB10 runs sm_120 code
        ("10.3", ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"], True),
        ("7.0", ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0+PTX"], False),  # V100 on cu130
        ("13.0", ["7.5", "12.0+PTX"], True),  # a newer GPU JIT-compiles the embedded PTX
        ("11.0", ["9.0", "12.0+PTX"], False),  # PTX for 12.0 cannot run on an older 11.0
        ("9.0", [], False),
    ],
)
def test_runs_on(cc, arch, expected):
    assert runs_on(cc, arch) is expected


def test_torch_variant():
    assert cuda_variant("12.8") == "cu128"
    assert cuda_variant("13.0.2") == "cu130"
    assert cuda_variant("13") is None


def test_compiled_arch_from_the_knowledge_table():
    assert compiled_arch("2.11.0", "12.6") == (["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"], None)
    # torch.yaml pt-wheel-2.11: the 2.11.0+cu130 release wheel carries no PTX
    assert compiled_arch("2.11.0", "13.0")[0] == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
    # No source read gives the 2.6 cu126 list (docs/knowledge.md, "Variants without an arch list")
    arch, why = compiled_arch("2.6.0", "12.6")
    assert arch is None and why == "the knowledge table does not list the architectures of torch 2.6.0 cu126"
    assert compiled_arch("2.11.0", "12.4") == (
        None,
        "torch 2.11.0 has no cu124 variant in the knowledge table",
    )
    assert compiled_arch("1.4.0", "10.1") == (None, "torch 1.4 is not in the torch table")


def test_compiled_arch_follows_the_machine():
    # torch.yaml 2.11 cu130: x86_64 7.5-12.0, aarch64 8.0, 9.0, 10.0, 11.0, 12.0 (pt-wheel-2.11).
    assert compiled_arch("2.11.0", "13.0", "aarch64") == (["8.0", "9.0", "10.0", "11.0", "12.0"], None)
    assert compiled_arch("2.11.0", "13.0", None) == (
        None,
        "the CPU architecture is unknown, and torch 2.11.0 cu130's x86_64 and aarch64 wheels are built for "
        "different GPUs",
    )
    # 2.11 cu126 lists no aarch64 architectures: unknown there, the x86_64 list when the machine is unknown.
    assert compiled_arch("2.11.0", "12.6", "aarch64") == (
        None,
        "the knowledge table does not list the aarch64 architectures of torch 2.11.0 cu126",
    )
    assert compiled_arch("2.11.0", "12.6", None)[0] == ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"]


# --- the stage ----------------------------------------------------------------------------------------


def test_an_rtx_5090_with_a_cu126_build_has_no_kernels():
    f = derive(torch_on(["12.0", "12.0"], cuda="12.6"))
    assert value(f, "frameworks[0].arch_list") == ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"]
    assert value(f, "frameworks[0].unsupported_gpus") == [0, 1]
    assert value(f, "frameworks[0].unsupported_gpu_count") == 2
    assert value(f, "frameworks[0].unsupported_ccs") == ["12.0"]
    assert f.get("frameworks[0].unsupported_gpus").source == (
        "derived:gpus.count, gpus[0].compute_capability, gpus[1].compute_capability, frameworks[0].arch_list"
    )


def test_a_mixed_host_names_only_the_gpu_left_out():
    f = derive(torch_on(["7.0", "9.0"], cuda="13.0"))  # a V100 beside an H100, torch 2.11 cu130
    assert value(f, "frameworks[0].unsupported_gpus") == [0]
    assert value(f, "frameworks[0].unsupported_ccs") == ["7.0"]


def test_h200_with_cu130_is_supported_and_no_gpu_is_none_left_out():
    assert value(derive(torch_on(["9.0"])), "frameworks[0].unsupported_gpu_count") == 0
    assert value(derive(torch_on([])), "frameworks[0].unsupported_gpus") == []


def test_arch_unknown_for_what_the_table_lacks():
    f = derive(torch_on(["12.0"], version="2.6.0", cuda="12.6"))  # torch.yaml has no 2.6 cu126 arch list
    why = "the knowledge table does not list the architectures of torch 2.6.0 cu126"
    assert value(f, "frameworks[0].arch_list") == ("unknown", why)
    assert value(f, "frameworks[0].unsupported_gpu_count") == ("unknown", why)


def test_an_unknown_compute_capability_leaves_the_lists_unknown():
    f = torch_on(["9.0"])
    items = dict(f.items())
    items["gpus[0].compute_capability"] = unknown("GPU is lost", "test")
    f = Facts(items)
    assert value(derive(f), "frameworks[0].unsupported_gpus") == ("unknown", "GPU is lost")
    assert value(derive(f), "frameworks[0].arch_list")[0] == "7.5"


@pytest.mark.parametrize(("name", "build"), [("torch", "cpu"), ("torch", "rocm"), ("jax", "cuda")])
def test_arch_is_only_derived_for_torch_cuda_builds(name, build):
    f = derive(facts({"frameworks.count": 1, "frameworks[0].name": name, "frameworks[0].build": build}))
    assert value(f, "frameworks[0].arch_list") == ("unknown", "only known for torch CUDA builds")
    assert value(f, "frameworks[0].unsupported_gpu_count") == ("unknown", "only known for torch CUDA builds")


def test_unknown_build_gives_its_reason():
    f = torch_on(["9.0"])
    items = dict(f.items())
    items["frameworks[0].build"] = unknown("not determined", "test")
    assert value(derive(Facts(items)), "frameworks[0].arch_list") == ("unknown", "not determined")


def test_cpus_per_gpu():
    assert value(derive(facts({"system.cpus": 16, "gpus.count": 1})), "system.cpus_per_gpu") == 16.0
    assert value(derive(facts({"system.cpus": 30, "gpus.count": 8})), "system.cpus_per_gpu") == 3.75
    no_gpu = derive(facts({"system.cpus": 30, "gpus.count": 0}))
    assert value(no_gpu, "system.cpus_per_gpu") == ("unknown", "no GPU")
    timed_out = facts({"system.cpus": 30}, missing={"gpus": "timed out"})
    assert value(derive(timed_out), "system.cpus_per_gpu") == ("unknown", "timed out")
    assert derive(timed_out).get("system.cpus_per_gpu").source == "derived:system.cpus, gpus.count"


def test_rocm_frameworks():
    f = facts({"frameworks.count": 2, "frameworks[0].build": "rocm", "frameworks[1].build": "cpu"})
    assert value(derive(f), "python.rocm_frameworks") == 1
    f = facts({"frameworks.count": 1, "frameworks[0].build": ("?", "source build")})
    assert value(derive(f), "python.rocm_frameworks") == ("unknown", "source build")
    assert value(derive(facts({"frameworks.count": 0})), "python.rocm_frameworks") == 0


def test_nothing_is_derived_from_probes_that_did_not_run():
    # A preflight check: no python or system probe facts, and none of theirs failed.
    f = derive(facts({"gpus.count": 1, "gpus[0].compute_capability": "9.0"}))
    assert "system.cpus_per_gpu" not in f and "python.rocm_frameworks" not in f
    assert len(f) == 2
    # ...but a probe that ran and crashed still leaves its derived facts unknown, with why.
    crashed = derive(facts({"gpus.count": 1}, missing={"python": "probe crashed: ValueError"}))
    assert value(crashed, "python.rocm_frameworks") == ("unknown", "probe crashed: ValueError")


def test_derived_facts_are_the_documented_ones():
    deep = {
        "runtime.torch.build": known("cuda", "test"),
        "runtime.torch.arch_list": known(["sm_90"], "test"),
        "runtime.torch.capabilities": known(["9.0"], "test"),
        "runtime.torch.cudnn": known("9.10.2", "test"),
        "cuda.toolkit.version": known("13.0.88", "test"),
        "driver.version": known("580.159.04", "test"),
        "cuda.host_compilers.count": known(1, "test"),
        "cuda.host_compilers[0].kind": known("gcc", "test"),
        "cuda.home_source": known("default", "test"),
        "cuda.nvcc.on_path": known(True, "test"),
        "cuda.nvcc.version": known("13.0.88", "test"),
    }
    nvlink = {
        f"gpus[0].nvlink.{k}": known(v, "test")
        for k, v in {"links": 18, "links_up": 18, "links_down": 0, "down": []}.items()
    }
    base = Facts(
        {
            **dict(torch_on(["9.0", "7.0"], cuda="13.0").items()),
            "system.cpus": known(16, "test"),
            "extensions.count": known(1, "test"),
            "extensions[0].arch": known(["sm_80"], "test"),
            **deep,
            **nvlink,
            "xid.count": known(1, "test"),
            "xid[0].code": known(79, "test"),
            "xid[0].pci": known("0000:3b:00", "test"),
            "env.cuda_visible_devices": known("0,1", "test"),
            "env.nccl_socket_ifname": known("eth", "test"),
            "interconnect.net_interfaces": known(["eth0"], "test"),
            "interconnect.net_running": known(["eth0"], "test"),
            "python.ctranslate2": known("4.5.0", "test"),
            "python.faster_whisper": unknown("not installed", "test"),
            "cuda_libs.loader_sonames": known([], "test"),
            "cuda_libs.wheel_sonames": known([], "test"),
            "system.kernel": known("6.8.0-90-generic", "test"),
            "nccl.versions": known(["2.21.5"], "test"),
            "interconnect.memory_peers_nv_mem": known(False, "test"),
            "interconnect.peermem_loaded": known(False, "test"),
            "interconnect.rdma.device_count": known(0, "test"),  # NCCL's paths: nccl_paths.*
            "pci.nvidia_driver_addresses": known(["0000:3b:00.0"], "test"),
            # an image the runtime refuses, so that every container.require_* fact is there
            "container.nvidia_requires": known(["NVIDIA_REQUIRE_CUDA=cuda>=99"], "test"),
            "container.nvidia_visible_devices": known("all", "test"),
            "driver.max_cuda": known("13.0", "test"),
            "container.cuda_version": unknown("not set", "test"),
            "container.nvidia_disable_require": unknown("not set", "test"),
            # the display probe's: no monitor, no process on a GPU (display.* and display_gpus[])
            "display.connectors": known([], "test"),
            "gpu_processes.count": known(0, "test"),
        }
    )
    added = {spec_name(name) for name, _ in derive(base).items()} - {
        spec_name(name) for name, _ in base.items()
    }
    assert added == set(DERIVED)


# --- NVLink: the links a GPU's model wires --------------------------------------------------------------

H100_PCIE_WIRED = (
    0,
    1,
    2,
    3,
    6,
    7,
    8,
    9,
    12,
    13,
    14,
    15,
)  # gpus.yaml h100-pcie: 12 links, 4/5/10/11/16/17 unwired


@pytest.mark.parametrize(
    ("links", "up", "down", "wired", "expected"),
    [
        # The catalogue does not know the model: every reported link counts, as before.
        (18, 16, [3, 11], None, (18, 2, [3, 11])),
        (0, 0, [], None, (0, 0, [])),
        # H100 PCIe with its bridges: the six unwired links are inactive by design.
        (18, 12, [4, 5, 10, 11, 16, 17], H100_PCIE_WIRED, (12, 0, [])),
        # ... and one wired link down besides.
        (18, 11, [4, 5, 7, 10, 11, 16, 17], H100_PCIE_WIRED, (12, 1, [7])),
        # ... without its bridges: all 12 wired links down.
        (18, 0, list(range(18)), H100_PCIE_WIRED, (12, 12, list(H100_PCIE_WIRED))),
        # A card whose active set differs from the catalogue's numbering but has its 12 links up.
        (18, 12, [3, 5, 10, 11, 16, 17], H100_PCIE_WIRED, (12, 0, [3])),
        # 12 wired links (A100 SXM4) and NVML answering for links 12 to 17 it does not have.
        (18, 12, [12, 13, 14, 15, 16, 17], tuple(range(12)), (12, 0, [])),
        # NVML reports fewer links than the model wires: judged on what it reports.
        (6, 6, [], tuple(range(18)), (6, 0, [])),
    ],
)
def test_nvlink_wired(links, up, down, wired, expected):
    assert nvlink_wired(links, up, down, wired) == expected


def nvlink_gpu(name, links, down) -> dict:
    up = links - len(down)
    return {
        "gpus.count": 1,
        "gpus[0].name": name,
        "gpus[0].nvlink.links": links,
        "gpus[0].nvlink.links_up": up,
        "gpus[0].nvlink.links_down": len(down),
        "gpus[0].nvlink.down": down,
    }


def wired_facts(f: Facts) -> tuple:
    return tuple(value(f, f"gpus[0].nvlink.{k}") for k in ("links_wired", "links_down_wired", "down_wired"))


def test_nvlink_derived_from_the_catalogue():
    # gpus.yaml h100-pcie: nvlink_links 12, nvlink_unwired [4, 5, 10, 11, 16, 17]
    f = derive(facts(nvlink_gpu("NVIDIA H100 PCIe", 18, [4, 5, 10, 11, 16, 17])))
    assert wired_facts(f) == (12, 0, [])
    source = f.get("gpus[0].nvlink.links_wired").source
    assert source.startswith("derived:") and "gpus[0].name" in source
    # gpus.yaml h100-sxm: nvlink_links 18
    assert wired_facts(derive(facts(nvlink_gpu("NVIDIA H100 80GB HBM3", 18, [9])))) == (18, 1, [9])
    # No row for the model: today's judgement.
    assert wired_facts(derive(facts(nvlink_gpu("NVIDIA H800", 18, [4, 5])))) == (18, 2, [4, 5])


def test_nvlink_unknown_links_leave_the_wired_facts_unknown():
    f = derive(
        facts({**nvlink_gpu("NVIDIA H200", 18, []), "gpus[0].nvlink.links_up": ("?", "no permission")})
    )
    assert wired_facts(f) == (("unknown", "no permission"),) * 3


def test_nvlink_an_unknown_name_is_an_unknown_model():
    f = derive(facts({**nvlink_gpu("?", 18, [4]), "gpus[0].name": ("?", "not supported")}))
    assert wired_facts(f) == (18, 1, [4])


def test_nvlink_the_catalogue_is_not_read_when_every_link_is_up(monkeypatch):
    import gpudoctor.knowledge as kn

    def boom(*args):
        raise AssertionError("the catalogue was read")

    monkeypatch.setattr(kn, "wired_nvlinks", boom)
    assert wired_facts(derive(facts(nvlink_gpu("NVIDIA H100 PCIe", 18, [])))) == (18, 0, [])
    assert wired_facts(derive(facts(nvlink_gpu("NVIDIA H200", 0, [])))) == (0, 0, [])


def test_nvlink_a_broken_catalogue_says_why(monkeypatch):
    import gpudoctor.knowledge as kn

    def broken(*args):
        raise kn.KnowledgeError([Problem("gpus.yaml", 3, "", "", "not valid YAML")])

    monkeypatch.setattr(kn, "wired_nvlinks", broken)
    f = derive(facts(nvlink_gpu("NVIDIA H100 PCIe", 18, [4])))
    assert value(f, "gpus[0].nvlink.links_wired") == ("unknown", "gpus.yaml:3: not valid YAML")


# --- runtime truth (check --deep) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["sm_50", "sm_80", "sm_86", "sm_90"], ["5.0", "8.0", "8.6", "9.0"]),
        (["sm_75", "sm_90", "sm_100", "sm_120", "compute_120"], ["7.5", "9.0", "10.0", "12.0+PTX"]),
        (["sm_90a", "sm_90", "compute_80"], ["8.0+PTX", "9.0"]),  # PTX alone for 8.0; sm_90a counts as 9.0
        ([], []),
    ],
)
def test_arch_from_torch(entries, expected):
    assert arch_from_torch(entries) == expected


def test_arch_from_torch_refuses_what_is_not_a_cuda_architecture():
    with pytest.raises(ValueError, match="gfx90a"):
        arch_from_torch(["gfx90a"])


def deep(f: Facts, **runtime) -> Facts:
    """f plus runtime.torch.* facts: runtime.torch.<key> = value; a tuple ("?", why) is unknown."""
    items = dict(f.items())
    for key, v in runtime.items():
        items[f"runtime.torch.{key}"] = unknown(v[1], "test") if isinstance(v, tuple) else known(v, "test")
    return Facts(items)


def test_the_imported_torch_arch_list_beats_the_knowledge_table():
    # The table says torch 2.11 cu126 has no 12.0 code; this build says it has (a custom build, say).
    f = derive(deep(torch_on(["12.0"], cuda="12.6"), build="cuda", arch_list=["sm_90", "sm_120"]))
    assert value(f, "frameworks[0].arch_list") == ["9.0", "12.0"]
    assert value(f, "frameworks[0].unsupported_gpu_count") == 0
    assert f.get("frameworks[0].arch_list").source == "derived:runtime.torch.arch_list"
    # A version the table does not know is judged too, from the runtime's list.
    f = derive(deep(torch_on(["12.0"], version="2.5.1", cuda="12.4"), build="cuda", arch_list=["sm_90"]))
    assert value(f, "frameworks[0].unsupported_ccs") == ["12.0"]


def test_the_table_is_used_where_the_runtime_list_is_unknown():
    f = derive(deep(torch_on(["12.0"], cuda="12.6"), build="cuda", arch_list=("?", "timed out")))
    assert value(f, "frameworks[0].arch_list") == ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"]


def test_devices_the_imported_torch_has_no_code_for():
    caps = ["9.0", "12.0", "12.0"]
    f = derive(deep(facts({}), arch_list=["sm_80", "sm_90"], capabilities=caps, cudnn=("?", "x")))
    assert value(f, "runtime.torch.unsupported_devices") == [1, 2]
    assert value(f, "runtime.torch.unsupported_device_count") == 2
    assert value(f, "runtime.torch.unsupported_ccs") == ["12.0"]
    # PTX for 9.0 runs on 12.0, JIT-compiled by a driver that meets the build's CUDA (12.6: 560.28.03).
    f = derive(deep(facts({"driver.version": "570.172.08"}), arch_list=["sm_80", "compute_90"],
                    capabilities=caps, cuda="12.6"))  # fmt: skip
    assert value(f, "runtime.torch.unsupported_device_count") == 0
    unavailable = derive(deep(facts({}), arch_list=["sm_80"], capabilities=("?", "CUDA is not available")))
    assert value(unavailable, "runtime.torch.unsupported_device_count") == (
        "unknown",
        "CUDA is not available",
    )
    crashed = derive(facts({}, missing={"runtime": "probe crashed: KeyError"}))
    assert value(crashed, "runtime.torch.unsupported_devices") == ("unknown", "probe crashed: KeyError")


def test_the_cudnn_torch_pins_to_the_precision_torch_reports():
    f = torch_on(["9.0"])
    items = {**dict(f.items()), "frameworks[0].cudnn": known("9.10.2.21", "test")}
    assert value(derive(deep(Facts(items), cudnn="9.1.0")), "runtime.torch.cudnn_pinned") == "9.10.2"
    items["frameworks[0].cudnn"] = unknown("not pinned", "test")
    assert value(derive(deep(Facts(items), cudnn="9.1.0")), "runtime.torch.cudnn_pinned") == (
        "unknown",
        "not pinned",
    )
    no_torch = facts({"frameworks.count": 1, "frameworks[0].name": "jax", "runtime.torch.cudnn": ("?", "x")})
    assert value(derive(no_torch), "runtime.torch.cudnn_pinned") == ("unknown", "torch is not installed")
    assert "runtime.torch.cudnn_pinned" not in derive(torch_on(["9.0"]))  # no --deep: not derived


# --- one compatibility model: derive and the resolvers agree on PTX under minor-version compatibility ---


def test_ptx_under_minor_version_compatibility_derive_and_resolver_agree():
    """A build for CUDA 12.6 with sm_80 code and compute_80 PTX, on an H100 (9.0): the GPU has only the
    PTX. Driver 535.183.01 runs CUDA 12.6 only through minor-version compatibility (12.x floor 525.60.13,
    12.6's own minimum 560.28.03), and such a driver cannot JIT-compile PTX from the newer toolkit. Before
    gpudoctor/compat.py, derive said the H100 was supported (any PTX at or below 9.0 counts) while the
    torch resolver said it was not; now both ask compat and say the same, on either side of the minimum."""
    from gpudoctor.knowledge import TorchVariant, knowledge
    from gpudoctor.resolvers import Host, gpu_verdict

    variant = TorchVariant(label="test cu126", source="test", also=(), verified=True, note="",
                           confirmed=(), line=0, name="cu126", cuda="12.6", cudnn=None,
                           arch=("8.0+PTX",), experimental=False)  # fmt: skip
    for driver, runs in (("535.183.01", False), ("560.28.03", True)):
        f = derive(deep(torch_on(["9.0"], version="2.5.1", cuda="12.6"), build="cuda",
                        arch_list=["sm_80", "compute_80"], capabilities=["9.0"], cuda="12.6"))  # fmt: skip
        f = derive(Facts({**dict(f.items()), "driver.version": known(driver, "test")}))
        derived = value(f, "frameworks[0].unsupported_gpus"), value(f, "runtime.torch.unsupported_devices")
        assert derived == (([], []) if runs else ([0], [0])), driver
        host = Host(driver=driver, python="3.12", gpus=(("9.0", "NVIDIA H100 80GB HBM3"),))
        dv = driver_verdict("12.6", driver, knowledge())
        assert dv.runs and dv.minor_compat is not runs and jits_ptx("12.6", driver, knowledge()) is runs
        assert gpu_verdict(variant, host, full_driver=not dv.minor_compat)[0] is runs, driver
    assert runs_on("9.0", ["8.0+PTX"]) and not runs_on("9.0", ["8.0+PTX"], ptx_jit=False)


def test_ptx_reliance_with_an_unknown_driver_is_unknown():
    f = derive(deep(torch_on(["9.0"], version="2.5.1", cuda="12.6"), build="cuda",
                    arch_list=["sm_80", "compute_80"], capabilities=["9.0"], cuda="12.6"))  # fmt: skip
    assert value(f, "frameworks[0].unsupported_gpus")[0] == "unknown"
    # Native code needs no answer about the driver: known, and the driver is not among the inputs.
    f = derive(deep(torch_on(["9.0"], version="2.5.1", cuda="12.6"), build="cuda", arch_list=["sm_90"]))
    assert value(f, "frameworks[0].unsupported_gpus") == []
    assert "driver.version" not in f.get("frameworks[0].unsupported_gpus").source


# --- the CUDA toolkit against the driver, and the host compilers its nvcc accepts ----------------------


@pytest.mark.parametrize(
    ("toolkit", "driver", "expected"),
    [
        ("13.0.88", "580.159.04", "full"),  # nvcc's version: only major.minor counts
        ("13.0.2", "580.65.06", "full"),  # version.json's: the GA minimum decides, as the driver reports 13.0
        ("13.1.80", "580.95.05", "minor_compat"),  # below 13.1's 590.44.01, above the 13.x floor 580
        ("13.0.88", "570.172.08", "none"),  # a newer major
        ("12.8.93", "520.61.05", "none"),
        ("11.8.89", "580.159.04", "full"),  # an older major on a newer driver
        ("13.5.37", "610.43.02", ("unknown", "CUDA 13.5 is not in the cuda_drivers table")),
        ("10.2.89", "580.159.04", ("unknown", "CUDA 10.2 is not in the cuda_drivers table")),
    ],
)
def test_toolkit_driver_support(toolkit, driver, expected):
    f = derive(facts({"cuda.toolkit.version": toolkit, "driver.version": driver}))
    assert value(f, "cuda.toolkit.driver_support") == expected


def test_toolkit_driver_support_agrees_with_compat():
    """The derived fact is compat.driver_verdict's answer, not a second encoding of it."""
    from gpudoctor.knowledge import knowledge

    for toolkit, driver in [("13.1", "580.95.05"), ("13.0", "570.172.08"), ("12.4", "550.54.14")]:
        verdict = driver_verdict(toolkit, driver, knowledge())
        expected = "none" if not verdict.runs else "minor_compat" if verdict.minor_compat else "full"
        f = derive(facts({"cuda.toolkit.version": toolkit, "driver.version": driver}))
        assert value(f, "cuda.toolkit.driver_support") == expected


def test_toolkit_driver_support_unknown_inputs_and_profiles_without_cuda():
    f = derive(facts({"cuda.toolkit.version": ("?", "not installed"), "driver.version": "580.159.04"}))
    assert value(f, "cuda.toolkit.driver_support") == ("unknown", "not installed")
    f = derive(facts({"cuda.toolkit.version": "13.0.88", "driver.version": ("?", "NVML library not found")}))
    assert value(f, "cuda.toolkit.driver_support") == ("unknown", "NVML library not found")
    assert "cuda.toolkit.driver_support" not in derive(facts({"driver.version": "580.159.04"}))


def compilers(toolkit, *members) -> Facts:
    items = {"cuda.toolkit.version": toolkit, "cuda.host_compilers.count": len(members)}
    for i, (kind, major) in enumerate(members):
        items[f"cuda.host_compilers[{i}].kind"] = kind
        items[f"cuda.host_compilers[{i}].major"] = major
    return derive(facts(items))


def test_newest_host_compiler_the_toolkit_accepts():
    f = compilers("12.4.131", ("gcc", 14), ("clang", 18), ("other", ("?", "not gcc or clang")))
    assert value(f, "cuda.host_compilers[0].max_major") == 13
    assert value(f, "cuda.host_compilers[1].max_major") == 17
    assert value(f, "cuda.host_compilers[2].max_major") == ("unknown", "only gcc and clang are judged")
    assert value(compilers("13.0.2", ("gcc", 15)), "cuda.host_compilers[0].max_major") == 15


def test_newest_host_compiler_unknown_where_the_table_is_silent():
    f = compilers("11.4.152", ("gcc", 11))
    assert value(f, "cuda.host_compilers[0].max_major") == (
        "unknown",
        "CUDA 11.4 is not in the host_compilers table",
    )
    f = compilers("12.2.140", ("clang", 16))  # the clang limit changed within 12.2: not recorded
    assert value(f, "cuda.host_compilers[0].max_major") == (
        "unknown",
        "the host_compilers table records no clang limit for CUDA 12.2",
    )
    f = compilers(("?", "not installed"), ("gcc", 15))
    assert value(f, "cuda.host_compilers[0].max_major") == ("unknown", "not installed")


def test_toolkit_driver_support_takes_the_drivers_own_cuda_first():
    """A release no newer than the CUDA the driver reports runs in full, whatever the table says (570.26 is
    12.8's Table 3 minimum; a driver that reports 12.8 runs 12.8); a newer one is compat's to judge."""
    f = derive(
        facts({"cuda.toolkit.version": "12.8.93", "driver.version": "570.20", "driver.max_cuda": "12.8"})
    )
    assert value(f, "cuda.toolkit.driver_support") == "full"
    f = derive(
        facts({"cuda.toolkit.version": "13.5.37", "driver.version": "610.43.02", "driver.max_cuda": "13.5"})
    )
    assert value(f, "cuda.toolkit.driver_support") == "full"  # not in the table, but the driver says so
    f = derive(
        facts({"cuda.toolkit.version": "13.1.80", "driver.version": "580.95.05", "driver.max_cuda": "13.0"})
    )
    assert value(f, "cuda.toolkit.driver_support") == "minor_compat"
    f = derive(
        facts({"cuda.toolkit.version": "13.0.88", "driver.version": "570.172.08", "driver.max_cuda": "12.8"})
    )
    assert value(f, "cuda.toolkit.driver_support") == "none"


# --- what is newer than the knowledge tables --------------------------------------------------------------


def past(newest: str) -> str:
    """A release one minor past `newest` ("2.15" -> "2.16.0")."""
    major, minor = newest.split(".")[:2]
    return f"{major}.{int(minor) + 1}.0"


def host(*frameworks: tuple, driver=None, loaded=True) -> Facts:
    """Facts of a host with these (name, version) frameworks and this driver version (a ("?", why) tuple:
    unknown; None: no driver probe)."""
    values: dict = {"frameworks.count": len(frameworks)}
    for i, (name, version) in enumerate(frameworks):
        values[f"frameworks[{i}].name"] = name
        values[f"frameworks[{i}].version"] = version
    if driver is not None:
        values["driver.version"] = driver
        values["driver.loaded"] = loaded
    return facts(values)


def newer(f: Facts) -> tuple:
    out = derive(f)
    return value(out, "knowledge.newer"), value(out, "knowledge.newer_count")


TORCH_NEWEST = newest_row("torch")
TF_NEWEST = newest_row("tensorflow")
BRANCH_NEWEST = newest_row("cuda_drivers")


def test_the_newest_rows_are_the_tables_own():
    from gpudoctor.knowledge import knowledge

    kb = knowledge()
    key = lambda v: tuple(int(p) for p in v.split("."))  # noqa: E731
    assert TORCH_NEWEST == max((r.version for r in kb.torch_releases), key=key)
    assert TF_NEWEST == max((r.version for r in kb.tensorflow_builds), key=key)
    assert int(BRANCH_NEWEST) == max(r.branch for r in kb.driver_branches)


def test_a_host_within_the_tables_has_nothing_newer():
    f = host(("torch", f"{TORCH_NEWEST}.0"), ("tensorflow", "2.10.1"), ("jax", "99.0.0"), driver="580.159.04")
    assert newer(f) == ([], 0)


def test_torch_tensorflow_and_driver_newer_than_their_tables():
    torch, tf, driver = past(TORCH_NEWEST), past(TF_NEWEST), f"{int(BRANCH_NEWEST) + 10}.10"
    f = host(("torch", torch), ("cupy", "99.0.0"), ("tensorflow", tf), driver=driver)
    assert newer(f) == (
        [
            f"torch {torch} (the torch table ends at {TORCH_NEWEST})",
            f"tensorflow {tf} (the tensorflow table ends at {TF_NEWEST})",
            f"driver {driver} (the driver table ends at R{BRANCH_NEWEST})",
        ],
        3,
    )
    assert derive(f).get("knowledge.newer").source == (
        "derived:frameworks.count, frameworks[0].version, frameworks[2].version, driver.version"
    )


def test_a_nightly_of_the_next_release_is_newer():
    nightly = past(TORCH_NEWEST) + ".dev20260101"
    assert newer(host(("torch", nightly), driver="580.159.04"))[1] == 1


def test_an_unknown_driver_is_never_taken_for_an_old_one():
    assert newer(host(driver=("?", "timed out"))) == (("unknown", "timed out"), ("unknown", "timed out"))
    # What is known to be newer is still said.
    torch = past(TORCH_NEWEST)
    f = host(("torch", torch), driver=("?", "timed out"))
    assert newer(f) == ([f"torch {torch} (the torch table ends at {TORCH_NEWEST})"], 1)


def test_no_driver_loaded_has_no_driver_to_be_newer():
    assert newer(host(driver=("?", "NVML library not found"), loaded=False)) == ([], 0)


def test_frameworks_not_inspected_leave_it_unknown():
    f = facts({"frameworks.count": ("?", "inspecting /x failed: boom"), "driver.version": "580.159.04"})
    assert newer(f) == (("unknown", "inspecting /x failed: boom"),) * 2


def test_only_the_inputs_whose_probes_ran():
    assert "knowledge.newer" not in derive(facts({"gpus.count": 0}))
    assert newer(facts({"driver.version": f"{int(BRANCH_NEWEST) + 1}.0"}))[1] == 1  # --no-python


def test_broken_tables_say_why(monkeypatch):
    import gpudoctor.derive as d

    def broken(table):
        raise d.TableError("torch.yaml:3: bad row")

    monkeypatch.setattr(d, "newest_row", broken)
    assert newer(host(("torch", "2.1.0"))) == (("unknown", "torch.yaml:3: bad row"),) * 2
    assert newer(host(("onnxruntime", "1.30.0"))) == ([], 0)  # no table asked for


@pytest.mark.parametrize(
    ("what", "version", "newest", "expected"),
    [
        ("torch", "2.16.0", "2.15", (True, None)),
        ("torch", "2.15.9", "2.15", (False, None)),
        ("torch", "3.0.0", "2.15", (True, None)),
        ("torch", "2.9.1", "2.15", (False, None)),  # 2.9 is older than 2.15, not newer
        ("tensorflow", "2.100.0", "2.21", (True, None)),
        ("driver", "620.10", "620", (False, None)),
        ("driver", "621.01", "620", (True, None)),
        ("driver", "1000.1", "620", (True, None)),
        (
            "torch",
            "nightly",
            "2.15",
            (False, "torch version nightly cannot be compared with the torch table"),
        ),
        ("torch", "3", "2.15", (False, "torch version 3 cannot be compared with the torch table")),
        ("torch", "2.16.0", None, (False, "the torch table has no rows")),
    ],
)
def test_newer_than_table(what, version, newest, expected):
    table = "cuda_drivers" if what == "driver" else what
    assert newer_than_table(what, version, table, newest) == expected


def test_missing_from_nvml():
    from gpudoctor.probes.driver import missing_from_nvml

    assert missing_from_nvml(["0000:18:00.0", "0000:9a:00.0"], ["0000:18:00.0"]) == ["0000:9a:00.0"]
    assert missing_from_nvml(["0000:9a:00.0"], ["0000:9A:00.0"]) == []  # NVML in capitals, sysfs not
    assert missing_from_nvml([], ["0000:18:00.0"]) == []


def test_gpus_missing_from_nvml_derived():
    two = {"pci.nvidia_driver_addresses": ["0000:18:00.0", "0000:2a:00.0"], "gpus.count": 1,
           "gpus[0].bus_id": "0000:18:00.0", "container.detected": False}  # fmt: skip
    d = derive(facts(two))
    assert (d.value("pci.missing_from_nvml"), d.value("pci.missing_from_nvml_count")) == (["0000:2a:00.0"], 1)
    # A GPU NVML lists whose address is unknown (lost before it answered) leaves the comparison unknown.
    d = derive(facts({**two, "gpus.count": 2, "gpus[1].bus_id": ("?", "GPU is lost")}))
    assert d.get("pci.missing_from_nvml_count").unknown == "GPU is lost"
    assert d.get("pci.missing_from_nvml").unknown == "GPU is lost"
    # No NVIDIA GPU bound, no driver: nothing missing.
    d = derive(facts({"pci.nvidia_driver_addresses": [], "gpus.count": 0, "container.detected": False}))
    assert d.value("pci.missing_from_nvml_count") == 0


@pytest.mark.parametrize(
    ("home_source", "on_path", "expected"),
    [
        # torch.utils.cpp_extension._find_cuda_home(): CUDA_HOME or CUDA_PATH first, then `which nvcc`, then
        # /usr/local/cuda (its code as quoted in https://github.com/CSAILVision/gandissect/issues/19's
        # answer and in the tracebacks of https://github.com/NVIDIA/flownet2-pytorch/issues/218).
        ("CUDA_HOME", True, ("CUDA_HOME", "cuda.nvcc.home_version")),
        ("CUDA_PATH", False, ("CUDA_PATH", "cuda.nvcc.home_version")),
        ("default", True, ("PATH", "cuda.nvcc.version")),
        ("default", False, ("/usr/local/cuda", "cuda.nvcc.home_version")),
    ],
)
def test_the_nvcc_extensions_build_with_is_found_as_torch_finds_it(home_source, on_path, expected):
    from gpudoctor.probes.cuda import extension_nvcc

    assert extension_nvcc(home_source, on_path) == expected


# --- the oldest GPU a CUDA major builds for (cuda_drivers gpu_floors) -----------------------------------


def test_a_cuda_13_toolkit_leaves_out_a_pascal_gpu_beside_an_ampere():
    f = derive(
        facts(
            {
                "gpus.count": 2,
                "gpus[0].compute_capability": "6.1",
                "gpus[1].compute_capability": "8.6",
                "cuda.toolkit.version": "13.0.88",
            }
        )
    )
    assert value(f, "cuda.toolkit.min_cc") == "7.5"
    assert value(f, "cuda.toolkit.unsupported_gpus") == [0]
    assert value(f, "cuda.toolkit.unsupported_gpu_count") == 1
    assert value(f, "cuda.toolkit.unsupported_ccs") == ["6.1"]


def test_a_cuda_12_toolkit_serves_pascal_and_cuda_11_has_no_floor():
    base = {"gpus.count": 1, "gpus[0].compute_capability": "6.1"}
    assert (
        value(derive(facts({**base, "cuda.toolkit.version": "12.9.86"})), "cuda.toolkit.unsupported_gpus")
        == []
    )
    assert value(
        derive(facts({**base, "cuda.toolkit.version": "11.8.89"})), "cuda.toolkit.unsupported_gpus"
    ) == (
        "unknown",
        "the cuda_drivers table gives no oldest GPU for CUDA 11.x",
    )


def test_a_cu13_framework_on_a_volta_and_a_cpu_build():
    f = derive(
        facts(
            {
                "gpus.count": 1,
                "gpus[0].compute_capability": "7.0",
                "frameworks.count": 2,
                "frameworks[0].name": "jax",
                "frameworks[0].build": "cuda",
                "frameworks[0].version": "0.7.2",
                "frameworks[0].cuda": "13",
                "frameworks[1].name": "onnxruntime",
                "frameworks[1].build": "cpu",
                "frameworks[1].version": "1.23.0",
            }
        )
    )
    assert value(f, "frameworks[0].cuda_unsupported_gpus") == [0]
    assert value(f, "frameworks[0].cuda_unsupported_ccs") == ["7.0"]
    assert value(f, "frameworks[1].cuda_unsupported_gpu_count") == ("unknown", "only known for CUDA builds")


def test_in_a_container_only_the_gpus_given_to_it_are_expected_in_nvml():
    # sysfs lists both of the machine's GPUs; the container has the node of 0000:18:00.0 only.
    inside = {"pci.nvidia_driver_addresses": ["0000:18:00.0", "0000:2a:00.0"], "gpus.count": 1,
              "gpus[0].bus_id": "0000:18:00.0", "container.detected": True,
              "pci.device_node_addresses": ["0000:18:00.0"]}  # fmt: skip
    assert derive(facts(inside)).value("pci.missing_from_nvml_count") == 0
    # Given both (their nodes are here), the one NVML does not list is missing, as on a host.
    given_both = {**inside, "pci.device_node_addresses": ["0000:18:00.0", "0000:2a:00.0"]}
    assert derive(facts(given_both)).value("pci.missing_from_nvml") == ["0000:2a:00.0"]
    # Which were given unknown, or whether this is a container: unknown, not "nothing missing".
    d = derive(facts({**inside, "pci.device_node_addresses": ("?", "/dev: no permission")}))
    assert d.get("pci.missing_from_nvml_count").unknown == "/dev: no permission"
    d = derive(facts({**inside, "container.detected": ("?", "no permission")}))
    assert d.get("pci.missing_from_nvml_count").unknown == "no permission"


# --- CUDA extensions: their own code against the GPUs ----------------------------------------------------


def test_binary_arch_and_gaps():
    # The architectures tests/fixtures/cuda_ext/add_one_sm90a_sm100a_sm100f_ptx120.so carries.
    entries = ["sm_90a", "sm_100a", "sm_100f", "compute_120"]
    assert binary_arch(entries) == (["9.0a", "10.0a", "10.0f"], ["12.0"])
    # 8.0: nothing; 9.0, 10.0, 10.3: machine code; 12.0: only the PTX.
    assert binary_gaps(["8.0", "9.0", "10.0", "10.3", "12.0"], entries, True) == ([0], [4])
    assert binary_gaps(["12.0"], entries, False) == ([0], [0])  # the driver cannot compile that PTX
    with pytest.raises(ValueError, match="not a CUDA architecture: gfx90a"):
        binary_arch(["gfx90a"])


def test_an_extension_torch_covers_and_one_it_does_not():
    # torch 2.11.0 cu130 has no Volta (7.0) code: an sm_80 extension fails on both GPUs, torch on the V100.
    base = torch_on(["9.0", "7.0"], cuda="13.0")
    items = dict(base.items())
    items.update(
        {"extensions.count": known(1, "scan"), "extensions[0].arch": known(["sm_80"], "scan"),
         "driver.version": known("580.159.04", "nvml")}
    )  # fmt: skip
    out = derive(Facts(items))
    assert value(out, "frameworks[0].unsupported_gpus") == [1]
    assert value(out, "extensions[0].unsupported_gpus") == [0, 1]
    assert value(out, "extensions[0].unsupported_ccs") == ["9.0", "7.0"]
    assert value(out, "extensions[0].torch_covers") is False
    assert value(out, "extensions[0].rebuild_arch") == "7.0;9.0"
    # An unreadable library: every derived fact unknown for that reason.
    items["extensions[0].arch"] = unknown("unreadable: cut short", "scan")
    out = derive(Facts(items))
    assert out.get("extensions[0].unsupported_gpu_count").unknown == "unreadable: cut short"


# --- NCCL's own choice of a bootstrap interface -------------------------------------------------------------


def test_nccl_auto_choice_follows_socket_cc():
    # NVIDIA/nccl@v2.30.7-1 src/misc/socket.cc:218-229: anything but docker/lo/virbr, else docker, lo, virbr.
    assert interconnect.nccl_auto_choice(["eth0", "lo", "docker0"]) == (["eth0"], ["docker0", "lo"])
    assert interconnect.nccl_auto_choice(["lo", "virbr0", "docker0"]) == ([], ["docker0", "lo", "virbr0"])
    assert interconnect.nccl_auto_choice(["ib0", "lo"]) == (["ib0"], ["lo"])
    assert interconnect.nccl_auto_choice([]) == ([], [])


def test_nccl_auto_facts_unknown_when_running_is():
    facts = derive(Facts({"interconnect.net_running": unknown("no permission", "test")}))
    assert facts.get("interconnect.nccl_auto_interfaces").unknown == "no permission"
    facts = derive(Facts({"interconnect.net_running": known(["lo"], "test")}))
    assert facts.value("interconnect.nccl_auto_interfaces") == []
    assert facts.value("interconnect.nccl_auto_fallback") == ["lo"]


# --- runtimes that dlopen CUDA libraries by soname ----------------------------------------------------------


def _consumer_facts(**extra) -> Facts:
    base = {
        "frameworks.count": known(1, "test"),
        "frameworks[0].name": known("onnxruntime", "test"),
        "frameworks[0].distribution": known("onnxruntime-gpu", "test"),
        "frameworks[0].version": known("1.20.1", "test"),
        "frameworks[0].cuda_major": unknown("the wheel records no CUDA version", "test"),
        "python.ctranslate2": known("4.4.0", "test"),
        "python.faster_whisper": known("1.0.3", "test"),
        "cuda_libs.loader_sonames": known(
            ["libcublas.so.12", "libcublasLt.so.12", "libcudart.so.12"], "test"
        ),
        "cuda_libs.wheel_sonames": known(["libcudnn.so.9", "libcufft.so.11"], "test"),
    }
    base.update(extra)
    return derive(Facts(base))


def test_consumers_needs_missing_and_wheel_only():
    facts = _consumer_facts()
    assert facts.value("cuda_libs.consumers.count") == 2
    assert facts.value("cuda_libs.consumers[0].name") == "onnxruntime-gpu"
    assert facts.value("cuda_libs.consumers[0].cuda_major") == 12  # 1.19 and later: CUDA 12 on PyPI
    assert facts.value("cuda_libs.consumers[0].missing") == ["libcurand.so.10"]
    assert facts.value("cuda_libs.consumers[0].wheel_only") == ["libcufft.so.11", "libcudnn.so.9"]
    # ctranslate2 4.4 with faster-whisper: cuBLAS 12 and cuDNN 8 (convolutions)
    assert facts.value("cuda_libs.consumers[1].needs") == [
        "libcublas.so.12",
        "libcublasLt.so.12",
        "libcudnn.so.8",
    ]
    assert facts.value("cuda_libs.consumers[1].missing") == ["libcudnn.so.8"]
    assert facts.value("cuda_libs.consumers[1].missing_count") == 1


def test_consumers_unknown_when_the_loader_cache_is():
    facts = _consumer_facts(**{"cuda_libs.loader_sonames": unknown("timed out", "test")})
    assert facts.get("cuda_libs.consumers[0].missing_count").unknown == "timed out"
    assert facts.value("cuda_libs.consumers[0].needs")[0] == "libcublasLt.so.12"


def test_an_old_release_is_not_judged():
    facts = _consumer_facts(
        **{
            "frameworks[0].version": known("1.12.1", "test"),
            "python.ctranslate2": unknown("not installed", "t"),
        }
    )
    assert facts.value("cuda_libs.consumers.count") == 1
    assert "is not known" in facts.get("cuda_libs.consumers[0].missing_count").unknown


# --- GPUDirect RDMA as NCCL decides it --------------------------------------------------------------------


def test_gdr_path_follows_nccls_own_checks():
    # NCCL 2.21.5 (torch 2.5's wheel) with nvidia_peermem on a 6.8 kernel without memory_peers: before
    # 2.23.4 NCCL does not see the module (NVIDIA/nccl#1676), but DMA-BUF is open.
    assert interconnect.gdr_path((2, 21, 5), False, "nvidia_peermem", (6, 8, 0), (12, 4)) == ("dma-buf", [])
    assert interconnect.gdr_path((2, 23, 4), False, "nvidia_peermem", (5, 4, 0), (12, 4)) == (
        "nvidia-peermem",
        [],
    )
    assert interconnect.gdr_path((2, 18, 1), True, None, (5, 4, 0), (12, 2)) == ("nvidia-peermem", [])
    path, why = interconnect.gdr_path((2, 21, 5), False, "nvidia_peermem", (5, 4, 0), (12, 4))
    assert path == "none"
    assert why == [
        "nvidia_peermem is loaded, but NCCL 2.21.5 looks only for /sys/kernel/mm/memory_peers/nv_mem (NCCL "
        "2.23.4 and later also detect nvidia_peermem)",
        "DMA-BUF needs Linux 5.12 or later, and this is 5.4.0",
    ]
    path, why = interconnect.gdr_path((2, 10, 3), False, None, (6, 8, 0), (11, 4))
    assert why[1:] == [
        "DMA-BUF needs NCCL 2.13.4 or later, and this is 2.10.3",
        "DMA-BUF needs a driver for CUDA 11.7 or later, and this one is for 11.4",
    ]


def test_gdr_facts():
    base = {
        "system.kernel": known("5.4.0-216-generic", "test"),
        "nccl.versions": known(["2.21.5"], "test"),
        "interconnect.memory_peers_nv_mem": known(False, "test"),
        "interconnect.peermem_loaded": known(True, "test"),
        "interconnect.peermem_module": known("nvidia_peermem", "test"),
        "driver.max_cuda": known("12.4", "test"),
    }
    facts = derive(Facts(base))
    assert facts.value("system.kernel_release") == "5.4.0"
    assert facts.value("nccl.newest") == "2.21.5"
    assert facts.value("interconnect.gdr_path") == "none"
    facts = derive(Facts({**base, "interconnect.memory_peers_nv_mem": unknown("no permission", "test")}))
    assert facts.get("interconnect.gdr_path").unknown == "no permission"
