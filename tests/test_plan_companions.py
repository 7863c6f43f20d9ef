"""Issue 23: no plan leaves a companion that requires the old torch, and the torch step's reason lines say
exactly what was rejected.

The first test runs the whole planner (the shipped rules, the shipped tables) over every torch patch release
the companions table lists, installed as a CPU build, on hosts of each kind the tables distinguish (x86_64
and aarch64; drivers below and above the CUDA 12.x and 13.x minimums; GPUs from Volta to Blackwell). The
companions installed with that torch require it exactly (torch_companions.yaml), so whenever the plan
installs another torch, each of torchvision and torchaudio must either be pinned to a release that requires
the torch it pins, or be removed. The second checks every reason line that names variants passed over
against what compat itself says of each variant on that host.
"""

from __future__ import annotations

import re
from typing import Optional

from test_plans_every_generation import host_facts, plan

from gpudoctor.compat import driver_verdict, version_tuple
from gpudoctor.knowledge import knowledge
from gpudoctor.resolvers import resolve
from gpudoctor.resolvers.base import Host
from gpudoctor.resolvers.torch import gpu_verdict

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
