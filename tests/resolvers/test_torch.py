"""The torch resolver (resolvers/torch.py) against the shipped knowledge tables: each expected answer is
traced, in a comment, to the rows it comes from (file and row; `rules/knowledge/` is left out of the file
names)."""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

import pytest
from e2e.test_plans_every_generation import host_facts, plan

from gpudoctor.compat import driver_verdict, version_tuple
from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import resolve
from gpudoctor.resolvers.base import Host
from gpudoctor.resolvers.torch import gpu_verdict

from .hosts import A100, H100, RTX5090, V100, host, torch

CU121 = "https://download.pytorch.org/whl/cu121"
CU124 = "https://download.pytorch.org/whl/cu124"
CU126 = "https://download.pytorch.org/whl/cu126"
CU128 = "https://download.pytorch.org/whl/cu128"
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


# Torch's companions through the whole planner and the resolver's reason lines.
#
# Issue 23: no plan leaves a companion that requires the old torch, and the torch step's reason lines say
# exactly what was rejected.
#
# The first test runs the whole planner (the shipped rules, the shipped tables) over every torch patch release
# the companions table lists, installed as a CPU build, on hosts of each kind the tables distinguish (x86_64
# and aarch64; drivers below and above the CUDA 12.x and 13.x minimums; GPUs from Volta to Blackwell). The
# companions installed with that torch require it exactly (torch_companions.yaml), so whenever the plan
# installs another torch, each of torchvision and torchaudio must either be pinned to a release that requires
# the torch it pins, or be removed. The second checks every reason line that names variants passed over
# against what compat itself says of each variant on that host.

COMPANIONS = ("torchvision", "torchaudio")
HOSTS = [  # (driver, GPU as NVML names it, compute capability, machine)
    ("535.183.01", "NVIDIA H100 80GB HBM3", "9.0", "x86_64"),
    ("550.127.05", "NVIDIA A100-SXM4-80GB", "8.0", "x86_64"),
    ("570.133.07", "NVIDIA GeForce RTX 5090", "12.0", "x86_64"),
    ("580.95.05", "Tesla V100-SXM2-32GB", "7.0", "x86_64"),
    ("550.127.05", "NVIDIA GH200 480GB", "9.0", "aarch64"),
    ("570.133.07", "NVIDIA GH200 480GB", "9.0", "aarch64"),
    ("580.95.05", "NVIDIA GH200 480GB", "9.0", "aarch64"),
]


def _admits(requirement: Optional[str], torch: str) -> bool:
    """Whether a Requires-Dist on torch ("torch==2.0.1", "torch>=2.11") admits torch `torch`."""
    if requirement is None:
        return False
    ok = True
    for op, version in re.findall(r"(==|>=|<=|>|<|!=)(\d+(?:\.\d+)*)", requirement):
        have, want = version_tuple(torch), version_tuple(version)
        width = max(len(have), len(want))
        have, want = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        ok = ok and {
            "==": have == want, ">=": have >= want, "<=": have <= want,
            ">": have > want, "<": have < want, "!=": have != want,
        }[op]  # fmt: skip
    return ok


def _requirement(name: str, version: str) -> Optional[str]:
    """The Requires-Dist on torch of companion `name` at `version` (torch_companions.yaml)."""
    for row in knowledge().torch_companions:
        if getattr(row, name) == version:
            return getattr(row, f"{name}_requires")
    return None


def test_no_plan_leaves_a_companion_that_requires_the_old_torch():
    kb = knowledge()
    checked = removed = on_aarch64 = 0
    for row in kb.torch_companions:
        installed = row.torch  # a CPU build, with its companions (which require exactly it)
        for driver, gpu, cc, machine in HOSTS:
            for python in ("3.11.9", "3.12.3"):
                _, p = plan(host_facts(driver, gpu, cc, installed, python=python, machine=machine), kb)
                steps = [s for s in p.steps if s.resolver == "torch" and s.kind == "pip"]
                installs = [s.argv for s in steps if "install" in s.argv[3:4]]
                if not installs:
                    continue  # nothing installed: the installed torch and its companions stay together
                uninstalled = {a for s in steps if "uninstall" in s.argv[3:4] for a in s.argv[5:]}
                pins = dict(a.split("==", 1) for a in installs[0][4:] if "==" in a)
                torch = pins["torch"].split("+")[0]
                where = f"{installed} on {machine} {gpu} {driver} Python {python}: {installs[0]}"
                checked += 1
                on_aarch64 += machine == "aarch64"
                for name in COMPANIONS:
                    if name in uninstalled and name not in pins:
                        removed += 1
                        continue
                    assert name in pins, f"{name} left as installed, requiring torch {installed}: {where}"
                    if torch.endswith(".*"):  # no patch release known: every package pinned by series
                        assert pins[name].endswith(".*"), where
                        continue
                    version = pins[name].split("+")[0]
                    assert _admits(_requirement(name, version), torch), f"{name} {version}: {where}"
                    if machine == "aarch64" and not pins[name].count("+"):
                        assert name in uninstalled, f"untagged {name} not removed first: {where}"
    # The property was exercised: plans that install torch, on aarch64 too, and that had to remove one.
    assert checked > 300 and on_aarch64 > 100 and removed > 20, (checked, on_aarch64, removed)


MINOR_ONLY = " run here only through minor-version compatibility: a release that runs natively comes first"


def _named(line: str) -> tuple[set[tuple[str, str]], str]:
    """'torch 2.15 cu132, cu130; 2.14 cu130: why' -> ({(2.15, cu132), (2.15, cu130), (2.14, cu130)}, why)."""
    head, why = (line[: -len(MINOR_ONLY)], MINOR_ONLY) if line.endswith(MINOR_ONLY) else line.split(": ", 1)
    named = set()
    for part in head.removeprefix("torch ").split("; "):
        release, _, variants = part.partition(" ")
        named |= {(release, v) for v in variants.split(", ")} if variants else {(release, "")}
    return named, why


def _verdict(release, variant, host, kb, avoid: bool) -> tuple[str, str]:
    """('rejected', why) or ('minor', '') or ('native', ''), as compat judges the variant on `host`
    (`avoid`: minor-version compatibility refused)."""
    dv = driver_verdict(variant.cuda, host.driver, kb, avoid)
    if not dv.runs:
        return "rejected", dv.reason
    ok, reasons = gpu_verdict(variant, host, full_driver=not dv.minor_compat)
    if not ok:
        return "rejected", reasons[0]
    return ("minor" if dv.minor_compat else "native"), ""


def test_reason_lines_name_exactly_the_variants_passed_over_and_why():
    # Issue 23: "no wheel of torch 2.10, 2.9, 2.8, 2.7 runs on this host" was printed where only one variant
    # of each was rejected (the others ran through minor-version compatibility). Now every variant of every
    # release ranked above the chosen one is named once: with the reason compat gives for rejecting it, or
    # among those that run only through minor-version compatibility; nothing else is named.
    kb = knowledge()
    lines_seen = 0
    for driver, gpu, cc, machine in HOSTS:
        host = Host(driver=driver, python="3.11", gpus=((cc, gpu),), machine=machine)
        for installed in ("1.13.1", "2.5.1", "2.11.0"):
            kept = installed.rsplit(".", 1)[0]
            facts = host_facts(driver, gpu, cc, installed, machine=machine)
            for args in ((), (("minor_compat", "avoid"),)):
                res = resolve("torch", facts, kb, 0, args)
                if not res.ok or not res.packages:
                    continue
                chosen = res.packages[0].split("==")[1].split("+")[0].rsplit(".", 1)[0]
                # The installed release is tried first; other releases newest first: those ranked above the
                # chosen one are the installed one (said in full, one line per variant) and the newer ones.
                ahead = [
                    r for r in kb.torch_releases
                    if version_tuple(r.version) > version_tuple(chosen) and kept not in (r.version, chosen)
                ]  # fmt: skip
                avoid = bool(args)
                expected = {
                    (r.version, v.name): _verdict(r, v, host, kb, avoid) for r in ahead for v in r.variants
                }
                named: dict[tuple[str, str], tuple[str, str]] = {}
                for line in res.reasons[1:]:
                    own = tuple(f"torch {r}{c}" for r in (kept, chosen) for c in " :")  # said in full
                    if not line.startswith("torch ") or line.startswith(own):
                        continue
                    variants, why = _named(line)
                    lines_seen += 1
                    for key in variants:
                        assert key not in named, f"{key} named twice: {res.reasons}"
                        named[key] = ("minor", "") if why == MINOR_ONLY else ("rejected", why)
                assert named == {k: v for k, v in expected.items() if v[0] != "native"}, res.reasons
                assert not any("no wheel of torch" in line for line in res.reasons)
    assert lines_seen > 10, lines_seen
