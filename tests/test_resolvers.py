"""Resolvers against the shipped knowledge tables: each expected answer is traced, in a comment, to the
rows it comes from (file and row; `rules/knowledge/` is left out of the file names)."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import pytest

from gpudoctor.compat import covers
from gpudoctor.engine.resolver_names import RESOLVER_ARGS, RESOLVER_NAMES
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import RESOLVERS, driver_for_cuda, resolve

H100 = ("NVIDIA H100 80GB HBM3", "9.0")
V100 = ("Tesla V100-SXM2-32GB", "7.0")
A100 = ("NVIDIA A100-SXM4-80GB", "8.0")
RTX5090 = ("NVIDIA GeForce RTX 5090", "12.0")
CU121 = "https://download.pytorch.org/whl/cu121"
CU124 = "https://download.pytorch.org/whl/cu124"
CU126 = "https://download.pytorch.org/whl/cu126"
CU128 = "https://download.pytorch.org/whl/cu128"


def host(
    driver: Optional[str],
    gpus: list[tuple[str, Any]],
    python: str = "3.11.9",
    machine: Optional[str] = "x86_64",
    **framework: Any,
) -> Facts:
    """Facts of a host with one framework (frameworks[0]); a GPU capability of None is unknown, and so is
    the interpreter's machine when `machine` is None."""
    items = {
        "driver.version": known(driver, "t") if driver else unknown("NVMLError_LibraryNotFound"),
        "python.version": known(python, "t"),
        "python.machine": known(machine, "t") if machine else unknown("not recorded"),
        "python.executable": known("/venv/bin/python", "t"),
        "gpus.count": known(len(gpus), "t"),
        "frameworks.count": known(1 if framework else 0, "t"),
    }
    for i, (name, cc) in enumerate(gpus):
        items[f"gpus[{i}].name"] = known(name, "t")
        items[f"gpus[{i}].compute_capability"] = known(cc, "t") if cc else unknown("not supported")
    for key, value in framework.items():
        items[f"frameworks[0].{key}"] = known(value, "t")
    return Facts(items)


def torch(version: str, build: str = "cpu", cuda: Optional[str] = None) -> dict[str, Any]:
    fw = {"name": "torch", "distribution": "torch", "version": version, "build": build}
    return fw if cuda is None else dict(fw, cuda=cuda)


UNCONFIRMED_2_5_1 = (
    "torchvision 0.20.1 and torchaudio 2.5.1: the releases the default index pairs with torch 2.5.1; the "
    "torch table records no install command of PyTorch's for torch 2.5.1, so that the cu121 index carries "
    "them is not confirmed"
)


# (id, facts, args, expected: resolver fields that must equal these exactly). Companion versions come from
# torch_companions.yaml (the row of the pinned torch patch release), everything else from the files named.
TORCH_CASES = [
    (
        # torch.yaml 2.5: cu121 and cu124 list 9.0; cuda_drivers.yaml 12.1 update 0 needs 530.30.02, which 535
        # meets; 12.4 needs 550.54.14, so cu124 would run only through minor-version compatibility: the
        # native cu121 wins. torch_companions.yaml 2.5.1: torchvision 0.20.1 and torchaudio 2.5.1, each
        # requiring torch==2.5.1 (so tagged). torch.yaml 2.5 has no index_pins (no copy of PyTorch's
        # previous-versions page read lists 2.5.x), so the note says the cu121 index is not confirmed.
        "535-h100-cpu-torch-2.5.1-keeps-2.5-native-cu121",
        host("535.183.01", [H100], **torch("2.5.1")),
        (),
        {
            "ok": True,
            "packages": ("torch==2.5.1+cu121", "torchvision==0.20.1+cu121", "torchaudio==2.5.1+cu121"),
            "uninstall": (),
            "index_url": CU121,
            "minor_compat": False,
            "notes": (UNCONFIRMED_2_5_1,),
        },
    ),
    (
        # torch.yaml 2.9: cu130 needs the 13.x floor 580 (cuda_drivers.yaml minor_compat 13), so not on 550;
        # cu126 (560.28.03) and cu128 (570.26) both need minor-version compatibility on 550 (12.x floor
        # 525.60.13): the highest, cu128, with the note that none runs natively. torch_companions.yaml 2.9.0.
        "550-torch-2.9.0-cu130-goes-to-cu128",
        host("550.127.05", [H100], **torch("2.9.0", "cuda", "13.0")),
        (),
        {
            "ok": True,
            "packages": ("torch==2.9.0+cu128", "torchvision==0.24.0+cu128", "torchaudio==2.9.0+cu128"),
            "index_url": CU128,
            "minor_compat": True,
            "notes": (
                "no variant of torch 2.9 runs natively on driver 550.127.05: cu128 runs through "
                "minor-version compatibility",
            ),
        },
    ),
    (
        # torch.yaml 2.6: cu124 lists up to 9.0; cu118 and cu126 have no arch list (unknown, never chosen).
        # 2.15 to 2.12: cu130/cu132 need 580 (13.x floor), cu126 stops at 9.0. 2.11 cu128 lists 12.0 and
        # 570.133.07 meets
        # 12.8's 570.26: the newest release with an sm_120 wheel this driver runs natively.
        # torch_companions.yaml 2.11.0: torchvision 0.26.0 (torch==2.11.0), torchaudio 2.11.1 (torch>=2.11).
        "570-rtx5090-torch-2.6.0-cu124-goes-to-2.11-cu128",
        host("570.133.07", [RTX5090], **torch("2.6.0", "cuda", "12.4")),
        (),
        {
            "ok": True,
            "packages": ("torch==2.11.0+cu128", "torchvision==0.26.0+cu128", "torchaudio==2.11.1"),
            "index_url": CU128,
            "minor_compat": False,
            "notes": (
                "torchaudio 2.11.1 requires torch>=2.11, not torch 2.11.0 alone: pinned without a local tag",
                "torchvision 0.26.0 and torchaudio 2.11.1: the releases the default index pairs with "
                "torch 2.11.0; the torch table records no install command of PyTorch's for torch 2.11.0, so "
                "that the cu128 index carries them is not confirmed",
            ),
        },
    ),
    (
        # torch.yaml 2.11: cu130 and cu128 arch lists start at 7.5 (cu128 dropped 7.0); cu126 lists 7.0;
        # 580.95.05 meets 12.6's 560.28.03 (cuda_drivers.yaml 12.6 update 0). Companions: 2.11.0's row.
        "580-v100-torch-2.11.0-cu130-goes-to-cu126",
        host("580.95.05", [V100], **torch("2.11.0", "cuda", "13.0")),
        (),
        {
            "ok": True,
            "packages": ("torch==2.11.0+cu126", "torchvision==0.26.0+cu126", "torchaudio==2.11.1"),
            "index_url": CU126,
            "minor_compat": False,
        },
    ),
    (
        # torch.yaml 2.5: Python 3.9-3.12, python_experimental ["3.13"] (RELEASE.md: "(3.13 experimental)"):
        # the release is kept, not jumped over; the reasons say the Python is experimental there.
        "experimental-python-keeps-the-release",
        host("535.183.01", [H100], python="3.13.1", **torch("2.5.1")),
        (),
        {
            "ok": True,
            "packages": ("torch==2.5.1+cu121", "torchvision==0.20.1+cu121", "torchaudio==2.5.1+cu121"),
        },
    ),
    (
        # torch.yaml 2.8: cu129 needs 575.51.03 (12.9 update 0), above 570.172.08: only through minor-version
        # compatibility, which `avoid` refuses; cu128 needs 570.26 (12.8 update 0). Companions: 2.8.0's row.
        "avoid-minor-compat-2.8.0-cu129-goes-to-cu128",
        host("570.172.08", [H100], **torch("2.8.0", "cuda", "12.9")),
        (("minor_compat", "avoid"),),
        {
            "ok": True,
            "packages": ("torch==2.8.0+cu128", "torchvision==0.23.0+cu128", "torchaudio==2.8.0+cu128"),
            "index_url": CU128,
            "minor_compat": False,
        },
    ),
    (
        # The same without `avoid`: cu129 is 2.8's highest CUDA and runs (floor 525.60.13), but cu128 runs
        # natively, and a native variant of the same release is preferred.
        "native-cu128-preferred-to-the-installed-minor-compat-cu129",
        host("570.172.08", [H100], **torch("2.8.0", "cuda", "12.9")),
        (),
        {
            "ok": True,
            "packages": ("torch==2.8.0+cu128", "torchvision==0.23.0+cu128", "torchaudio==2.8.0+cu128"),
        },
    ),
    (
        # torch.yaml 2.8 cu128 runs natively on 570.172.08 (12.8: 570.26), cu129 would not (12.9: 575.51.03):
        # the installed build is the answer.
        "installed-native-build-is-already-best",
        host("570.172.08", [H100], **torch("2.8.0", "cuda", "12.8")),
        (),
        {"ok": True, "packages": (), "index_url": None, "minor_compat": False},
    ),
    (
        # cuda_drivers.yaml minor_compat: the lowest floor is 11.x's 450.80.02; 418 is below every variant.
        # The installed 2.9.0+cu128 would run on a driver for CUDA 12.8.
        "418-runs-nothing",
        host("418.226.00", [H100], **torch("2.9.0", "cuda", "12.8")),
        (),
        {"ok": False, "packages": (), "needs_cuda": "12.8"},
    ),
    (
        # gpus.yaml rtx-5090: compute_capability 12.0, used when NVML did not give it; as the 5090 case above.
        "capability-from-the-gpu-catalogue",
        host("570.133.07", [("NVIDIA GeForce RTX 5090", None)], **torch("2.6.0", "cuda", "12.4")),
        (),
        {"ok": True, "packages": ("torch==2.11.0+cu128", "torchvision==0.26.0+cu128", "torchaudio==2.11.1")},
    ),
    (
        # No torch installed: the newest release (torch.yaml 2.15), its highest variant that runs natively on
        # 580.95.05: cu132 needs 595.45.04 (13.2 update 0), cu130 580.65.06 (13.0 update 0); arch lists 9.0.
        # torch_companions.yaml 2.15.0: no torchvision or torchaudio release requires it, so both are removed
        # (an installed one would require another torch; removing one that is not there changes nothing).
        "no-torch-installed-gets-the-newest",
        host("580.95.05", [H100]),
        (),
        {
            "ok": True,
            "packages": ("torch==2.15.0+cu130",),
            "uninstall": ("torchvision", "torchaudio"),
            "minor_compat": False,
            "notes": (
                "torchvision removed: no torchvision release requires torch 2.15.0 (an installed one "
                "requires another torch)",
                "torchaudio removed: no torchaudio release requires torch 2.15.0 (an installed one "
                "requires another torch)",
            ),
        },
    ),
    (
        # A warning's fix (downgrade=no) on 550 with torch 2.9.0+cu128: no variant of 2.9 (or newer: every one
        # needs CUDA 12.6 or 13.x) runs natively, and `avoid` refuses minor-version compatibility; 2.7 and
        # older are not considered. A driver for CUDA 12.8 (the installed build's) keeps it.
        "warning-never-downgrades-the-release",
        host("550.127.05", [H100], **torch("2.9.0", "cuda", "12.8")),
        (("minor_compat", "avoid"), ("downgrade", "no")),
        {"ok": False, "packages": (), "needs_cuda": "12.8"},
    ),
    (
        # torch.yaml ends at 2.15: a torch 2.16 is beyond the tables, so nothing is planned for it.
        "newer-than-the-tables-plans-nothing",
        host("580.95.05", [H100], **torch("2.16.0", "cuda", "13.0")),
        (),
        {
            "ok": False,
            "packages": (),
            "reasons": (
                "torch 2.16.0 is newer than gpudoctor's torch table, which ends at 2.15: gpudoctor is older "
                "than your torch, so it plans no other torch (upgrade gpudoctor for newer tables)",
            ),
        },
    ),
    (
        # The interpreter's machine unknown: the x86_64 lists and wheels, and a note saying so (as the first
        # case otherwise).
        "unknown-machine-says-x86_64",
        host("535.183.01", [H100], machine=None, **torch("2.5.1")),
        (),
        {
            "packages": ("torch==2.5.1+cu121", "torchvision==0.20.1+cu121", "torchaudio==2.5.1+cu121"),
            "notes": (UNCONFIRMED_2_5_1, "the CPU architecture is unknown: these are the x86_64 wheels"),
        },
    ),
]


@pytest.mark.parametrize(
    ("facts", "args", "expected"), [c[1:] for c in TORCH_CASES], ids=[c[0] for c in TORCH_CASES]
)
def test_torch_resolver(facts, args, expected):
    res = resolve("torch", facts, knowledge(), 0 if facts.count("frameworks") else None, args)
    assert {k: getattr(res, k) for k in expected} == expected, res.reasons


def test_an_experimental_python_is_named_in_the_reasons():
    res = resolve("torch", host("535.183.01", [H100], python="3.13.1", **torch("2.5.1")), knowledge(), 0)
    assert res.reasons[-1] == "Python 3.13 is experimental in torch 2.5 (its wheels exist)"
    # torch.yaml 2.4: 3.8-3.12 with nothing experimental; 3.13 is outside it.
    res = resolve("torch", host("535.183.01", [H100], python="3.13.1", **torch("2.4.1")), knowledge(), 0)
    assert "torch 2.4: Python 3.13 is outside its 3.8-3.12" in res.reasons


def test_535_h100_reasons_say_why_and_that_it_relies_on_minor_compat():
    # Without cu121 (a table where 2.5 has only cu124), 535 runs 2.5 through minor-version compatibility.
    kb = knowledge()
    rows = tuple(
        dataclasses.replace(r, variants=tuple(v for v in r.variants if v.name == "cu124"))
        if r.version == "2.5"
        else r
        for r in kb.torch_releases
    )
    res = resolve(
        "torch", host("535.183.01", [H100], **torch("2.5.1")), dataclasses.replace(kb, torch_releases=rows), 0
    )
    assert res.reasons == (
        "keeps torch 2.5 (installed 2.5.1, a CPU-only build); cu124: its best variant for this host",
        "driver 535.183.01 is below CUDA 12.4's minimum 550.54.14 but meets the CUDA 12.x floor 525.60.13: "
        "it runs through minor-version compatibility (kernels built into the wheel run; PTX from the newer "
        "toolkit cannot be JIT-compiled by this driver: Triton and torch.compile kernels, for one)",
        "sm_90 (NVIDIA H100 80GB HBM3): native kernels (built for 5.0, 6.0, 7.0, 7.5, 8.0, 8.6, 9.0)",
        "Python 3.11 is within torch 2.5's 3.9-3.12",
    )
    assert res.notes == (
        "no variant of torch 2.5 runs natively on driver 535.183.01: cu124 runs through minor-version "
        "compatibility",
        UNCONFIRMED_2_5_1.replace("cu121", "cu124"),
    )


def test_without_a_companions_row_the_series_and_torch_patch_are_used_and_gaps_named():
    # torch_companions.yaml without its 2.5.1 row, and torch.yaml 2.5 without torchaudio: torchvision
    # follows torch.yaml's series "0.20" with torch's patch, torchaudio is removed (one installed would
    # require another torch); each says so.
    kb = knowledge()
    rows = tuple(
        dataclasses.replace(r, torchaudio=None) if r.version == "2.5" else r for r in kb.torch_releases
    )
    companions = tuple(c for c in kb.torch_companions if c.torch != "2.5.1")
    kb = dataclasses.replace(kb, torch_releases=rows, torch_companions=companions)
    res = resolve("torch", host("535.183.01", [H100], **torch("2.5.1")), kb, 0)
    assert res.packages == ("torch==2.5.1+cu121", "torchvision==0.20.1+cu121")
    assert res.uninstall == ("torchaudio",)
    assert res.notes == (
        "the companions table lists no torch 2.5.1: torchvision's version follows torch's patch number",
        "torchaudio removed: the torch table has no torchaudio version for torch 2.5",
    )


def test_torch_2_0_1_gets_the_companions_that_require_it():
    # torch_companions.yaml 2.0.1: torchvision 0.15.2 and torchaudio 2.0.2 (requiring torch==2.0.1), not the
    # 0.15.1/2.0.1 that torch's patch number would give (they require torch==2.0.0). torch.yaml 2.0: cu118
    # lists 8.0 and runs natively on 535 (11.8: 520.61.05).
    res = resolve("torch", host("535.183.01", [A100], **torch("2.0.1")), knowledge(), 0)
    assert res.packages == ("torch==2.0.1+cu118", "torchvision==0.15.2+cu118", "torchaudio==2.0.2+cu118")
    assert res.index_url == "https://download.pytorch.org/whl/cu118"


def test_550_cu130_says_cuda_13_needs_580():
    res = resolve("torch", host("550.127.05", [H100], **torch("2.9.0", "cuda", "13.0")), knowledge(), 0)
    assert (
        res.reasons[1] == "torch 2.9 cu130: CUDA 13.x needs driver 580 or newer; driver 550.127.05 is older"
    )


def test_rtx5090_never_gets_a_variant_without_sm_120():
    kb = knowledge()
    for driver in ("525.60.13", "550.54.14", "560.35.03", "570.26", "575.57.08", "580.65.06", "595.58.03"):
        for python in ("3.9.1", "3.10.4", "3.12.3", "3.14.0"):
            for installed in ("2.6.0", "2.7.1", "2.8.0", "2.11.0"):
                facts = host(driver, [RTX5090], python=python, **torch(installed, "cuda", "12.4"))
                res = resolve("torch", facts, kb, 0)
                if not res.ok:
                    continue
                tag = res.index_url.rsplit("/", 1)[1]
                version = res.packages[0].split("==")[1].split("+")[0].rstrip(".*")
                release = ".".join(version.split(".")[:2])
                variant = next(r for r in kb.torch_releases if r.version == release).variant(tag)
                assert "12.0" in variant.compiled_ccs, (driver, python, installed, res.packages, tag)


def test_rtx5090_on_driver_570_is_never_cu126():
    res = resolve("torch", host("570.133.07", [RTX5090], **torch("2.6.0", "cuda", "12.4")), knowledge(), 0)
    assert res.reasons[:4] == (
        "torch 2.6 has no wheel this host runs; torch 2.11 (cu128) is the newest that does",
        "torch 2.6 cu126: the torch table has no arch list for it: which GPUs it has kernels for is unknown",
        "torch 2.6 cu124: no kernels for sm_120 (NVIDIA GeForce RTX 5090) (built for 5.0, 6.0, 7.0, 7.5, "
        "8.0, 8.6, 9.0)",
        "torch 2.6 cu118: the torch table has no arch list for it: which GPUs it has kernels for is unknown",
    )


def test_a_dropped_release_names_the_driver_that_would_keep_it():
    # torch.yaml 2.9 has no variant for 470 (11.x only up to 2.7's cu118); its own cu130 needs 13.0.
    res = resolve(
        "torch", host("470.256.02", [H100], python="3.12.1", **torch("2.9.0", "cuda", "13.0")), knowledge(), 0
    )
    # 11.x variants with an arch list: 2.5 cu118 (2.6 and 2.7 cu118 have none); 470 meets the 11.x floor
    # 450.80.02 but not 11.8's 520.61.05.
    assert (res.ok, res.packages, res.index_url) == (
        True,
        ("torch==2.5.1+cu118", "torchvision==0.20.1+cu118", "torchaudio==2.5.1+cu118"),
        "https://download.pytorch.org/whl/cu118",
    )
    assert res.notes[-1] == "a driver that supports CUDA 13.0 would keep torch 2.9"


@pytest.mark.parametrize(
    ("driver", "expected_ok"),
    [
        # A hypothetical capability-13.0 GPU: nothing lists 13.x natively; torch.yaml 2.10 cu130 embeds
        # 12.0+PTX (the 2.11 wheels carry none), which counts only with the full CUDA 13.0 driver 580.65.06.
        ("580.95.05", True),
        # 580.10.01 runs CUDA 13 only through minor-version compatibility (floor 580): no PTX JIT for cu130;
        # it falls back to 2.8 cu129, whose 12.0+PTX its full CUDA 12.9 driver can JIT-compile.
        ("580.10.01", False),
    ],
)
def test_ptx_counts_only_with_the_full_cuda_driver(driver, expected_ok):
    facts = host(driver, [("future GPU", "13.0")], **torch("2.10.0"))
    res = resolve("torch", facts, knowledge(), 0)
    assert res.ok
    assert "sm_130 (future GPU): runs the embedded compute_120 PTX, JIT-compiled on first use " in " ".join(
        res.reasons
    )
    if expected_ok:
        assert res.packages == (
            "torch==2.10.0+cu130",
            "torchvision==0.25.0+cu130",
            "torchaudio==2.10.0+cu130",
        )
    else:
        assert res.packages == ("torch==2.8.0+cu129", "torchvision==0.23.0+cu129", "torchaudio==2.8.0+cu129")
        assert (
            "torch 2.10 cu130: no native kernels for sm_130 (future GPU), and its compute_120 PTX needs the "
            "full CUDA 13.0 driver to JIT-compile" in res.reasons
        )


@pytest.mark.parametrize(
    ("facts", "why"),
    [
        (
            host(None, [H100], **torch("2.5.1")),
            "cannot choose a torch wheel: the driver version is unknown (NVMLError_LibraryNotFound)",
        ),
        (
            host("535.183.01", [("mystery", None)], **torch("2.5.1")),
            "cannot choose a torch wheel: the compute capability of GPU 0 is unknown (not supported)",
        ),
    ],
)
def test_torch_never_guesses(facts, why):
    res = resolve("torch", facts, knowledge(), 0)
    assert (res.ok, res.reasons, res.packages) == (False, (why,), ())


def test_binary_compatibility():
    assert covers("8.9", ("8.0", "8.6", "9.0")) and covers("12.1", ("12.0",))
    assert not covers("12.0", ("9.0", "10.0")) and not covers("7.0", ("7.5", "8.0"))


def test_a_variant_without_an_arch_list_is_unknown_and_never_chosen():
    # torch.yaml 2.6: cu126 has no arch list (no source read gives it), cu124 lists 9.0; cuda_drivers.yaml
    # 12.6 GA needs 560.28.03, which 570 meets: cu126 would be the highest native variant if its kernels
    # were known. They are not, so the answer is cu124, and the reasons say why cu126 was passed over.
    res = resolve("torch", host("570.124.06", [H100], **torch("2.6.0")), knowledge(), 0)
    assert res.ok and res.packages[0] == "torch==2.6.0+cu124"
    assert (
        "torch 2.6 cu126: the torch table has no arch list for it: which GPUs it has kernels for is unknown"
        in res.reasons
    )


TF = {"name": "tensorflow", "build": "cpu"}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (
            # tensorflow.yaml 2.20: CUDA 12.5, Python 3.9-3.13; 12.5 update 0 needs 555.42.02, 535 meets the
            # 12.x floor 525.60.13. tensorflow-cpu is another distribution of the same module: removed first.
            host("535.183.01", [H100], **dict(TF, distribution="tensorflow-cpu", version="2.20.0")),
            {
                "ok": True,
                "packages": ("tensorflow[and-cuda]==2.20.0",),
                "uninstall": ("tensorflow-cpu",),
                "minor_compat": True,
            },
        ),
        (
            # tensorflow.yaml 2.18: Python 3.9-3.12, not 3.13; 2.21 (3.10-3.13) is the newest; 580 meets
            # 555.42.02 (12.5 update 0).
            host(
                "580.95.05", [H100], python="3.13.0", **dict(TF, distribution="tensorflow", version="2.18.0")
            ),
            {
                "ok": True,
                "packages": ("tensorflow[and-cuda]==2.21.*",),
                "uninstall": (),
                "minor_compat": False,
            },
        ),
        (
            # Every CUDA 12 row needs the 12.x floor 525.60.13; 470 is below it.
            host("470.256.02", [H100], **dict(TF, distribution="tensorflow", version="2.20.0")),
            {"ok": False, "packages": (), "needs_cuda": "12.5"},
        ),
    ],
)
def test_tensorflow_resolver(facts, expected):
    res = resolve("tensorflow", facts, knowledge(), 0)
    assert {k: getattr(res, k) for k in expected} == expected, res.reasons


JAX = {"name": "jax", "distribution": "jax", "version": "0.7.2", "build": "cpu"}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # jax.yaml cuda13: driver >= 580, SM >= 7.5; the newest 13.x toolkit, 13.3 update 0, needs 610.43.02.
        (
            host("580.95.05", [H100], **JAX),
            {"ok": True, "packages": ("jax[cuda13]==0.7.2",), "minor_compat": True},
        ),
        # jax.yaml cuda13 needs SM 7.5: a V100 gets cuda12 (SM >= 5.2); 12.9 update 0 needs 575.51.03 <= 580.
        (
            host("580.95.05", [V100], **JAX),
            {"ok": True, "packages": ("jax[cuda12]==0.7.2",), "minor_compat": False},
        ),
        # jax.yaml cuda13 needs 580, cuda12 525; 535 is below 12.9's 575.51.03.
        (
            host("535.183.01", [H100], **JAX),
            {"ok": True, "packages": ("jax[cuda12]==0.7.2",), "minor_compat": True},
        ),
        # Below cuda12's 525.
        (host("470.256.02", [H100], **JAX), {"ok": False, "packages": ()}),
    ],
)
def test_jax_resolver(facts, expected):
    res = resolve("jax", facts, knowledge(), 0)
    assert {k: getattr(res, k) for k in expected} == expected, res.reasons


def test_tensorflow_never_planned_past_its_table_nor_down_for_a_warning():
    # tensorflow.yaml ends at 2.21: a 2.22 gets no plan.
    tf = dict(TF, distribution="tensorflow", version="2.22.0")
    res = resolve("tensorflow", host("580.95.05", [H100], **tf), knowledge(), 0)
    assert (res.ok, res.packages) == (False, ())
    assert res.reasons[0].startswith(
        "tensorflow 2.22.0 is newer than gpudoctor's tensorflow table, which ends at 2.21"
    )
    # Without a downgrade only 2.19 (3.9-3.12) to 2.21 remain; 2.20 and 2.21 take Python 3.13: the answer is
    # the newest, and the older releases are named as not considered.
    facts = host(
        "580.95.05", [H100], python="3.13.0", **dict(TF, distribution="tensorflow", version="2.19.0")
    )
    res = resolve("tensorflow", facts, knowledge(), 0, (("downgrade", "no"),))
    assert res.packages == ("tensorflow[and-cuda]==2.21.*",)
    assert res.reasons[1].startswith("older releases (2.18, 2.17, ") and res.reasons[1].endswith(
        "are not considered: a warning's fix never downgrades tensorflow"
    )


def test_framework_resolver_dispatches_by_name():
    kb = knowledge()
    facts = host("550.127.05", [H100], **torch("2.9.0", "cuda", "13.0"))
    assert resolve("framework", facts, kb, 0) == resolve("torch", facts, kb, 0)
    cupy = host(
        "570.172.08",
        [H100],
        name="cupy",
        distribution="cupy-cuda13x",
        version="13.6.0",
        build="cuda",
        cuda="13",
    )
    res = resolve("framework", cupy, kb, 0)
    assert (res.ok, res.subject, res.reasons) == (
        False,
        "cupy",
        ("no resolver knows cupy's builds (only torch, tensorflow, jax, onnxruntime)",),
    )


@pytest.mark.parametrize(
    ("cuda", "expected"),
    [
        # cuda_drivers.yaml 13.0 update 0: 580.65.06; branches: R580 LTSB, EOL 2028-06, CUDA 13.
        ("13.0", ("580.65.06", 580, "LTSB", "2028-06", False)),
        # 12.8 update 0: 570.26; R570 is PB, so the first LTSB from 570 on: R580.
        ("12.8", ("570.26", 580, "LTSB", "2028-06", False)),
        # 12.2 update 2 (12.2.2): 535.104.05; R535 is LTSB with CUDA 12.
        ("12.2.2", ("535.104.05", 535, "LTSB", "2026-06", False)),
        # A bare major takes minor_compat 13: 580.
        ("13", ("580", 580, "LTSB", "2028-06", True)),
    ],
)
def test_driver_for_cuda(cuda, expected):
    need, why = driver_for_cuda(cuda, knowledge())
    assert why == ""
    assert (need.minimum, need.branch, need.designation, need.eol, need.minor_compat) == expected


def test_driver_resolver():
    kb = knowledge()
    res = resolve("driver", host("535.183.01", [H100]), kb, None, (("cuda", "13.0"),))
    assert (res.ok, res.driver.minimum, res.driver.branch) == (True, "580.65.06", 580)
    assert res.reasons == (
        "CUDA 13.0 needs driver 580.65.06 or newer",
        "branch: R580 (LTSB, supported until 2028-06)",
    )
    met = resolve("driver", host("580.95.05", [H100]), kb, None, (("cuda", "13.0"),))
    assert (met.ok, met.driver, met.reasons) == (
        True,
        None,
        ("driver 580.95.05 already meets CUDA 13.0's minimum 580.65.06",),
    )
    # cuda_drivers.yaml has no CUDA 12.7 (there was none).
    bad = resolve("driver", host("535.183.01", [H100]), kb, None, (("cuda", "12.7"),))
    assert (bad.ok, bad.reasons) == (
        False,
        ("cannot find a driver for CUDA 12.7: CUDA 12.7 is not in the cuda_drivers table",),
    )


def test_registry_names_every_resolver_with_its_args():
    assert {name: dict(spec.args) for name, spec in RESOLVERS.items()} == {
        "torch": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "tensorflow": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "jax": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "onnxruntime": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "framework": {"minor_compat": ("allow", "avoid"), "downgrade": ("yes", "no")},
        "driver": {"cuda": ()},
    }


def test_the_engine_names_exactly_the_resolvers_the_registry_implements():
    # The loader validates rules against the engine's own table, without importing the resolvers.
    assert RESOLVER_NAMES == tuple(RESOLVERS)
    assert all(dict(RESOLVER_ARGS[name]) == dict(spec.args) for name, spec in RESOLVERS.items())


def test_jax_switching_cuda_major_removes_the_other_plugin():
    # jax.yaml cuda13 needs 580; on 570 the cuda12 plugin (floor 525) replaces the installed CUDA 13 one.
    facts = host("570.172.08", [H100], **dict(JAX, build="cuda", cuda="13"))
    res = resolve("jax", facts, knowledge(), 0)
    assert (res.packages, res.uninstall) == (
        ("jax[cuda12]==0.7.2",),
        ("jax-cuda13-plugin", "jax-cuda13-pjrt"),
    )


def test_jax_avoiding_minor_compat_needs_the_newest_toolkit_of_its_major():
    # cuda_drivers.yaml 12.9 update 0: 575.51.03 > 570.172.08, and cuda13 needs 580: nothing without
    # minor-version compatibility; a driver for CUDA 12.9 (the installed plugin's major) would do.
    facts = host("570.172.08", [H100], **dict(JAX, build="cuda", cuda="12.9"))
    res = resolve("jax", facts, knowledge(), 0, (("minor_compat", "avoid"),))
    assert (res.ok, res.needs_cuda) == (False, "12.9")
    assert resolve("jax", facts, knowledge(), 0).reasons == (
        "the installed jax[cuda12] is already the best plugin this host runs",
    )


def ort(version: str) -> dict[str, Any]:
    return {"name": "onnxruntime", "distribution": "onnxruntime", "version": version, "build": "cpu"}


def test_onnxruntime_pins_a_release_that_exists_and_fits_the_driver():
    """Issue 24: `onnxruntime-gpu==<installed version>` was planned, a CUDA 13 build on a 570 driver or a
    release that does not exist (there is no onnxruntime-gpu 1.20.1)."""
    kb = knowledge()
    res = resolve("onnxruntime", host("570.172.08", [H100], **ort("1.30.0")), kb, 0)
    assert (res.ok, res.packages, res.uninstall) == (
        True,
        ("onnxruntime-gpu[cuda,cudnn]==1.26.0",),
        ("onnxruntime",),
    )
    assert res.reasons[0] == "onnxruntime-gpu 1.26.0 is the newest release this host runs"
    assert (
        "onnxruntime-gpu 1.30.0 (CUDA 13.x, cuDNN 9.x): CUDA 13.x needs driver 580 or newer; driver "
        "570.172.08 is older" in res.reasons
    )
    same_line = resolve("onnxruntime", host("570.172.08", [H100], **ort("1.20.1")), kb, 0)
    assert same_line.packages == ("onnxruntime-gpu==1.20.2",)
    assert same_line.notes[0].startswith("it has no extras: the CUDA 12 and cuDNN 9 libraries must be")
    new_driver = resolve("onnxruntime", host("580.95.05", [H100], **ort("1.30.0")), kb, 0)
    assert new_driver.packages == ("onnxruntime-gpu[cuda,cudnn]==1.30.0",)


def test_onnxruntime_a_warnings_fix_never_downgrades_and_says_which_driver_would_do():
    res = resolve(
        "onnxruntime", host("570.172.08", [H100], **ort("1.30.0")), knowledge(), 0, (("downgrade", "no"),)
    )
    assert (res.ok, res.needs_cuda) == (False, "13.0")
    assert (
        res.reasons[0]
        == "no onnxruntime-gpu release runs on driver 570.172.08 with these GPUs and Python 3.11"
    )


def test_onnxruntime_on_an_old_python_takes_a_release_that_supports_it():
    kb = knowledge()
    res = resolve("onnxruntime", host("570.172.08", [H100], python="3.9.18", **ort("1.19.0")), kb, 0)
    assert res.packages == ("onnxruntime-gpu==1.19.2",)  # the newest of the installed 1.19 line
    newest = resolve("onnxruntime", host("580.95.05", [H100], python="3.9.18", **ort("1.18.1")), kb, 0)
    assert newest.packages == ("onnxruntime-gpu==1.20.2",)
    too_new = "onnxruntime-gpu 1.21.0 (CUDA 12.x, cuDNN 9.x): needs Python 3.10 or newer; this is 3.9"
    assert too_new in newest.reasons


def test_onnxruntime_cuda_13_builds_have_no_code_for_a_volta_gpu():
    res = resolve("onnxruntime", host("580.95.05", [V100], **ort("1.30.0")), knowledge(), 0)
    assert res.packages == ("onnxruntime-gpu[cuda,cudnn]==1.26.0",)
    volta = "onnxruntime-gpu 1.31.1 (CUDA 13.x, cuDNN 9.x): CUDA 13.x has no code for Tesla V100-SXM2-32GB"
    assert any(r.startswith(volta) for r in res.reasons), res.reasons
