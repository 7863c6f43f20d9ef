"""The container probe: runtime detection from the marks each runtime leaves, and the NVIDIA_* variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.probes import container

from conftest import fake_host

RAW = Path(__file__).resolve().parents[1] / "fixtures" / "raw"
H200_ENV = dict(line.split("=", 1) for line in (RAW / "h200-env_nv.txt").read_text().splitlines())
NVIDIA_VARS = (
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DISABLE_REQUIRE",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
)
ROOT = ["bin", "dev", "etc", "home", "opt", "proc", "root", "run", "sys", "tmp", "usr", "var"]
DOCKER_V1_CGROUP = """\
12:pids:/docker/3f2b9a1c0d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a
11:memory:/docker/3f2b9a1c0d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a
1:name=systemd:/docker/3f2b9a1c0d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a
0::/
"""
KUBE_V1_CGROUP = """\
11:memory:/kubepods/burstable/pod5e6f7a8b-1c2d-3e4f-5a6b-7c8d9e0f1a2b/0a1b2c3d4e5f
10:cpu,cpuacct:/kubepods/burstable/pod5e6f7a8b-1c2d-3e4f-5a6b-7c8d9e0f1a2b/0a1b2c3d4e5f
"""


def host(root=(), files=None, env=None, read_errors=None, dirs=None):
    return fake_host(
        files=dict(files or {}),
        read_errors=dict(read_errors or {"/run/.containerenv": "not found"}),
        dirs=dirs if dirs is not None else {"/": list(ROOT) + list(root)},
        env=dict(env or {}),
    )


def runtime(h):
    facts = container.probe(h)
    detected, kind = facts["container.detected"], facts["container.runtime"]
    return (detected.value, kind.value, kind.source) if kind.known else ("unknown", kind.unknown, kind.source)


def test_h200_capture():
    # That machine had /.dockerenv, no /run/.containerenv, and the variables of NVIDIA's CUDA images.
    # Its /proc/1/cgroup was not captured; in a cgroup namespace under cgroup v2 it reads 0::/.
    h = host(
        root=[".dockerenv"],
        files={"/proc/1/cgroup": "0::/\n"},
        env={
            k: H200_ENV.get(k) for k in ("KUBERNETES_SERVICE_HOST", "container", "CUDA_VERSION") + NVIDIA_VARS
        },
    )
    facts = container.probe(h)
    values = {name: (f.value if f.known else ("unknown", f.unknown)) for name, f in facts.items()}
    assert values == {
        "container.detected": True,
        "container.runtime": "docker",
        "container.nvidia_require_cuda": H200_ENV["NVIDIA_REQUIRE_CUDA"],
        "container.nvidia_requires": [f"NVIDIA_REQUIRE_CUDA={H200_ENV['NVIDIA_REQUIRE_CUDA']}"],
        "container.cuda_version": "13.0.2",
        "container.nvidia_disable_require": ("unknown", "not set"),
        "container.nvidia_visible_devices": "0",
        "container.nvidia_driver_capabilities": "compute,graphics,utility",
        # The capture did not look for the toolkit's configuration (a container would not see it).
        "container.toolkit_mode": ("unknown", "not recorded in snapshot"),
        "container.toolkit_disable_require": ("unknown", "not recorded in snapshot"),
    }
    assert facts["container.nvidia_require_cuda"].value.startswith(
        "cuda>=13.0 brand=unknown,driver>=535,driver<536 "
    )
    assert facts["container.nvidia_require_cuda"].value.endswith(" brand=cloudgaming,driver>=575,driver<576")
    assert facts["container.runtime"].source == "/.dockerenv"
    assert facts["container.nvidia_require_cuda"].source == "env:NVIDIA_REQUIRE_CUDA"


def test_every_fact_is_in_the_schema():
    from gpudoctor.facts import SPECS

    facts = container.probe(host())
    assert set(facts) == {
        n for n, s in SPECS.items() if n.startswith("container.") and "derived:" not in s.doc
    }


def test_bare_host():
    assert runtime(host(files={"/proc/1/cgroup": "0::/init.scope\n"})) == (
        False,
        "none",
        "/, /run/.containerenv, /proc/1/cgroup, env:KUBERNETES_SERVICE_HOST, env:container",
    )


def test_docker_by_cgroup_v1():
    assert runtime(host(files={"/proc/1/cgroup": DOCKER_V1_CGROUP})) == (True, "docker", "/proc/1/cgroup")


def test_docker_systemd_cgroup_driver():
    cgroup = "0::/system.slice/docker-3f2b9a1c0d8e.scope\n"
    assert runtime(host(files={"/proc/1/cgroup": cgroup}))[1] == "docker"


def test_kubernetes_wins_over_docker():
    h = host(
        root=[".dockerenv"],
        files={"/proc/1/cgroup": DOCKER_V1_CGROUP},
        env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
    )
    assert runtime(h) == (True, "kubernetes", "env:KUBERNETES_SERVICE_HOST")


def test_kubernetes_by_cgroup_over_containerd():
    cgroup = "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-0a1b2c.scope\n"
    assert runtime(host(files={"/proc/1/cgroup": cgroup})) == (True, "kubernetes", "/proc/1/cgroup")
    assert runtime(host(files={"/proc/1/cgroup": KUBE_V1_CGROUP}))[1] == "kubernetes"


def test_containerd():
    cgroup = "0::/system.slice/containerd.service/ctr-job\n"
    assert runtime(host(files={"/proc/1/cgroup": cgroup}))[1] == "containerd"


def test_podman_by_containerenv():
    h = host(
        files={"/run/.containerenv": 'engine="podman-4.9.3"\nname="train"\n', "/proc/1/cgroup": "0::/\n"}
    )
    assert runtime(h) == (True, "podman", "/run/.containerenv")


def test_podman_containerenv_root_only():
    h = host(read_errors={"/run/.containerenv": "no permission"}, files={"/proc/1/cgroup": "0::/\n"})
    assert runtime(h)[1] == "podman"


def test_podman_by_systemd_variable():
    assert runtime(host(env={"container": "podman"}, files={"/proc/1/cgroup": "0::/\n"}))[1:] == (
        "podman",
        "env:container",
    )


@pytest.mark.parametrize(("value", "expected"), [("docker", "docker"), ("lxc", "lxc"), ("oci", "oci")])
def test_systemd_container_variable(value, expected):
    assert runtime(host(env={"container": value}, files={"/proc/1/cgroup": "0::/\n"}))[:2] == (True, expected)


def test_lxc_by_cgroup():
    assert runtime(host(files={"/proc/1/cgroup": "0::/lxc.payload.gpu01/init.scope\n"}))[1] == "lxc"


def test_nothing_found_but_signals_unreadable_is_unknown():
    h = host(dirs={"/": {"error": "no permission"}}, files={"/proc/1/cgroup": "0::/\n"})
    assert runtime(h) == ("unknown", "no permission", "/")
    assert container.probe(h)["container.detected"].unknown == "no permission"


def test_unreadable_signal_does_not_hide_a_found_one():
    h = host(
        root=[".dockerenv"], read_errors={"/run/.containerenv": "timed out", "/proc/1/cgroup": "timed out"}
    )
    assert runtime(h) == (True, "docker", "/.dockerenv")


def test_cgroup_not_recorded_makes_none_unknown():
    assert runtime(host()) == ("unknown", "not recorded in snapshot", "/proc/1/cgroup")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (DOCKER_V1_CGROUP, "docker"),
        (KUBE_V1_CGROUP, "kubernetes"),
        ("0::/\n", None),
        ("0::/user.slice/user-1000.slice/session-3.scope\n", None),
        ("", None),
    ],
)
def test_parse_cgroup_runtime(text, expected):
    assert container.parse_cgroup_runtime(text) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("TRUE", True), ("t", True), ("True", True), ("Yes", False), ("tRuE", False)]
    + [(" true", False), ("0", False), ("", False)],
)
def test_nvidia_disable_require_as_go_reads_a_boolean(raw, expected):
    fact = container.probe(host(env={"NVIDIA_DISABLE_REQUIRE": raw}))["container.nvidia_disable_require"]
    assert fact.value is expected
    assert fact.source == "env:NVIDIA_DISABLE_REQUIRE"


def test_nvidia_variables_unset():
    facts = container.probe(host())
    for name in (
        "nvidia_require_cuda",
        "nvidia_disable_require",
        "nvidia_visible_devices",
        "nvidia_driver_capabilities",
    ):
        assert facts[f"container.{name}"].unknown == "not set"


def test_every_nvidia_require_variable_is_read_and_only_those():
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_REQUIRE_ARCH": "arch>=8.0", "NVIDIA_REQUIRES": "x"}
    env |= {"nvidia_require_brand": "brand=tesla", "NVIDIA_VISIBLE_DEVICES": "all"}
    fact = container.probe(host(env=env))["container.nvidia_requires"]
    # NVIDIA_REQUIRES starts with NVIDIA_REQUIRE and not NVIDIA_REQUIRE_; the prefix is case-sensitive.
    assert fact.value == ["NVIDIA_REQUIRE_ARCH=arch>=8.0", "NVIDIA_REQUIRE_CUDA=cuda>=12.4"]
    assert fact.source == "env:NVIDIA_REQUIRE_*"


def test_nvidia_require_variables_not_recorded_are_unknown():
    from gpudoctor.host.snapshot import Recording, SnapshotHost

    facts = container.probe(SnapshotHost(Recording(env={"NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}), source="old"))
    assert facts["container.nvidia_requires"].unknown == "not recorded in snapshot"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[nvidia-container-runtime]\nmode = "legacy"\n', ("legacy", False)),
        ('disable-require = true\n[nvidia-container-runtime]\nlog-level = "info"\n', ("auto", True)),
        ("", ("auto", False)),
        (
            "#accept-nvidia-visible-devices-as-volume-mounts = false\n[nvidia-container-runtime]\n"
            'mode = "cdi"\n',
            ("cdi", False),
        ),
    ],
)
def test_parse_toolkit_config(text, expected):
    assert container.parse_toolkit_config(text) == expected


@pytest.mark.parametrize(
    "text",
    ["[nvidia-container-runtime\n", "[nvidia-container-runtime]\nmode = 3\n", "disable-require = 'x'\n"],
)
def test_parse_toolkit_config_refuses(text):
    with pytest.raises(ValueError):
        container.parse_toolkit_config(text)


def test_toolkit_config_on_the_host():
    files = {container.TOOLKIT_CONFIG: '[nvidia-container-runtime]\nmode = "jit-cdi"\n'}
    facts = container.probe(host(files=files))
    assert facts["container.toolkit_mode"].value == "jit-cdi"
    assert facts["container.toolkit_disable_require"].value is False
    bad = container.probe(host(files={container.TOOLKIT_CONFIG: "mode = = 1"}))
    assert bad["container.toolkit_mode"].unknown.startswith("unreadable: ")
