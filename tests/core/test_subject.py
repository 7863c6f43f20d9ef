"""What a check judges besides the machine: whose each finding is, and the machine an image must match."""

from __future__ import annotations

from gpudoctor.subject import (
    MACHINES,
    OCI_ARCH,
    host_machine,
    host_python,
    kind_of,
    lock_python,
    owns,
    side,
)


def test_a_finding_is_the_images_the_hosts_or_a_mismatch_between_them():
    assert side("image", ["frameworks[].cuda", "python.version"]) == "image"
    assert side("image", ["gpus[].name", "driver.version"]) == "host"
    assert side("image", ["container.require_verdict", "driver.max_cuda"]) == "both"
    assert side("image", ["container.require_verdict"]) == "both"  # the runtime's verdict weighs both
    assert side("image", ["frameworks[0].unsupported_gpu_count"]) == "both"
    assert side("image", ["image.machine", "system.machine"]) == "both"
    assert side("lock", ["frameworks[].cuda_major", "knowledge.torch_min_driver"]) == "lockfile"
    assert side("lock", ["cuda_libs[].path"]) == "host"  # a lockfile installs no system library
    # the C library an image's interpreter links is the image's; with a lockfile, the node's
    assert side("image", ["system.glibc", "frameworks[].version"]) == "image"
    assert side("image", ["system.glibc", "driver.version"]) == "both"
    assert side("lock", ["system.glibc", "frameworks[].version"]) == "both"


def test_the_subject_owns_its_sections_but_the_nodes_toolkit_and_an_image_its_c_library():
    assert owns("image", "cuda_libs[0].path") and owns("lock", "frameworks[1].version")
    assert not owns("lock", "cuda_libs[0].path") and not owns("image", "driver.version")
    # how the node's container toolkit is set up stays the node's, though `container` is the image's section
    assert owns("image", "container.nvidia_require_cuda") and not owns("image", "container.toolkit_mode")
    assert side("image", ["container.toolkit_mode"]) == "host"
    assert owns("image", "system.glibc") and not owns("lock", "system.glibc")
    assert not owns("image", "system.machine")


def test_image_architectures_map_to_the_kernels_names_both_ways():
    # as Go names them (GOARCH, the OCI config's `architecture`) and as `uname -m` does
    assert MACHINES["amd64"] == "x86_64" and MACHINES["arm64"] == "aarch64"
    assert OCI_ARCH["x86_64"] == "amd64" and OCI_ARCH["aarch64"] == "arm64"


def test_the_hosts_machine_is_read_from_its_kernel(h200_host):
    assert host_machine(h200_host) == h200_host.read("/proc/sys/kernel/arch").strip() == "x86_64"


def test_a_results_subject_is_what_chose_its_environment():
    assert (kind_of("--image"), kind_of("--lock"), kind_of("--python"), kind_of("")) == (
        "image",
        "lock",
        "",
        "",
    )


def test_a_finding_is_placed_by_its_evidence():
    from types import SimpleNamespace

    from gpudoctor.subject import finding_side

    f = SimpleNamespace(evidence=(("image.machine", "aarch64"), ("system.machine", "x86_64")))
    assert (finding_side("image", f), finding_side("", f)) == ("both", "")


def test_a_lock_is_judged_for_the_python_it_pins_else_the_hosts_where_admitted():
    # requires-python as the real locks in tests/lockfile/data give it: uv.lock's ">=3.9" (tgi-2025-09),
    # a conda lock's own python pin (clay-conda-lock.yml: python 3.11.9)
    assert lock_python(">=3.9", "3.12.3") == ("3.12.3", "")
    assert lock_python("==3.11.9", "3.12.3") == ("3.11.9", "")
    assert lock_python("==3.11.9", "") == ("3.11.9", "")
    assert lock_python(">=3.9,<3.12", "3.12.3") == (
        "",
        "the lock's requires-python >=3.9,<3.12 does not admit the host's 3.12.3",
    )
    assert lock_python(">=3.9", "") == ("", "the host's Python version is unknown")
    assert lock_python("", "3.10.14") == ("3.10.14", "")
    assert lock_python("=>3.9", "3.12.3") == (
        "",
        "the lock's requires-python '=>3.9' is not a version specifier",
    )


def test_the_hosts_python_is_its_interpreters(h200_host):
    # as captured: shared/fixtures/h200-driver580/commands/which_python.txt
    assert host_python(h200_host) == "3.12.3"
