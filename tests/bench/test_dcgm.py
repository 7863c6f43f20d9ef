"""gpudoctor/bench/dcgm.py: `dcgmi diag -r LEVEL --json` read into one result per test per GPU.

The parser is run on real dcgmi output (tests/fixtures/bench/dcgm/, sources in its README), on documents
built to dcgmi's source where no capture of a layout is public (marked so), and on what is not an answer;
run() on a fake Host and, twice, through the live Host with a `dcgmi` of our own first on PATH.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Optional

import pytest

from gpudoctor.bench import dcgm
from gpudoctor.bench.dcgm import DcgmResult, Diag
from gpudoctor.host.base import NO_PERMISSION, NOT_FOUND, NOT_RECORDED, TIMED_OUT, CommandResult, HostError
from gpudoctor.host.live import LiveHost

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bench" / "dcgm"
PERSISTENCE = (
    "Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running "
    '"nvidia-smi -i <gpuId> -pm 1 " as root.'
)
SRAM = (
    "Error getting the SRAM Threshold Count for GPU 0. Status = 0. Value = 9223372036854775794. "
    "SRAM Threshold checking was skipped."
)
SOFTWARE_FAIL = DcgmResult("software", "Deployment", "fail", 0, f"{PERSISTENCE}; {SRAM}")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# --- argv -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_argv_per_level(level):
    assert dcgm.argv(level) == ("dcgmi", "diag", "-r", str(level), "--json")
    assert dcgm.ARGV_FOR_LEVEL[level] == dcgm.argv(level)


@pytest.mark.parametrize("level", [0, 5, -1, True, "1", 1.0, None])
def test_argv_refuses_other_levels(level):
    with pytest.raises(ValueError, match="expected one of 1, 2, 3, 4"):
        dcgm.argv(level)


# --- real output, DCGM 4.x ------------------------------------------------------------------------------


def test_dcgm_4_5_2_level2_gated():
    assert dcgm.parse(fixture("dcgm-4.5.2-gb10-level2-gated.json")) == Diag(
        results=(
            SOFTWARE_FAIL,
            DcgmResult("memory", "Hardware", "skip", 0, ""),
            DcgmResult("pcie", "Integration", "skip", 0, ""),
        ),
        version="4.5.2",
    )


def test_dcgm_4_5_2_level2_allowed():
    assert dcgm.parse(fixture("dcgm-4.5.2-gb10-level2-allowed.json")) == Diag(
        results=(
            SOFTWARE_FAIL,
            DcgmResult("memory", "Hardware", "pass", 0, "Allocated 112427837082 bytes (87.5%)"),
            DcgmResult(
                "pcie",
                "Integration",
                "pass",
                0,
                "GPU to Host bandwidth: 58.62 GB/s; Host to GPU bandwidth: 58.88 GB/s; "
                "bidirectional bandwidth: 58.69 GB/s; GPU to Host latency: 1.563 us; "
                "Host to GPU latency: 1.740 us; bidirectional latency: 3.078 us",
            ),
        ),
        version="4.5.2",
    )


def test_dcgm_4_2_3_level1():
    """4.2.3's test summary carries only the info no entity owns; 4.5.2's repeats the warnings too. Either
    way the GPU's result has each text once."""
    assert dcgm.parse(fixture("dcgm-4.2.3-gb10-level1.json")) == Diag(
        results=(SOFTWARE_FAIL,), version="4.2.3"
    )


def test_a_cpu_entity_and_a_test_with_only_a_summary_are_tied_to_no_gpu():
    doc = json.loads(fixture("dcgm-4.5.2-gb10-level2-allowed.json"))
    tests = doc["DCGM Diagnostic"]["test_categories"][1]["tests"]
    tests.append(
        {
            "name": "cpu_eud",
            "results": [{"entity_group": "CPU", "entity_group_id": 7, "entity_id": 0, "status": "Pass"}],
            "test_summary": {"status": "Pass"},
        }
    )
    tests.append(
        {"name": "diagnostic", "test_summary": {"status": "Fail", "warnings": [{"warning": "x  y"}]}}
    )
    tests.append({"name": "pulse_test"})  # neither results nor summary: DCGM did not run it
    results = [r for r in dcgm.parse(json.dumps(doc)).results if r.category == "Hardware"]
    assert results[1:] == [
        DcgmResult("cpu_eud", "Hardware", "pass", None, ""),
        DcgmResult("diagnostic", "Hardware", "fail", None, "x y"),
    ]


# --- real output, the 2.x/3.x layout (nvvs 3.1.0) -------------------------------------------------------


def test_nvvs_3_1_0_real_output():
    deployment = (
        "Denylist",
        "NVML Library",
        "CUDA Main Library",
        "Permissions and OS-related Blocks",
        "Persistence Mode",
        "Environmental Variables",
        "Page Retirement/Row Remap",
        "Graphics Processes",
        "Inforom",
    )
    assert dcgm.parse(fixture("nvvs-3.1.0-real-output.txt")) == Diag(
        results=tuple(DcgmResult(name, "Deployment", "pass", None, "") for name in deployment)
        + tuple(DcgmResult("software", "Custom", "pass", gpu, "") for gpu in range(8)),
        version="3.1.0",
    )


# --- the 3.x and 2.x dcgmi layouts, built to dcgmi/Diag.cpp (no public capture is whole) --------------

# Built to NVIDIA/DCGM dcgmi/Diag.cpp at tag 3.3.9 (HelperJsonAddBasicTests, HelperJsonAddResult,
# HelperJsonBuildOutput): deployment checks have one result, with the integer gpu_id of the GPU their
# errors name and the text under "warnings" inside each warning object; per-GPU tests have gpu_id as a
# string and info as one string; version and driver at the top level.
DCGMI_3 = {
    "DCGM GPU Diagnostic": {
        "test_categories": [
            {
                "category": "Deployment",
                "tests": [
                    {"name": "Denylist", "results": [{"status": "Pass"}]},
                    {
                        "name": "Persistence Mode",
                        "results": [
                            {
                                "gpu_id": 1,
                                "status": "Fail",
                                "warnings": [
                                    {
                                        "error_category": 8,
                                        "error_id": 29,
                                        "error_severity": 5,
                                        "warnings": "Persistence mode for GPU 1 is disabled.",
                                    }
                                ],
                            }
                        ],
                    },
                ],
            },
            {
                "category": "Integration",
                "tests": [
                    {
                        "name": "PCIe",
                        "results": [
                            {
                                "gpu_id": "0",
                                "info": "GPU 0 GPU to Host bandwidth:\t\t24.02 GB/s",
                                "status": "Pass",
                            },
                            {
                                "gpu_id": "1",
                                "status": "Fail",
                                "warnings": [
                                    {
                                        "error_category": 2,
                                        "error_id": 35,
                                        "error_severity": 3,
                                        "warning": "GPU 1 PCIe replay  rate\nexceeded.",
                                    }
                                ],
                            },
                        ],
                    }
                ],
            },
        ]
    },
    "Driver Version Detected": "550.54.15",
    "GPU Device IDs": ["20b5", "20b5"],
    "version": "3.3.9",
}


def test_dcgmi_3_layout():
    assert dcgm.parse(json.dumps(DCGMI_3, indent="\t")) == Diag(
        results=(
            DcgmResult("Denylist", "Deployment", "pass", None, ""),
            DcgmResult(
                "Persistence Mode", "Deployment", "fail", 1, "Persistence mode for GPU 1 is disabled."
            ),
            DcgmResult("PCIe", "Integration", "pass", 0, "GPU 0 GPU to Host bandwidth: 24.02 GB/s"),
            DcgmResult("PCIe", "Integration", "fail", 1, "GPU 1 PCIe replay rate exceeded."),
        ),
        version="3.3.9",
    )


def test_dcgmi_2_layout():
    """Built to dcgmi/Diag.cpp of DCGM 2.2.6: gpu_ids as the one GPU's index in a string, the warning and
    the info as plain strings, no version."""
    doc = {
        "DCGM GPU Diagnostic": {
            "test_categories": [
                {"category": "Deployment", "tests": [{"name": "Blacklist", "results": [{"status": "Pass"}]}]},
                {
                    "category": "Hardware",
                    "tests": [
                        {
                            "name": "GPU Memory",
                            "results": [
                                {"gpu_ids": "0", "status": "Pass", "info": "Allocated 1 bytes"},
                                {
                                    "gpu_ids": "1",
                                    "status": "Fail",
                                    "warnings": "Error using CUDA API cudaMalloc",
                                },
                            ],
                        }
                    ],
                },
            ]
        }
    }
    assert dcgm.parse(json.dumps(doc)) == Diag(
        results=(
            DcgmResult("Blacklist", "Deployment", "pass", None, ""),
            DcgmResult("GPU Memory", "Hardware", "pass", 0, "Allocated 1 bytes"),
            DcgmResult("GPU Memory", "Hardware", "fail", 1, "Error using CUDA API cudaMalloc"),
        )
    )


# --- status mapping -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelled, status",
    [
        ("Pass", "pass"),
        ("PASS", "pass"),
        ("Fail", "fail"),
        ("FAIL", "fail"),
        ("Warn", "warn"),
        ("WARNING", "warn"),
        ("Skip", "skip"),
        ("SKIP", "skip"),
        ("Not Run", "skip"),
        ("not  run", "skip"),
        ("NOT_RUN", "skip"),
        ("Aborted", "aborted"),  # unknown spellings are kept, never taken for a pass
        ("Passing?", "passing?"),
        ("", "unknown"),
        (None, "unknown"),
        ({"a": 1}, "unknown"),
    ],
)
def test_status_mapping(spelled, status):
    assert dcgm.normalise_status(spelled) == status
    doc = {
        "DCGM Diagnostic": {
            "test_categories": [{"category": "Hardware", "tests": [{"name": "t", "results": []}]}]
        }
    }
    result = {"entity_group": "GPU", "entity_id": 3}
    if spelled is not None:
        result["status"] = spelled
    doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"].append(result)
    assert dcgm.parse(json.dumps(doc)).results == (DcgmResult("t", "Hardware", status, 3, ""),)


def test_the_message_is_collapsed_and_cut():
    long = "word " * 200
    doc = {
        "DCGM Diagnostic": {
            "test_categories": [
                {
                    "category": "Stress",
                    "tests": [
                        {
                            "name": "targeted_power",
                            "results": [
                                {
                                    "entity_group": "GPU",
                                    "entity_id": 2,
                                    "status": "Fail",
                                    "warnings": [{"warning": "a\n\tb"}, {"warning": "a\n\tb"}, "plain"],
                                    "info": [long],
                                }
                            ],
                        }
                    ],
                }
            ]
        }
    }
    (result,) = dcgm.parse(json.dumps(doc)).results
    assert result.message.startswith("a b; plain; word word")
    assert len(result.message) <= dcgm.MAX_MESSAGE and result.message.endswith("word...")


# --- what is not an answer ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, error",
    [
        ("", "dcgmi printed nothing"),
        ("  \n\t\n", "dcgmi printed nothing"),
        ("Successfully ran diagnostic for group.\n+-----+\n", "dcgmi printed no JSON: Successfully ran"),
        (
            "Error: Unable to start an embedded host engine. Unknown Error.",
            "dcgmi: Error: Unable to start an",
        ),
        ('{"DCGM Diagnostic": {"test_categories": [', "dcgmi printed no JSON: {"),
        ("[" * 100_000, "dcgmi printed no JSON: [[[["),
        ("[1, 2]", "no known dcgmi diag layout (list)"),
        ("{}", "no known dcgmi diag layout (empty)"),
        ('{"tests": [], "errors": []}', "no known dcgmi diag layout (errors, tests)"),
        ('{"DCGM Diagnostic": "x"}', "no known dcgmi diag layout (DCGM Diagnostic)"),
        ('{"DCGM Diagnostic": {"test_categories": "x"}}', "test_categories that is not a list"),
        ('{"DCGM GPU Diagnostic":{"version":"4.2.3"}}', "dcgmi diag reported no test results"),
        ('{"DCGM Diagnostic": {"test_categories": [null, 3, {"tests": [null, 3]}]}}', "no test results"),
    ],
)
def test_not_an_answer_is_an_error_never_an_exception(text, error):
    diag = dcgm.parse(text)
    assert diag.results == ()
    assert error in diag.error
    assert len(diag.error) < 300


def test_no_host_engine_is_said_plainly():
    diag = dcgm.parse(fixture("no-hostengine.txt"))
    assert diag == Diag(
        error="dcgmi cannot reach the DCGM host engine (is nv-hostengine running? e.g. systemctl start "
        "nvidia-dcgm): Error: unable to establish a connection to the specified host: localhost"
    )


def test_runtime_error():
    """dcgmi's HelperDisplayFailureMessage in JSON mode: the version and the reason, nothing else."""
    text = json.dumps(
        {
            "DCGM Diagnostic": {
                "runtime_error": "Error: Diagnostic could not be run while DCGM is paused.\n",
                "version": "4.2.3",
            }
        },
        indent="\t",
    )
    assert dcgm.parse(text) == Diag(
        version="4.2.3", error="dcgmi diag: Error: Diagnostic could not be run while DCGM is paused."
    )


def test_lines_around_the_json_are_ignored():
    text = (
        "Warning: something a library printed\n"
        + fixture("dcgm-4.5.2-gb10-level2-gated.json")
        + "Error: unable to close connection to specified host: localhost\n"
    )
    assert dcgm.parse(text) == dcgm.parse(fixture("dcgm-4.5.2-gb10-level2-gated.json"))


# --- run() on a fake Host -------------------------------------------------------------------------------


class FakeHost:
    kind = "snapshot"

    def __init__(self, result: Optional[CommandResult] = None, error: Optional[HostError] = None) -> None:
        self.result, self.error = result, error
        self.calls: list[tuple[tuple[str, ...], float]] = []

    def run(self, argv: tuple[str, ...], timeout: float = 2.0) -> CommandResult:
        self.calls.append((argv, timeout))
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def answered(stdout: str = "", rc: Optional[int] = 0, stderr: str = "") -> FakeHost:
    return FakeHost(CommandResult(dcgm.argv(2), rc, stdout, stderr))


def test_run_asks_for_the_level_under_the_time_limit():
    host = answered(fixture("dcgm-4.5.2-gb10-level2-allowed.json"))
    diag = dcgm.run(host, 2, timeout=42.5)
    assert host.calls == [(("dcgmi", "diag", "-r", "2", "--json"), 42.5)]
    assert diag == dcgm.parse(fixture("dcgm-4.5.2-gb10-level2-allowed.json"))


def test_run_a_failed_test_exits_non_zero_and_its_json_is_the_answer():
    diag = dcgm.run(answered(fixture("dcgm-4.5.2-gb10-level2-gated.json"), rc=226), 2, 60)
    assert diag.error == "" and diag.results[0] == SOFTWARE_FAIL


def test_run_without_dcgmi():
    assert dcgm.run(FakeHost(error=HostError(NOT_FOUND, "dcgmi")), 1, 60) == Diag(
        error="dcgmi not found: DCGM is not installed"
    )


@pytest.mark.parametrize(
    "host",
    [
        answered(rc=None),
        FakeHost(error=HostError(TIMED_OUT, "dcgmi diag -r 2 --json did not finish within 1.5 s")),
    ],
)
def test_run_that_did_not_finish(host):
    assert dcgm.run(host, 2, 1.5) == Diag(error="dcgmi diag -r 2 did not finish within 1.5 s")


@pytest.mark.parametrize(
    "error, expected",
    [
        (HostError(NO_PERMISSION, "dcgmi"), "dcgmi diag -r 1: no permission (dcgmi)"),
        (HostError(NOT_RECORDED), "dcgmi diag -r 1: not recorded in snapshot"),
    ],
)
def test_run_other_host_errors(error, expected):
    assert dcgm.run(FakeHost(error=error), 1, 60) == Diag(error=expected)


def test_run_non_zero_without_json():
    diag = dcgm.run(answered(fixture("no-hostengine.txt"), rc=255), 2, 60)
    assert diag.error.startswith(
        "dcgmi diag -r 2 exited with status 255: dcgmi cannot reach the DCGM host engine"
    )
    diag = dcgm.run(
        answered("", rc=1, stderr="dcgmi: error while loading shared libraries: libdcgm.so.4\n"), 2, 60
    )
    assert diag.error == (
        "dcgmi diag -r 2 exited with status 1: dcgmi: error while loading shared libraries: libdcgm.so.4"
    )
    diag = dcgm.run(answered("", rc=3), 2, 60)
    assert diag.error == "dcgmi diag -r 2 exited with status 3, printing nothing"


def test_run_zero_without_json():
    assert dcgm.run(answered("Successfully ran diagnostic for group.\n"), 1, 60).error == (
        "dcgmi printed no JSON: Successfully ran diagnostic for group."
    )


# --- run() through the live Host, with a dcgmi of our own ------------------------------------------------


def fake_dcgmi(directory: Path, body: str) -> None:
    script = directory / "dcgmi"
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def on_path(monkeypatch, directory: Path) -> None:
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ.get('PATH', '')}")


def test_live_host_runs_dcgmi_and_reads_its_json(tmp_path, monkeypatch):
    fixture_path = FIXTURES / "dcgm-4.5.2-gb10-level2-gated.json"
    fake_dcgmi(tmp_path, f"[ \"$*\" = 'diag -r 2 --json' ] || exit 9\ncat '{fixture_path}'\nexit 226\n")
    on_path(monkeypatch, tmp_path)
    assert dcgm.run(LiveHost(), 2, timeout=5.0) == dcgm.parse(fixture_path.read_text(encoding="utf-8"))


def test_live_host_dcgmi_that_never_ends(tmp_path, monkeypatch):
    fake_dcgmi(tmp_path, "exec sleep 600\n")
    on_path(monkeypatch, tmp_path)
    started = time.monotonic()
    diag = dcgm.run(LiveHost(), 1, timeout=1.0)
    assert time.monotonic() - started < 1.0 + 2.0  # killing the group, beyond the time limit
    assert diag == Diag(error="dcgmi diag -r 1 did not finish within 1 s")


def test_live_host_without_dcgmi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert dcgm.run(LiveHost(), 1, timeout=1.0) == Diag(error=dcgm.NOT_INSTALLED)
