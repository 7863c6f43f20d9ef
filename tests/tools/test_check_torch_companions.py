"""tools/check_torch_companions.py without the network: its parsing of pip's output and reports (captured
from real runs into tests/fixtures/pip_reports), its choice of pins, the table it writes (which must
validate), and the pip command lines it runs (against a stand-in pip)."""

from __future__ import annotations

import datetime
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from gpudoctor import knowledge as kn

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "check_torch_companions.py"
REPORTS = ROOT / "tests" / "fixtures" / "pip_reports"


@pytest.fixture(scope="module")
def tc():
    spec = importlib.util.spec_from_file_location("check_torch_companions", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_torch_companions"] = module
    spec.loader.exec_module(module)
    return module


def report(name: str) -> dict:
    return json.loads((REPORTS / f"{name}.json").read_text(encoding="utf-8"))


def test_index_versions_are_public_releases_oldest_first(tc):
    text = (REPORTS / "index-versions-torchaudio.txt").read_text(encoding="utf-8")
    versions = tc.parse_index_versions(text)
    assert versions[0] == Version("2.0.1") and versions[-1] == Version("2.11.1") and len(versions) == 23
    local = "torch (2.15.0)\nAvailable versions: 2.15.0, 2.14.1, 2.13.0+cpu, 2.13.0, 2.14.0rc1, 2.0.0\n"
    assert tc.parse_index_versions(local) == [Version(v) for v in ("2.0.0", "2.13.0", "2.14.1", "2.15.0")]
    assert tc.parse_index_versions("ERROR: No matching distribution found for torch\n") == []


@pytest.mark.parametrize(
    ("name", "filename", "platform", "requirement"),
    [
        # "torch (==2.0.1)", the older spelling of an exact pin
        ("torchvision-0.15.2-x86_64", "torchvision-0.15.2-cp311-cp311-manylinux1_x86_64.whl",
         "manylinux_2_5_x86_64", "torch==2.0.1"),
        # a stable-ABI wheel requiring only a lower bound
        ("torchaudio-2.11.1-aarch64", "torchaudio-2.11.1-py3-none-manylinux_2_28_aarch64.whl",
         "manylinux_2_28_aarch64", "torch>=2.11"),
        # no Requires-Dist at all
        ("torchaudio-2.11.0-x86_64", "torchaudio-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl",
         "manylinux_2_28_x86_64", None),
    ],
)  # fmt: skip
def test_a_report_gives_the_wheel_and_its_requirement_on_torch(tc, name, filename, platform, requirement):
    wheel = tc.parse_report(report(name))
    assert (wheel.filename, wheel.platform) == (filename, platform)
    req = tc.torch_requirement(wheel.requires_dist)
    assert (tc.requirement_text(req) if req else None) == requirement


def test_a_report_must_hold_one_package(tc):
    with pytest.raises(ValueError):
        tc.parse_report({"install": []})


@pytest.mark.parametrize(
    ("name", "x86_64", "aarch64"),
    [
        # nvidia-cuda-runtime-cu11==11.7.99; platform_system == "Linux" and platform_machine == "x86_64"
        ("torch-2.0.1-x86_64", "11.7", None),
        # cuda-toolkit[...,cudart,...]==13.0.2; platform_system == "Linux"
        ("torch-2.11.0-aarch64", "13.0", "13.0"),
    ],
)
def test_the_cuda_runtime_a_torch_wheel_requires_per_machine(tc, name, x86_64, aarch64):
    requires = tc.parse_report(report(name)).requires_dist
    assert (tc.cuda_runtime(requires, "x86_64"), tc.cuda_runtime(requires, "aarch64")) == (x86_64, aarch64)


@pytest.mark.parametrize(
    ("filename", "platform"),
    [
        ("torch-2.0.0-1-cp311-cp311-manylinux2014_aarch64.whl", "manylinux_2_17_aarch64"),  # a build tag
        ("x-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "manylinux_2_17_x86_64"),
        ("x-1.0-cp311-cp311-manylinux2010_x86_64.manylinux_2_28_x86_64.whl", "manylinux_2_12_x86_64"),
        ("x-1.0-cp311-cp311-win_amd64.whl", None),
        ("not-a-wheel.tar.gz", None),
    ],
)
def test_wheel_platform_is_the_oldest_glibc_tag_in_pep600_form(tc, filename, platform):
    assert tc.wheel_platform(filename) == platform


def _reqs(**pins: str | None) -> dict:
    return {Version(v.replace("_", ".")): (Requirement(r) if r else None) for v, r in pins.items()}


@pytest.mark.parametrize(
    ("torch", "candidates", "expected"),
    [
        # exact pins win; each torch gets the release that pins it
        ("2.0.1", _reqs(v0_15_1="torch==2.0.0", v0_15_2="torch==2.0.1"), ("0.15.2", "torch==2.0.1", True)),
        ("2.0.0", _reqs(v0_15_1="torch (==2.0.0)", v0_15_2="torch==2.0.1"), ("0.15.1", "torch==2.0.0", True)),
        # an exact pin beats a newer lower bound that also admits it
        ("2.14.0", _reqs(v0_29_0="torch==2.14.0", v0_29_2="torch>=2.14.0"),
         ("0.29.0", "torch==2.14.0", True)),
        # no exact pin: the newest lower bound in the same minor
        ("2.14.1", _reqs(v0_29_0="torch==2.14.0", v0_29_1="torch>=2.14.0", v0_29_2="torch>=2.14.0"),
         ("0.29.2", "torch>=2.14.0", False)),
        # a lower bound from an older minor is no companion of a newer torch
        ("2.15.0", _reqs(v0_29_2="torch>=2.14.0"), None),
        # a release stating no requirement on torch is never chosen
        ("2.11.0", _reqs(v2_11_0=None, v2_11_1="torch>=2.11"), ("2.11.1", "torch>=2.11", False)),
        ("2.11.0", _reqs(v2_11_0=None), None),
        ("2.12.0", {}, None),
    ],
)  # fmt: skip
def test_choose_companion(tc, torch, candidates, expected):
    choice = tc.choose_companion(Version(torch), candidates)
    assert ((choice.version, choice.requires, choice.exact) if choice else None) == expected


def _found(tc):
    """Three torch releases and their companions, from the captured reports and two made-up ones."""

    def release(name, version, x86=None, arm=None):
        r = tc.Release(name, Version(version))
        r.wheels = {"x86_64": x86, "aarch64": arm}
        return r

    def wheel(name, version, tag, requires):
        return tc.Wheel(name, version, f"{name}-{version}-cp311-cp311-{tag}.whl", tuple(requires),
                        tc.wheel_platform(f"{name}-{version}-cp311-cp311-{tag}.whl"))  # fmt: skip

    torch201 = tc.parse_report(report("torch-2.0.1-x86_64"))
    torch211 = tc.parse_report(report("torch-2.11.0-aarch64"))
    return {
        "torch": [
            release("torch", "2.0.1", torch201, wheel("torch", "2.0.1", "manylinux2014_aarch64", [])),
            release("torch", "2.11.0", None, torch211),
            release("torch", "2.12.0", wheel("torch", "2.12.0", "manylinux_2_28_x86_64", ["filelock"])),
        ],
        "torchvision": [
            release("torchvision", "0.15.2", tc.parse_report(report("torchvision-0.15.2-x86_64"))),
            release(
                "torchvision",
                "0.26.0",
                wheel("torchvision", "0.26.0", "manylinux_2_28_x86_64", ["torch (==2.11.0)"]),
            ),
        ],  # fmt: skip
        "torchaudio": [
            release("torchaudio", "2.11.0", tc.parse_report(report("torchaudio-2.11.0-x86_64"))),
            release("torchaudio", "2.11.1", None, tc.parse_report(report("torchaudio-2.11.1-aarch64"))),
        ],
    }


def test_the_written_table_validates_and_reads_back(tc, tmp_path):
    found = _found(tc)
    rows = tc.build_rows(found["torch"], found)
    text = tc.render(rows, datetime.date(2026, 12, 1), tc.without_torch_requirement(found))
    assert "no requirement on torch (never chosen): torchaudio 2.11.0" in text
    table, _parts, problems = kn.parse_table(text, "torch_companions.yaml", "torch_companions")
    assert problems == [] and table.checked == datetime.date(2026, 12, 1)
    by_torch = {r.torch: r for r in _parts["torch_companions"]}
    assert set(by_torch) == {"2.0.1", "2.11.0", "2.12.0"}
    r201, r211, r212 = by_torch["2.0.1"], by_torch["2.11.0"], by_torch["2.12.0"]
    assert (r201.torchvision, r201.torchaudio, r201.cuda_x86_64) == ("0.15.2", None, "11.7")
    assert r201.platforms == ("manylinux_2_5_x86_64", "manylinux_2_17_aarch64")
    assert (r211.torchvision, r211.torchaudio, r211.torchaudio_requires) == (
        "0.26.0",
        "2.11.1",
        "torch>=2.11",
    )
    assert (r211.platforms, r211.cuda_aarch64) == (("manylinux_2_28_aarch64",), "13.0")
    assert r211.torchaudio_platforms == ("manylinux_2_28_aarch64",)
    assert (r212.torchvision, r212.torchaudio, r212.cuda_x86_64) == (None, None, None)
    assert "no torchvision release on the index requires torch 2.12.0" in r212.note
    assert "no torchaudio release pins torch==2.11.0" in r211.note
    source = table.sources["torchvision-0.15.2"]
    assert source.url == "https://github.com/pytorch/vision/releases/tag/v0.15.2"
    assert "Requires-Dist on torch: torch==2.0.1" in source.read
    assert "queried by tools/check_torch_companions.py on 2026-12-01" in source.title
    assert "index.example" not in text  # only file names, never the index's address


def test_a_dump_reads_back_to_the_same_table(tc):
    found = _found(tc)
    again = tc.load(tc.dump(found))
    day = datetime.date(2026, 12, 1)
    assert tc.render(tc.build_rows(again["torch"], again), day) == tc.render(
        tc.build_rows(found["torch"], found), day
    )


def test_check_compares_with_the_tables_own_date(tc):
    found = _found(tc)
    text = tc.render(tc.build_rows(found["torch"], found), datetime.date(2026, 11, 2))
    assert tc.checked_date(text) == datetime.date(2026, 11, 2)
    assert tc.stale_lines(text, text) == []
    assert tc.stale_lines(text, text.replace('"0.15.2"', '"0.15.3"'))


FAKE_PIP = """\
import json, shutil, sys
from pathlib import Path
args = sys.argv[1:]
Path(sys.argv[0]).with_suffix(".calls").open("a").write(json.dumps(args) + "\\n")
if args[:2] == ["index", "versions"]:
    print("torchvision (0.15.2)\\nAvailable versions: 0.15.2, 0.15.1")
elif args[0] == "install":
    if "--platform" in args and args[args.index("--platform") + 1].endswith("aarch64"):
        sys.stderr.write("ERROR: No matching distribution found for torchvision==0.15.2\\n")
        sys.exit(1)
    shutil.copy(REPORT, args[args.index("--report") + 1])
"""


def test_pip_runs_from_the_index_alone_with_timeouts(tc, tmp_path, monkeypatch):
    fake = tmp_path / "pip.py"
    fake.write_text(FAKE_PIP.replace("REPORT", repr(str(REPORTS / "torchvision-0.15.2-x86_64.json"))))
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/constraints.txt")
    timeouts = []
    run = tc.subprocess.run

    def spy(argv, **kw):
        assert "shell" not in kw and kw["timeout"] > 0
        timeouts.append(kw["timeout"])
        return run(argv, **kw)

    monkeypatch.setattr(tc.subprocess, "run", spy)
    pip = tc.Pip([sys.executable, str(fake)], "https://index.example/simple", verbose=False)
    assert "PIP_FIND_LINKS" not in pip.env and "PIP_CONSTRAINT" not in pip.env
    assert pip.env["PIP_CONFIG_FILE"] == tc.os.devnull
    assert pip.versions("torchvision") == [Version("0.15.1"), Version("0.15.2")]
    release = pip.release("torchvision", Version("0.15.2"), ("3.11", "3.12"))
    assert release.wheels["x86_64"].platform == "manylinux_2_5_x86_64"
    assert release.wheels["aarch64"] is None
    calls = [json.loads(line) for line in fake.with_suffix(".calls").read_text().splitlines()]
    installs = [c for c in calls if c[0] == "install"]
    assert installs[0][-1] == "torchvision==0.15.2"
    for flag in ("--dry-run", "--ignore-installed", "--no-deps", "--report", "--only-binary"):
        assert flag in installs[0]
    assert installs[0][installs[0].index("--index-url") + 1] == "https://index.example/simple"
    assert [c[c.index("--python-version") + 1] for c in installs] == ["3.11", "3.11", "3.12"]
    assert len(timeouts) == len(calls)


def test_the_script_has_no_dependency_beyond_packaging(tc):
    stdlib = getattr(sys, "stdlib_module_names", None)
    if stdlib is None:
        pytest.skip("sys.stdlib_module_names needs Python 3.10")
    imported = {
        line.split()[1].split(".")[0]
        for line in TOOL.read_text(encoding="utf-8").splitlines()
        if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
    }
    assert imported - set(stdlib) == {"packaging"}


def test_the_docstring_says_which_indexes_were_not_read(tc):
    doc = textwrap.dedent(tc.__doc__)
    assert "cuXXX" in doc and "NOT queried" in doc
