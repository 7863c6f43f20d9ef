"""The NVIDIA_REQUIRE_* evaluator's own behaviour beyond NVIDIA's verdicts (those are in
nvidia_require_cases.yaml): its comparisons, and how what gpudoctor could not read is followed both ways so
that an unknown fact gives an unknown verdict only where it decides."""

from __future__ import annotations

import pytest

from gpudoctor.container.require import (
    INVALID,
    MET,
    UNMET,
    Driver,
    Gpu,
    Verdict,
    compare_version,
    container_brand,
    evaluate,
    judge,
    judge_on_host,
    satisfied,
    split_constraint,
)
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.probes.gpus import brand_name

D550 = Driver("550.163.01", "12.4")
TESLA = Gpu("tesla", "7.0")


@pytest.mark.parametrize(
    ("actual", "op", "wanted", "result"),
    [
        ("12.4", ">=", "12.4", True),
        ("12.4", ">", "12.4", False),
        ("12.4", "<", "12.10", True),  # by number, not text
        ("12.4", "=", "12.4.0", True),
        ("12.4", "!=", "12.4.0", False),
        ("12.4", "<=", "12.4.1", True),
        ("12.4.1", ">", "12.4", True),
        ("12.4", "=", "12..4", True),
        ("12.4", ">=", "12.x", INVALID),
        ("12.4", ">=", ".4", INVALID),
        ("12.4", ">=", "18446744073709551615", INVALID),  # UINTMAX_MAX itself is strtoumax's error
        ("12.4", ">=", "18446744073709551614", False),
        ("12.4", ">=", "1" * 5000, INVALID),  # far past strtoumax, and past what int() reads
        ("12.4", ">=", "0" * 5000 + "12.4", True),  # leading zeros are no overflow
    ],
)
def test_compare_version(actual, op, wanted, result):
    assert compare_version(actual, op, wanted) == result


def test_split_constraint():
    assert split_constraint("cuda>=12.4") == ("cuda", ">=", "12.4")
    assert split_constraint("Brand!tesla") == ("Brand", "!=", "tesla")
    assert split_constraint("arch<9.0<10") == ("arch", "<", "9.0<10")  # the value keeps what follows
    for bad in ("cuda=>1", "cuda<>1", "=1", "cuda", "cuda>="):
        assert split_constraint(bad) is None, bad


# nvidia-container-cli's name for each NVML brand: libnvidia-container src/driver.c
# driver_get_device_brand_1_svc @63d366ee3b4183513c310ac557bf31b05b83328f, lines 544-599 (the switch of
# 6845f41, release 1.9.0), written out here by hand from that source, keyed by nvml.h's constant names.
RUNTIME_BRANDS = {
    "NVML_BRAND_QUADRO": "Quadro",  # driver.c:545-547
    "NVML_BRAND_TESLA": "Tesla",  # 548-550
    "NVML_BRAND_NVS": "NVS",  # 551-553
    "NVML_BRAND_GRID": "GRID",  # 554-556
    "NVML_BRAND_GEFORCE": "GeForce",  # 557-559
    "NVML_BRAND_TITAN": "TITAN",  # 560-562
    "NVML_BRAND_NVIDIA_VAPPS": "VApps",  # 563-565
    "NVML_BRAND_NVIDIA_VPC": "VPC",  # 566-568
    "NVML_BRAND_NVIDIA_VCS": "VCS",  # 569-571
    "NVML_BRAND_NVIDIA_VWS": "VWS",  # 572-574
    "NVML_BRAND_NVIDIA_CLOUD_GAMING": "CloudGaming",  # 575-577
    "NVML_BRAND_NVIDIA_VGAMING": "CloudGaming",  # 578-581: deprecated alias of CLOUD_GAMING (nvml.h)
    "NVML_BRAND_QUADRO_RTX": "QuadroRTX",  # 582-584
    "NVML_BRAND_NVIDIA_RTX": "NvidiaRTX",  # 585-587
    "NVML_BRAND_NVIDIA": "Nvidia",  # 588-590
    "NVML_BRAND_GEFORCE_RTX": "GeForceRTX",  # 591-593
    "NVML_BRAND_TITAN_RTX": "TitanRTX",  # 594-596
}  # every other brand: "Unknown" (597-598)


def test_every_nvml_brand_number_gets_the_runtime_s_name():
    # The numbers come from the NVML bindings gpudoctor reads NVML with (nvidia-ml-py's NVML_BRAND_*
    # constants, nvml.h's nvmlBrandType_t), so a renumbering or a new brand there shows up here.
    import pynvml

    constants = {
        n: getattr(pynvml, n) for n in dir(pynvml) if n.startswith("NVML_BRAND_") and n != "NVML_BRAND_COUNT"
    }
    assert set(RUNTIME_BRANDS) <= set(constants)
    seen = {}
    for name, number in constants.items():
        expected = RUNTIME_BRANDS.get(name, "Unknown")
        assert container_brand(brand_name(number)) == expected, name
        seen[number] = expected
    assert sorted(n for n, b in seen.items() if b != "Unknown") == list(range(1, 17))
    assert seen[pynvml.NVML_BRAND_UNKNOWN] == "Unknown"
    assert container_brand(brand_name(pynvml.NVML_BRAND_COUNT)) == "Unknown"  # past the last brand


def test_container_brands():
    assert [container_brand(b) for b in ("tesla", "geforce", "TITAN", "nvidia", "quadrortx", "grid")] == [
        "Tesla",
        "GeForce",
        "TITAN",
        "Nvidia",
        "QuadroRTX",
        "GRID",
    ]
    assert container_brand("unknown") == container_brand("no such brand") == "Unknown"


def test_issue_23_an_h100_of_brand_nvidia_on_driver_535_is_admitted():
    # NVIDIA_REQUIRE_CUDA of issue 23; an H100 (NVML_BRAND_NVIDIA) on an R535 driver (CUDA 12.2):
    # cuda>=12.4 fails, the group brand=nvidia,driver>=535,driver<536 holds (driver.c:588-590, dsl.c:84-85).
    h100 = Gpu(brand_name(14), "9.0")
    assert judge(
        ["cuda>=12.4 brand=nvidia,driver>=535,driver<536"], [h100], Driver("535.129.03", "12.2")
    ) == (Verdict(MET))
    assert judge(["brand=NVIDIA"], [h100], Driver("580.159.04", "13.0")) == Verdict(MET)
    assert judge(["brand=unknown"], [h100], Driver("580.159.04", "13.0")).status == UNMET


def test_an_unknown_cuda_version_decides_only_where_it_is_read():
    nocuda = Driver("550.163.01", None)
    assert judge(["driver>=550 cuda>=99"], [TESLA], nocuda).status == MET  # cuda never read
    verdict = judge(["cuda>=12.0"], [TESLA], nocuda)
    assert verdict.status is None and verdict.unknown == ("cuda",)
    assert judge(["driver>=999,cuda>=12.0"], [TESLA], nocuda).status == UNMET  # fails before it
    assert judge(["cuda>=12.x"], [TESLA], nocuda).status == INVALID  # no version compares with 12.x


def test_an_unknown_constraint_before_garbage_can_end_either_way():
    # cuda false: the group stops and garbage is never read (unmet); cuda true: garbage is read (invalid).
    outcome = evaluate("cuda>=12.0,garbage", TESLA, Driver("550", None), 0)
    assert outcome.possible == {UNMET, INVALID}
    assert judge(["cuda>=12.0,garbage"], [TESLA], Driver("550", None)).status == INVALID  # refused either way


def test_unknown_brand_and_arch_name_their_gpu():
    verdict = judge(["brand=tesla", "arch>=7.0"], [TESLA, Gpu(None, None)], D550)
    assert verdict.status is None and verdict.unknown == (("brand", 1), ("arch", 1))
    assert judge(["brand>tesla"], [Gpu(None, None)], D550).status == INVALID


def host(**items) -> Facts:
    return Facts({k.replace("__", "."): v for k, v in items.items()})


def test_judged_on_the_host_s_facts():
    facts = host(
        driver__version=known("550.163.01", "t"),
        driver__max_cuda=known("12.4", "t"),
        **{"gpus.count": known(2, "t")},
        **{"gpus[0].brand": known("tesla", "t"), "gpus[0].compute_capability": known("7.0", "t")},
        **{"gpus[1].brand": known("geforce", "t"), "gpus[1].compute_capability": known("8.6", "t")},
    )
    assert judge_on_host(["brand=tesla"], facts).gpu == 1
    assert judge_on_host(["brand=tesla"], facts, [0]).status == MET
    assert satisfied("brand=tesla brand=geforce", facts) == (True, {})
    assert satisfied("brand=tesla", facts) == (False, {})


def test_unknown_gpu_count_decides_only_arch_and_brand():
    facts = host(
        driver__version=known("550.163.01", "t"),
        driver__max_cuda=known("12.4", "t"),
        **{"gpus.count": unknown("NVMLError_LibraryNotFound", "nvml")},
    )
    assert judge_on_host(["cuda>=99"], facts).status == UNMET  # with a GPU or without, the same
    assert judge_on_host(["cuda>=12.0"], facts).status == MET
    assert satisfied("brand=tesla", facts) == (None, {"gpus.count": "NVMLError_LibraryNotFound"})
