"""Will it run there? `check --image`, `check --lock` and `fleet --image` end to end: real image archives
written by tests/image/imagegen.py (OCI layout and `docker save`, whiteouts included), real lockfiles
(tests/lockfile/data, each with its source), judged against the shipped H200 snapshot and the fake NVML's
RTX 5090 (tests/fake_nvml/scenarios/rtx5090-driver570.scn, from a real nvidia-smi), through the real CLI."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from image import imagegen as g
from report.reportkit import compare

from conftest import H200, run_cli
from nvmlrig import SCENARIOS, gpudoctor

LOCKS = Path(__file__).parents[1] / "lockfile" / "data"
GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden"
NEW_CUDA_ENV = [e.replace("cuda>=12.4 brand=tesla,driver>=470,driver<471", "cuda>=13.1") for e in g.CUDA_ENV]


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict:
    """The test image (CUDA 12.4, torch 2.5.1+cu124) in each archive format, an arm64 build of it, one that
    requires CUDA 13.1, and a hostile archive (a member climbing out of it)."""
    root = tmp_path_factory.mktemp("images")
    layers = g.torch_layers()
    out = {
        "docker": g.write_image(root / "train-docker.tar", layers, "docker", env=g.CUDA_ENV),
        "oci-dir": g.write_image(root / "train-oci", layers, "oci-dir", env=g.CUDA_ENV),
        "arm64": g.write_image(
            root / "arm.tar", layers, "oci-tar", arch="arm64", variant="v8", env=g.CUDA_ENV
        ),
        "cuda13": g.write_image(root / "cuda13.tar", layers, "oci-tar", env=NEW_CUDA_ENV),
    }
    climbing = tarfile.TarInfo("../../etc/passwd")
    out["hostile"] = g.write_tar(root / "hostile.tar", {"oci-layout": g.OCI_LAYOUT}, [climbing])
    return out


def _check(*args: str) -> tuple[int, dict, str]:
    r = run_cli("check", "--snapshot", str(H200), "--format", "json", *args)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else {}), r.stderr


def _fired(report: dict) -> dict:
    return {f["rule"]: f for f in report.get("findings", [])}


def test_an_image_this_host_runs_passes_in_every_archive_format(images):
    for fmt in ("docker", "oci-dir"):
        code, report, err = _check("--image", str(images[fmt]))
        assert code == 0, err
        frameworks = report["facts"]["frameworks"]
        assert [(f["name"], f["version"], f["cuda"]) for f in frameworks] == [("torch", "2.5.1", "12.4")]
        assert report["facts"]["image"]["arch"] == "amd64"
        assert report["facts"]["container"]["require_verdict"] == "met"


def test_an_image_requiring_a_newer_cuda_is_refused_by_the_runtime(images):
    code, report, _err = _check("--image", str(images["cuda13"]))
    assert code == 1
    refused = _fired(report)["GD-CONTAINER-001"]
    assert "unmet requirement NVIDIA_REQUIRE_CUDA=cuda>=13.1" in refused["message"]
    assert refused["side"] == "both"


def test_an_arm64_image_on_an_x86_host_is_another_architecture(images):
    code, report, _err = _check("--image", str(images["arm64"]))
    assert code == 1
    assert _fired(report)["GD-IMAGE-001"]["message"].startswith(
        f"The image {images['arm64']} is built for linux/arm64 (aarch64); this host is x86_64"
    )


def test_a_hostile_archive_is_refused_with_exit_2_and_its_reason(images):
    r = run_cli("check", "--snapshot", str(H200), "--image", str(images["hostile"]))
    assert r.returncode == 2
    assert r.stderr.startswith(f"gpudoctor: --image {images['hostile']}: ") and "../../etc/passwd" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_torch_without_sm_120_kernels_does_not_run_on_an_rtx_5090(images, fake_lib):
    """torch 2.5.1+cu124 has no kernels for compute capability 12.0: the image is the one to change."""
    run = gpudoctor(
        fake_lib,
        SCENARIOS / "rtx5090-driver570.scn",
        "check",
        "--format",
        "json",
        "--image",
        str(images["docker"]),
    )
    report = run.json()
    assert report["facts"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 5090 D"
    arch = {f["rule"]: f for f in report["findings"]}["GD-ARCH-001"]
    assert arch["message"] == (
        "torch 2.5.1 (CUDA 12.4 build) has no kernels for compute capability 12.0 of GPU(s) 0: it is "
        "compiled for 5.0, 6.0, 7.0, 7.5, 8.0, 8.6, 9.0."
    )
    assert (run.rc, arch["side"]) == (1, "both")


def test_a_lockfile_is_judged_as_if_installed():
    """A real universal uv.lock (text-generation-inference, torch 2.7.0+cu128 on Linux): the pins that apply
    to this machine are the environment judged."""
    lock = LOCKS / "tgi-2025-09-uv.lock"
    code, report, err = _check("--lock", str(lock))
    assert code == 0, err
    assert [(f["name"], f["version"], f["build"], f["cuda"]) for f in report["facts"]["frameworks"]] == [
        ("torch", "2.7.0", "cuda", "12.8")
    ]
    assert report["facts"]["lock"]["format"] == "uv.lock"
    # judged for the snapshot's Python 3.12.3, which the lock's requires-python >=3.9 admits
    assert (report["facts"]["lock"]["python"], report["facts"]["python"]["version"]) == ("3.12.3", "3.12.3")


def test_image_and_lock_go_alone():
    r = run_cli("check", "--image", "a.tar", "--lock", "uv.lock")
    assert (r.returncode, r.stderr.strip()) == (
        2,
        "gpudoctor: --image and --lock each judge one environment: give one of them",
    )
    r = run_cli("check", "--image", "a.tar", "--deep")
    assert r.returncode == 2 and "judges it without running anything" in r.stderr


def test_fleet_groups_say_which_nodes_would_refuse_the_image(images, tmp_path):
    """Two nodes from one real report (the H200) and one group of their own: the image needing CUDA 13.1 is
    refused by every group of driver 580 (CUDA 13.0), with the plan; the CUDA 12.4 image runs."""
    reports = tmp_path / "reports"
    reports.mkdir()
    r = run_cli("check", "--snapshot", str(H200), "--format", "json")
    for name in ("gpu-a1", "gpu-a2"):
        data = json.loads(r.stdout)
        data["host"]["hostname"] = name
        (reports / f"{name}.json").write_text(json.dumps(data))
    refused = run_cli("fleet", str(reports), "--image", str(images["cuda13"]), "--format", "json")
    assert refused.returncode == 1, refused.stderr
    gate = json.loads(refused.stdout)
    assert gate["summary"] == {
        "groups": 1, "nodes": 2, "failing_groups": 1, "failing_nodes": 2, "exit_code": 1,
    }  # fmt: skip
    group = gate["groups"][0]
    assert (group["gpu"], group["driver"], group["machine"], group["nodes"]) == (
        "NVIDIA H200", "580.159.04", "x86_64", ["gpu-a1", "gpu-a2"],
    )  # fmt: skip
    assert [f["rule"] for f in group["findings"] if f["severity"] == "error"] == ["GD-CONTAINER-001"]
    # the node side: the driver branch that runs the image's CUDA 13.1 (resolvers/driver.py)
    driver = [s for s in group["plan"]["steps"] if s["resolver"] == "driver"]
    assert len(driver) == 1 and "for CUDA 13.1" in driver[0]["text"], group["plan"]["steps"]
    # check's policy applies as check applies it; one policy file serves fleet rules too
    policy = tmp_path / "gpudoctor.toml"
    policy.write_text(
        '[ignore]\nGD-CONTAINER-001 = "the nodes move to R590 before this image ships"\n'
        'GD-FLEET-DRIVER-001 = "canary nodes"\n'
    )
    excused = run_cli("fleet", str(reports), "--image", str(images["cuda13"]), "--policy", str(policy))
    assert excused.returncode == 0, excused.stdout + excused.stderr
    assert excused.stdout.splitlines()[3:5] == [
        "  runs",
        "  ignored by policy: GD-CONTAINER-001 (error): the nodes move to R590 before this image ships",
    ]
    runs = run_cli("fleet", str(reports), "--image", str(images["docker"]))
    assert runs.returncode == 0, runs.stdout + runs.stderr
    assert runs.stdout.splitlines()[2:4] == [
        "NVIDIA H200 · driver 580.159.04 · x86_64 · gpu-a1, gpu-a2",
        "  runs",
    ]
    assert runs.stdout.rstrip().endswith("Verdict: every group runs it (exit 0)")


def test_a_mixed_fleet_gets_the_wheel_that_runs_on_every_group(images, fake_lib, tmp_path):
    """The H200 (driver 580) runs the torch 2.5.1+cu124 image; the RTX 5090 D workstation (driver 570,
    compute capability 12.0) does not. What runs on both, judged on the lowest driver with both GPUs, is a
    torch wheel with sm_90 and sm_120 kernels for CUDA 12.8 (driver 570 runs it): a change to the image."""
    reports = tmp_path / "mixed"
    reports.mkdir()
    (reports / "gpu-a1.json").write_text(run_cli("check", "--snapshot", str(H200), "--format", "json").stdout)
    ws = gpudoctor(fake_lib, SCENARIOS / "rtx5090-driver570.scn", "check", "--format", "json").json()
    ws["host"]["hostname"] = "ws-1"
    (reports / "ws-1.json").write_text(json.dumps(ws))
    r = run_cli("fleet", str(reports), "--image", str(images["docker"]), "--format", "json")
    assert r.returncode == 1, r.stderr
    gate = json.loads(r.stdout)
    assert [(g["gpu"], g["driver"], g["runs"]) for g in gate["groups"]] == [
        ("NVIDIA H200", "580.159.04", True), ("NVIDIA GeForce RTX 5090 D", "570.195.03", False),
    ]  # fmt: skip
    (every,) = gate["every_group"]
    assert (every["machine"], every["driver"], every["gpus"], every["groups"], every["runs"]) == (
        "x86_64", "570.195.03", ["NVIDIA H200", "NVIDIA GeForce RTX 5090 D"], 2, False,
    )  # fmt: skip
    (step,) = [every["plan"]["steps"][n - 1] for n in every["subject_steps"]]
    assert (step["rules"], step["resolver"], step["risk"]) == (["GD-ARCH-001"], "torch", "python-env")
    assert step["argv"][3:] == [
        "install", "torch==2.11.0+cu128", "torchvision==0.26.0+cu128", "torchaudio==2.11.1",
        "--index-url", "https://download.pytorch.org/whl/cu128",
    ]  # fmt: skip
    assert "sm_90 (NVIDIA H200): native kernels (built for 7.5, 8.0, 8.6, 9.0, 10.0, 12.0)" in step["reasons"]
    # The image asking CUDA 13.1 is refused by both drivers: the base that runs on both is the newest CUDA
    # release driver 570 runs (resolvers/base_image.py), 12.8.1; each group's plan has its own.
    r13 = run_cli("fleet", str(reports), "--image", str(images["cuda13"]), "--format", "json")
    assert r13.returncode == 1, r13.stderr
    gate13 = json.loads(r13.stdout)
    bases = [
        [s["text"].split(" base ")[0] for s in g["plan"]["steps"] if s["resolver"] == "base_image"]
        for g in [*gate13["groups"], *gate13["every_group"]]
    ]
    assert bases == [
        ["Rebuild the image on an nvidia/cuda:13.0.2-*"],
        ["Rebuild the image on an nvidia/cuda:12.8.1-*"],
        ["Rebuild the image on an nvidia/cuda:12.8.1-*"],
    ]
    (every13,) = gate13["every_group"]
    assert [every13["plan"]["steps"][n - 1]["resolver"] for n in every13["subject_steps"]] == [
        None,  # the rule's own manual step: an older image, or the driver, or NVIDIA_DISABLE_REQUIRE
        "base_image",
        "torch",  # torch 2.5.1 has no sm_120 kernels either
    ]
    # The text report in full, less its first line (which names the test's temporary image path).
    text = run_cli("fleet", str(reports), "--image", str(images["docker"]))
    assert text.returncode == 1 and text.stdout.startswith("gpudoctor ")
    compare("\n".join(text.stdout.split("\n")[1:]), GOLDEN / "gate-mixed-fleet.txt")
