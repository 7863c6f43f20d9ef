"""Fix plans from findings: resolver steps resolved, installers, conflicts, duplicates and order; and the
535 / H100 / CPU-only torch host end to end (facts -> shipped rules -> plan -> text), without a snapshot."""

from __future__ import annotations

from typing import Any

from gpudoctor.engine.evaluate import evaluate
from gpudoctor.engine.loader import load_rules, parse_rules
from gpudoctor.facts import Facts, known
from gpudoctor.knowledge import knowledge
from gpudoctor.pipeline.result import Result
from gpudoctor.plan import INSTALLER_NOTES, PlanStep, build_plan, package_name
from gpudoctor.report.plan_report import render_text

EXE = "/venv/bin/python"
CU121 = "https://download.pytorch.org/whl/cu121"
TORCH_CU121 = ("torch==2.5.1+cu121", "torchvision==0.20.1+cu121", "torchaudio==2.5.1+cu121")
WHY_FW_001 = "GD-FW-001 (error): torch 2.5.1 in /venv is a CPU-only build, on a host with 1 NVIDIA GPU(s)."


def h100_535(**changes: Any) -> Facts:
    """Driver 535 (CUDA 12.2), one H100, Python 3.11 in /venv managed by pip, CPU-only torch 2.5.1."""
    facts = {
        "driver.version": "535.183.01",
        "driver.max_cuda": "12.2",
        "driver.max_cuda_major": 12,
        "gpus.count": 1,
        "gpus[0].index": 0,
        "gpus[0].name": "NVIDIA H100 80GB HBM3",
        "gpus[0].compute_capability": "9.0",
        "python.executable": EXE,
        "python.version": "3.11.9",
        "python.machine": "x86_64",
        "python.prefix": "/venv",
        "python.installer": "pip",
        "frameworks.count": 1,
        "frameworks[0].name": "torch",
        "frameworks[0].distribution": "torch",
        "frameworks[0].version": "2.5.1",
        "frameworks[0].build": "cpu",
    }
    facts.update(changes)
    return Facts({name: known(value, "test") for name, value in facts.items()})


def plan_for(facts: Facts, user_rules: str = ""):
    rules = load_rules([])
    if user_rules:
        extra, problems = parse_rules(user_rules, "user.yaml")
        assert problems == []
        rules += extra
    result = Result(facts, evaluate(rules, facts), [], "test", "test", 0.0)
    return build_plan(result.findings, facts, knowledge())


def test_535_h100_cpu_torch_end_to_end():
    plan = plan_for(h100_535())
    assert [(s.kind, s.argv, s.risk, s.rules, s.resolver, s.minor_compat) for s in plan.steps] == [
        (
            "pip",
            (EXE, "-m", "pip", "install", *TORCH_CU121, "--index-url", CU121),
            "python-env",
            ("GD-FW-001",),
            "torch",
            False,
        ),
    ]
    assert plan.steps[0].why == (WHY_FW_001,)
    # torch.yaml 2.5 records no install command of PyTorch's (index_pins) for 2.5.1: the note says so.
    assert plan.steps[0].notes == (
        "torchvision 0.20.1 and torchaudio 2.5.1: the releases the default index pairs with torch 2.5.1; "
        "the torch table records no install command of PyTorch's for torch 2.5.1, so that the cu121 index "
        "carries them is not confirmed",
    )
    text = render_text(plan, "test")
    assert (
        f"   {EXE} -m pip install torch==2.5.1+cu121 torchvision==0.20.1+cu121 torchaudio==2.5.1+cu121 "
        f"--index-url {CU121}\n"
    ) in text
    assert "caution" not in text
    assert text.endswith("\n1 step(s): 0 system, 1 python-env, 0 reboot. Nothing has been run.\n")


def test_a_step_relying_on_minor_compat_says_so():
    # torch.yaml 2.9: cu126 (560.28.03) and cu128 (570.26) both need minor-version compatibility on 550;
    # GD-FW-001 (an error) allows it and takes the highest, with a caution.
    plan = plan_for(h100_535(**{"driver.version": "550.127.05", "frameworks[0].version": "2.9.0"}))
    text = render_text(plan, "test")
    assert (
        f"   {EXE} -m pip install torch==2.9.0+cu128 torchvision==0.24.0+cu128 torchaudio==2.9.0+cu128 "
        "--index-url https://download.pytorch.org/whl/cu128\n"
        "   caution: relies on CUDA minor-version compatibility (the driver is older than this CUDA's own\n"
        "            minimum)\n"
    ) in text
    assert plan.steps[0].notes == (
        "no variant of torch 2.9 runs natively on driver 550.127.05: cu128 runs through minor-version "
        "compatibility",
    )


def test_uv_environment_gets_uv_pip_with_the_interpreter():
    step = plan_for(h100_535(**{"python.installer": "uv"})).steps[0]
    assert (step.kind, step.argv) == (
        "uv",
        ("uv", "pip", "install", "--python", EXE, *TORCH_CU121, "--index-url", CU121),
    )
    assert step.command == f"uv pip install --python {EXE} {' '.join(TORCH_CU121)} --index-url {CU121}"


def test_conda_and_poetry_use_pip_inside_the_environment_and_say_so():
    for installer in ("conda", "poetry"):
        step = plan_for(h100_535(**{"python.installer": installer})).steps[0]
        assert step.argv == (EXE, "-m", "pip", "install", *TORCH_CU121, "--index-url", CU121)
        assert step.notes[-1] == INSTALLER_NOTES[installer]


# onnxruntime 1.20.1 exists; onnxruntime-gpu 1.20.1 does not (1.20.0, 1.20.2 do: knowledge/onnxruntime.yaml)
ONNX = {
    "frameworks[0].name": "onnxruntime",
    "frameworks[0].distribution": "onnxruntime",
    "frameworks[0].version": "1.20.1",
}
ORT_GPU = "onnxruntime-gpu==1.20.2"
LITERAL = (
    '      - {kind: pip, argv: ["{python.executable}", -m, pip, uninstall, -y, numpy]}\n'
    '      - {kind: pip, argv: ["{python.executable}", -m, pip, install, "numpy==1.26.4"]}'
)


def test_literal_pip_steps_are_written_for_uv():
    plan = plan_for(h100_535(**{"python.installer": "uv"}), user_rule("USR-A-001", "error", LITERAL))
    assert [s.argv for s in plan.steps if not s.resolver] == [
        ("uv", "pip", "uninstall", "--python", EXE, "numpy"),
        ("uv", "pip", "install", "--python", EXE, "numpy==1.26.4"),
    ]


def test_literal_pip_steps_stay_as_written_for_pip():
    plan = plan_for(h100_535(), user_rule("USR-A-001", "error", LITERAL))
    assert [(s.kind, s.argv, s.resolver) for s in plan.steps if not s.resolver] == [
        ("pip", (EXE, "-m", "pip", "uninstall", "-y", "numpy"), ""),
        ("pip", (EXE, "-m", "pip", "install", "numpy==1.26.4"), ""),
    ]


def test_cpu_onnxruntime_is_replaced_by_an_onnxruntime_gpu_release_that_exists():
    """Issue 24: the plan pinned onnxruntime-gpu==<the CPU package's version>, a release that may not
    exist (1.20.1), or one built for a CUDA the driver does not run."""
    plan = plan_for(h100_535(**ONNX))
    assert [(s.kind, s.argv, s.resolver) for s in plan.steps] == [
        ("pip", (EXE, "-m", "pip", "uninstall", "-y", "onnxruntime"), "onnxruntime"),
        ("pip", (EXE, "-m", "pip", "install", ORT_GPU), "onnxruntime"),
    ]
    newer = plan_for(h100_535(**{**ONNX, "frameworks[0].version": "1.22.0"}))
    assert newer.steps[-1].argv[-1] == "onnxruntime-gpu[cuda,cudnn]==1.22.0"


USER = """\
rules:
  - id: USR-PIN-001
    title: We pin torch
    severity: {severity}
    category: frameworks
    when: {{fact: gpus.count, gt: 0}}
    message: "{message}"
    why: w
    fix:
{steps}
"""


def user_rule(rid: str, severity: str, steps: str, message: str = "m") -> str:
    return USER.replace("USR-PIN-001", rid).format(severity=severity, steps=steps, message=message)


def test_conflicting_torch_pins_become_one_and_the_plan_says_why():
    pin = '      - {kind: pip, argv: ["{python.executable}", -m, pip, install, "torch==2.4.0", numpy]}'
    plan = plan_for(h100_535(), user_rule("USR-PIN-001", "error", pin))
    assert [s.rules for s in plan.steps] == [("GD-FW-001",)]
    assert plan.notes == (
        "torch: USR-PIN-001 wanted torch==2.4.0, GD-FW-001 wanted torch==2.5.1+cu121; kept "
        "torch==2.5.1+cu121 "
        f"(it was computed from the knowledge tables for this host) and left out `{EXE} -m pip install "
        "torch==2.4.0 numpy`",
    )


def test_between_literal_pins_the_more_severe_finding_wins():
    rules = "\n".join(
        user_rule(
            rid, sev, f'      - {{kind: pip, argv: ["{{python.executable}}", -m, pip, install, "{pin}"]}}'
        )
        for rid, sev, pin in (
            ("USR-A-001", "warning", "numpy==2.0.0"),
            ("USR-B-001", "error", "numpy==1.26.4"),
        )
    ).replace("\nrules:\n", "\n")
    plan = plan_for(h100_535(**ONNX), rules)
    installs = [s.argv[4:] for s in plan.steps if s.argv[3:4] == ("install",)]
    assert installs == [("numpy==1.26.4",), (ORT_GPU,)]
    assert plan.notes == (
        "numpy: USR-A-001 wanted numpy==2.0.0, USR-B-001 wanted numpy==1.26.4; kept numpy==1.26.4 "
        f"(its finding is more severe) and left out `{EXE} -m pip install numpy==2.0.0`",
    )


def test_the_same_command_from_two_findings_is_one_step():
    step = "      - {kind: command, argv: [nvidia-smi, -q], text: Look.}"
    rules = (
        user_rule("USR-A-001", "warning", step, "a") + user_rule("USR-B-001", "info", step, "b")
    ).replace("\nrules:\n", "\n")
    plan = plan_for(h100_535(**ONNX), rules)
    looks = [s for s in plan.steps if s.argv == ("nvidia-smi", "-q")]
    assert [(s.rules, s.why) for s in looks] == [
        (("USR-A-001", "USR-B-001"), ("USR-A-001 (warning): a", "USR-B-001 (info): b"))
    ]


def test_system_changes_first_python_environment_next_reboot_last():
    steps = (
        '      - {kind: pip, argv: ["{python.executable}", -m, pip, install, "numpy==1.26.4"]}\n'
        "      - {kind: reboot, argv: [sudo, reboot]}\n"
        "      - {kind: manual, text: Reseat the GPU.}\n"
        "      - {kind: env, text: Unset LD_LIBRARY_PATH.}"
    )
    plan = plan_for(h100_535(**ONNX), user_rule("USR-A-001", "error", steps))
    assert [(s.kind, s.risk, s.argv[-1:] or s.text) for s in plan.steps] == [
        ("manual", "system", "Reseat the GPU."),
        ("env", "system", "Unset LD_LIBRARY_PATH."),
        ("pip", "python-env", ("numpy==1.26.4",)),
        ("pip", "python-env", ("onnxruntime",)),
        ("pip", "python-env", (ORT_GPU,)),
        ("reboot", "reboot", ("reboot",)),
    ]


def test_a_driver_too_old_for_any_wheel_plans_the_driver_then_a_reboot():
    facts = h100_535(
        **{
            "driver.version": "418.226.00",
            "driver.max_cuda": "10.1",
            "driver.max_cuda_major": 10,
            "frameworks[0].version": "2.9.0",
            "frameworks[0].build": "cuda",
            "frameworks[0].cuda": "12.8",
            "frameworks[0].cuda_major": 12,
        }
    )
    plan = plan_for(facts)
    assert [(s.kind, s.risk, s.rules, s.argv) for s in plan.steps] == [
        ("driver", "system", ("GD-CUDA-001",), ()),
        ("manual", "python-env", ("GD-CUDA-001",), ()),
        ("reboot", "reboot", ("GD-CUDA-001",), ("sudo", "reboot")),
    ]
    # cuda_drivers.yaml 12.8 update 0: 570.26; branches: R570 is PB, R580 the first LTSB from there.
    assert plan.steps[0].text.startswith(
        "Upgrade the NVIDIA driver (now 418.226.00) to 570.26 or newer from branch R580 (LTSB, supported "
        "until 2028-06), for CUDA 12.8."
    )
    assert plan.steps[1].text == (
        "torch: no torch wheel in the table runs on driver 418.226.00 with these GPUs and Python 3.11. "
        "Install a torch build for CUDA 10.x, or upgrade the driver to a branch that supports CUDA 12.8."
    )


def test_minor_compat_finding_is_fixed_without_minor_compat():
    # GD-CUDA-002 (torch 2.8.0+cu129 on a CUDA 12.8 driver) uses the framework resolver with
    # minor_compat: avoid; torch.yaml 2.8 cu128 needs 570.26 (cuda_drivers.yaml 12.8 update 0).
    facts = h100_535(
        **{
            "driver.version": "570.172.08",
            "driver.max_cuda": "12.8",
            "frameworks[0].version": "2.8.0",
            "frameworks[0].build": "cuda",
            "frameworks[0].cuda": "12.9",
            "frameworks[0].cuda_major": 12,
        }
    )
    plan = plan_for(facts)
    assert [(s.rules, s.argv[4:], s.minor_compat) for s in plan.steps] == [
        (
            ("GD-CUDA-002",),
            (
                "torch==2.8.0+cu128",
                "torchvision==0.23.0+cu128",
                "torchaudio==2.8.0+cu128",
                "--index-url",
                "https://download.pytorch.org/whl/cu128",
            ),
            False,
        ),
    ]


def test_an_unusable_interpreter_path_gives_a_manual_step():
    plan = plan_for(h100_535(**{"python.executable": "/my venv/bin/python"}))
    assert [(s.kind, s.argv) for s in plan.steps] == [("manual", ())]
    assert plan.steps[0].text == (
        f"Install {' '.join(TORCH_CU121)} from {CU121} into the target environment (the interpreter path "
        "'/my venv/bin/python' is not a plain token)."
    )


def test_findings_without_fix_steps_are_named():
    plan = plan_for(
        h100_535(**ONNX), user_rule("USR-INFO-001", "info", "      []").replace("fix:\n      []", "fix: []")
    )
    assert plan.notes == ("no fix steps, so not in the plan: USR-INFO-001 (info)",)


def test_package_names_and_commands():
    assert [
        package_name(r)
        for r in ("torchvision==0.20.1+cu124", "tensorflow[and-cuda]==2.20.0", "Foo_Bar.baz>=1")
    ] == [
        "torchvision",
        "tensorflow",
        "foo-bar-baz",
    ]
    step = PlanStep("pip", ("/p y", "-m", "pip", "install", "jax[cuda13]==0.7.2"), "", "python-env", (), ())
    assert step.command == "'/p y' -m pip install 'jax[cuda13]==0.7.2'"


def test_tensorflow_cpu_is_uninstalled_before_tensorflow_with_cuda():
    tf = {
        "frameworks[0].name": "tensorflow",
        "frameworks[0].distribution": "tensorflow-cpu",
        "frameworks[0].version": "2.20.0",
    }
    plan = plan_for(h100_535(**tf))
    # tensorflow.yaml 2.20: CUDA 12.5 (555.42.02), so driver 535 runs it through minor-version compatibility.
    assert [(s.argv, s.resolver, s.minor_compat) for s in plan.steps] == [
        ((EXE, "-m", "pip", "uninstall", "-y", "tensorflow-cpu"), "tensorflow", False),
        ((EXE, "-m", "pip", "install", "tensorflow[and-cuda]==2.20.0"), "tensorflow", True),
    ]


def test_a_losing_resolver_install_takes_its_uninstall_with_it():
    tf = {
        "frameworks[0].name": "tensorflow",
        "frameworks[0].distribution": "tensorflow-cpu",
        "frameworks[0].version": "2.20.0",
        "frameworks[0].build": "cpu",
    }
    # With minor_compat: avoid on driver 535, tensorflow.yaml 2.15 (CUDA 12.2, 535.54.03) is the newest
    # tested build; GD-FW-002 keeps 2.20. Same severity: the first finding (GD-FW-002) wins.
    step = "      - {kind: pip, resolver: tensorflow, args: {minor_compat: avoid}, text: t}"
    plan = plan_for(h100_535(**tf), user_rule("USR-TF-001", "error", step))
    assert [(s.argv[3:], s.rules) for s in plan.steps] == [
        (("uninstall", "-y", "tensorflow-cpu"), ("GD-FW-002",)),
        (("install", "tensorflow[and-cuda]==2.20.0"), ("GD-FW-002",)),
    ]
    assert plan.notes == (
        "tensorflow: USR-TF-001 wanted tensorflow[and-cuda]==2.15.*, GD-FW-002 wanted "
        "tensorflow[and-cuda]==2.20.0; kept tensorflow[and-cuda]==2.20.0 (it comes first) and left out "
        f"`{EXE} -m pip install 'tensorflow[and-cuda]==2.15.*'`",
    )


def test_an_index_mirror_replaces_the_start_of_the_index_url():
    rules = load_rules([])
    facts = h100_535()
    result = Result(facts, evaluate(rules, facts), [], "test", "test", 0.0)
    mirror = (("https://download.pytorch.org/whl/", "https://mirror.internal:8443/pytorch/"),)
    (step,) = build_plan(result.findings, facts, knowledge(), mirrors=mirror).steps
    assert step.argv == (
        EXE,
        "-m",
        "pip",
        "install",
        *TORCH_CU121,
        "--index-url",
        "https://mirror.internal:8443/pytorch/cu121",
    )
    other = (("https://pypi.example/", "https://mirror.internal/"),)
    (step,) = build_plan(result.findings, facts, knowledge(), mirrors=other).steps
    assert step.argv[-1] == CU121


def test_an_image_the_runtime_refuses_plans_a_base_to_rebuild_on_and_the_driver():
    # GD-CONTAINER-001 on the H200 of /work/shared/fixtures/h200-driver580 (driver 580.159.04, CUDA 13.0)
    # and an image asking cuda>=13.1 (tests/rules/cases/GD-CONTAINER-001.yaml). The image side: cuda_drivers
    # 13.0 update 2 (13.0.2) needs 580.95.05, the newest release within CUDA 13.0. The node side: 13.1
    # update 0 needs 590.44.01; R620 is the first LTSB from 590 on.
    facts = h100_535(
        **{
            "driver.version": "580.159.04",
            "driver.max_cuda": "13.0",
            "driver.max_cuda_major": 13,
            "gpus[0].name": "NVIDIA H200",
            "frameworks.count": 0,
            "container.require_verdict": "unmet",
            "container.require_failed": "NVIDIA_REQUIRE_CUDA=cuda>=13.1",
            "container.require_gpu": "GPU 0 (brand Unknown, arch 9.0)",
            "container.require_error": "requirement error: unsatisfied condition: cuda>=13.1, please update "
            "your driver to a newer version, or use an earlier cuda container",
            "container.require_enforcement": (
                "this container is running, so what started it did not refuse it"
            ),
            "container.require_cuda": "13.1",
        }
    )
    plan = plan_for(facts)
    assert [(s.kind, s.risk, s.rules, s.resolver) for s in plan.steps] == [
        ("manual", "system", ("GD-CONTAINER-001",), ""),
        ("manual", "system", ("GD-CONTAINER-001",), "base_image"),
        ("driver", "system", ("GD-CONTAINER-001",), "driver"),
        ("reboot", "reboot", ("GD-CONTAINER-001",), ""),
    ]
    rebuild, driver = plan.steps[1], plan.steps[2]
    assert rebuild.text == (
        "Rebuild the image on an nvidia/cuda:13.0.2-* base (the flavour and OS it uses now), whose "
        "NVIDIA_REQUIRE_CUDA asks cuda>=13.0; its frameworks and CUDA libraries must then be builds for CUDA "
        "13.0 or older."
    )
    assert rebuild.reasons == (
        "driver 580.159.04 runs CUDA 13.0; the newest toolkit release within it is 13.0.2 (needs driver "
        "580.95.05)",
    )
    assert driver.text.startswith(
        "Upgrade the NVIDIA driver (now 580.159.04) to 590.44.01 or newer from branch R620 (LTSB, supported "
        "until 2029-09), for CUDA 13.1."
    )


def test_a_base_image_step_without_an_answer_says_why():
    # The driver is unknown: the resolver answers no base, and the step says why.
    step = "      - {kind: manual, resolver: base_image, text: 'Or rebuild the image on an older CUDA base.'}"
    user = user_rule("USR-BASE-001", "warning", step)
    facts = Facts(
        {
            "gpus.count": known(1, "test"),
            "gpus[0].name": known("NVIDIA H200", "test"),
            "gpus[0].compute_capability": known("9.0", "test"),
        }
    )
    plan = plan_for(facts, user)
    steps = [s for s in plan.steps if s.rules == ("USR-BASE-001",)]
    assert [(s.kind, s.resolver, s.text) for s in steps] == [
        (
            "manual",
            "base_image",
            "the image's CUDA base: cannot choose its CUDA release: the driver version is unknown (not "
            "collected). Or rebuild the image on an older CUDA base.",
        )
    ]
